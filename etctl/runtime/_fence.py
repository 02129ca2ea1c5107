"""Fencing: leader-only work stops writing the moment this process may no longer lead.

A leader cannot know when another candidate takes its Lease over; it only knows that none can
before ``lease_duration`` after its last successful renew was *sent*. The
:class:`~etctl.runtime._leader.LeaderElector` therefore gives leadership up ``renew_deadline``
after that send time. Noticing it takes the elector's loop a turn, though, and a process that was
paused (SIGSTOP, a frozen VM, a stalled node) resumes with every timer due at once: reconciles
woken on resume could run, and write, before that turn comes. The fence closes the gap where it
matters, at the moment of acting:

* every write verb of the client (POST, PUT, PATCH, DELETE) and every exec, on each attempt, calls
  :func:`check_fence`, which raises :class:`~etctl.errors.Fenced` once the fence of the task it
  runs in has lapsed, *before* anything is sent: when the request is built, and again when it is
  written to its connection, after any wait for a free connection or a new one (a pause there
  would otherwise let a request checked before it out after it); a controller checks it before
  each reconcile too;
* the fence is a context variable: the manager starts every leader-only task under the elector's
  fence (:func:`fenced_context`), and every task such a task starts (controller workers, their
  reconciles, what those spawn) inherits it. The elector's own Lease requests and work that does
  not need leadership run outside it and are never fenced;
* an Event recorded by fenced work keeps that work's fence: the recorder drops it, unsent, once
  the fence has lapsed (:func:`under_fence` applies it to the send).

What is left: nothing is awaited between the last check and the write to the socket, so only a
pause that falls inside those few statements lets a request out after the deadline. The
``lease_duration - renew_deadline`` margin (5 s by default) is what covers it: the fence lapses
that long before anyone else may lead. Only the API server could close it completely.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from etctl.errors import Fenced

__all__ = ["Fence", "check_fence", "current_fence", "fenced_context", "under_fence"]


class Fence(Protocol):
    """What leader-only work checks before it acts (a :class:`LeaderElector` is one)."""

    def lapsed(self) -> str | None:
        """Why leader-only work must not act any more, or None while it may."""
        ...


_CURRENT: contextvars.ContextVar[Fence | None] = contextvars.ContextVar("etctl_fence", default=None)


def current_fence() -> Fence | None:
    """The fence of the running task (None: work that needs no leadership)."""
    return _CURRENT.get()


def check_fence(what: str) -> None:
    """Refuse ``what`` when the running task's fence has lapsed.

    Raises:
        Fenced: the fence lapsed; ``what`` must not be sent.
    """
    fence = _CURRENT.get()
    if fence is None:
        return
    reason = fence.lapsed()
    if reason is not None:
        msg = f"{what} refused: {reason}"
        raise Fenced(msg)


def fenced_context(fence: Fence) -> contextvars.Context:
    """A copy of the current context with ``fence`` set: start leader-only tasks in it."""
    context = contextvars.copy_context()
    context.run(_CURRENT.set, fence)
    return context


@contextmanager
def under_fence(fence: Fence | None) -> Iterator[None]:
    """Run the block under ``fence`` (work recorded under a fence and carried out later)."""
    token = _CURRENT.set(fence)
    try:
        yield
    finally:
        _CURRENT.reset(token)
