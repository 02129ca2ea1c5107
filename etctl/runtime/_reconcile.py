"""The reconcile contract: a :class:`Request` in, a :class:`Result` out.

A reconciler is level-based: it receives only the key of an object (never the event that caused the
call), reads the current state of the world and makes it match the desired state. It may be called
any number of times for the same key, but never concurrently for the same key (the workqueue
guarantees it).

What the controller does with the outcome, as controller-runtime does:

* raising :class:`etctl.errors.TerminalError`: logged and counted, never retried;
* raising anything else: logged, counted and retried with the rate limiter's backoff;
* returning ``Result(requeue_after=s)`` with ``s > 0``: the backoff is reset and the key comes back
  after ``s`` seconds;
* returning ``Result()``: success; the backoff is reset.

There is deliberately no ``requeue`` flag (controller-runtime deprecated theirs): return a delay, or
raise.

A reconcile that runs long (hundreds of writes) may ask :func:`stop_requested` between steps: once
its controller has begun to stop, it should end early rather than hold the shutdown for its whole
grace period. Ending early loses nothing: the next controller to run reads the world again and
carries on (controller-runtime gets the same effect by cancelling the reconcile's context). From
then on it starts no new act and records no new decision; an act under way is completed with its
record, so the two are written together or not at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from etctl.runtime._objects import ObjectView, split_key
from etctl.runtime._objects import name as object_name
from etctl.runtime._objects import namespace as object_namespace

__all__ = ["ReconcileFunc", "Reconciler", "Request", "Result", "stop_requested"]

# The stop signal of the controller whose worker runs the current task; tasks a reconcile starts
# inherit it with the rest of their context.
STOPPING: ContextVar[asyncio.Event | None] = ContextVar("etctl_reconcile_stopping", default=None)


def stop_requested() -> bool:
    """True when the controller running this reconcile has begun to stop.

    False outside a reconcile. A long reconcile checks it between steps and returns early (any
    result: the controller no longer requeues); the work resumes when a controller next runs.
    """
    stopping = STOPPING.get()
    return stopping is not None and stopping.is_set()


@dataclass(frozen=True, slots=True)
class Request:
    """The key of the object to reconcile.

    Attributes:
        namespace: the object's namespace, ``""`` for cluster-scoped objects.
        name: the object's name.
    """

    namespace: str
    name: str

    def __str__(self) -> str:
        """``namespace/name``, or ``name`` for a cluster-scoped object (the cache key)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: ObjectView) -> Request:
        """The request that reconciles ``obj`` itself."""
        return cls(object_namespace(obj), object_name(obj))

    @classmethod
    def from_key(cls, key: str) -> Request:
        """Parse a cache key (``namespace/name`` or ``name``)."""
        return cls(*split_key(key))


@dataclass(frozen=True, slots=True)
class Result:
    """What a successful reconcile asks for.

    Attributes:
        requeue_after: reconcile the same key again after this many seconds (for timers such as a
            TTL or a deadline); ``None`` or ``<= 0`` means no requeue.
    """

    requeue_after: float | None = None


@runtime_checkable
class Reconciler(Protocol):
    """Makes the world match the desired state of the object a request names."""

    async def reconcile(self, request: Request) -> Result:
        """Reconcile one key; raise to retry with backoff, ``TerminalError`` to give up."""
        ...


class ReconcileFunc:
    """Adapts a plain ``async def f(request) -> Result`` to the :class:`Reconciler` protocol.

    Args:
        fn: the reconcile function.
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[Request], Awaitable[Result]]) -> None:
        self._fn = fn

    async def reconcile(self, request: Request) -> Result:
        """Call the wrapped function."""
        return await self._fn(request)

    def __repr__(self) -> str:
        return f"ReconcileFunc({getattr(self._fn, '__qualname__', self._fn)!r})"
