"""Slow-start batches: many writes without flooding the API server when they all fail.

Creating the 200 pods of a large job one by one is slow; creating them all at once turns a
systemic error (a quota, an admission webhook down, a bad template) into 200 failed requests and
200 events. :func:`slow_start` runs the writes in batches of 1, 2, 4, 8... (the Kubernetes Job
controller's ``slowStartBatch``), each batch concurrently in a task group, and stops at the first
batch that had a failure: the rest is retried by the next reconcile, with backoff.

The write function reports its own failure by returning the error (it must not raise): a failure
of one write never cancels its siblings half-way. Once the controller running the reconcile begins
to stop (:func:`~etctl.runtime.stop_requested`), no further batch starts (logged: which writes,
how many were left): a burst of hundreds of creates never holds a shutdown for its grace period,
and the next reconcile creates the rest. The caller records only what the writes that ran made:
nothing that was not written is taken as done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from etctl.errors import EtctlError
from etctl.log import get_logger
from etctl.runtime import stop_requested

__all__ = ["slow_start"]

log = get_logger(__name__)

T = TypeVar("T")


async def slow_start(
    items: Sequence[T],
    write: Callable[[T], Coroutine[Any, Any, EtctlError | None]],
    *,
    name: str,
    initial: int = 1,
) -> list[EtctlError]:
    """Run ``write`` over ``items`` in doubling batches; the errors of the batch that stopped.

    Writes stop early, with no error, when the controller stops (see the module docstring).

    Args:
        items: what to write, in order.
        write: writes one item; returns its error, or None on success.
        name: names the tasks (``<name>-<index>``).
        initial: the size of the first batch.
    """
    size = max(initial, 1)
    start = 0
    while start < len(items):
        if stop_requested():
            log.info(
                "stopping: writes not started are left to the next reconcile",
                writes=name,
                done=start,
                not_started=len(items) - start,
            )
            break
        batch = items[start : start + size]
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(write(item), name=f"{name}-{start + offset}")
                for offset, item in enumerate(batch)
            ]
        errors = [err for err in (task.result() for task in tasks) if err is not None]
        if errors:
            return errors
        start += len(batch)
        size *= 2
    return []
