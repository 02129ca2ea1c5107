"""Waiting for a condition: the one bounded wait of a test that runs real HTTP.

An operator under test reacts to a change in its own time: a watch event travels, a reconcile
runs, a write comes back. A test never sleeps hoping that happened; it waits for the *state* it
expects, in bounded real time, with :func:`eventually`. The bound only matters when the state is
never reached: it turns a hang into a failure that says what was awaited and what was seen last.

The condition is read as often as the event loop allows (a short sleep between reads, so the
server and the operator, on the same loop, make progress), may be a plain function or a coroutine
function, and its truthy value is returned, so a test can wait for an object and use it::

    job = await eventually(lambda: cluster.job("mnist"), what="the job stored")
    await eventually(lambda: phase(job) == "Running", timeout=20)

A condition that raises an ``AssertionError`` or a ``LookupError`` (``KeyError``,
``IndexError``) reads as not yet true: the error is reported if the bound passes. Other errors
fail the wait at once (a typo in a condition must not look like a slow operator).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

__all__ = ["eventually"]

T = TypeVar("T")

_INTERVAL = 0.002
"""Seconds between two reads of the condition (real time)."""


@overload
async def eventually(
    condition: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,
    what: str = ...,
    interval: float = ...,
) -> T: ...


@overload
async def eventually(
    condition: Callable[[], T],
    *,
    timeout: float = ...,
    what: str = ...,
    interval: float = ...,
) -> T: ...


async def eventually(
    condition: Callable[[], object],
    *,
    timeout: float = 10.0,
    what: str = "",
    interval: float = _INTERVAL,
) -> object:
    """Wait, at most ``timeout`` real seconds, until ``condition()`` is truthy; return its value.

    Args:
        condition: what to read; a function or a coroutine function.
        timeout: the bound, in real seconds.
        what: the state awaited, in words, for the failure message.
        interval: real seconds between two reads.

    Raises:
        AssertionError: the bound passed; the message names ``what`` and the last value (or the
            last ``AssertionError``/``LookupError`` the condition raised).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        seen: object
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
        except (AssertionError, LookupError) as exc:
            seen = f"{type(exc).__name__}: {exc}"
        else:
            if value:
                return value
            seen = value
        if loop.time() >= deadline:
            awaited = what or "condition"
            msg = f"{awaited} not reached within {timeout:g} s; last seen: {seen!r}"
            raise AssertionError(msg)
        await asyncio.sleep(interval)
