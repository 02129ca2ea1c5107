"""Task helpers of the manager and the leader elector: bounded waits and stops on a Clock.

asyncio's own timeouts only know the event loop's clock; these run their deadlines on an injected
:class:`~etctl.runtime.Clock`, so tests drive them with a ``FakeClock``. Invariants:

* :func:`run_with_timeout` never leaves its work running: on timeout the work is cancelled and
  awaited before :class:`WorkTimedOut` is raised, and the work's own exception comes back as itself
  (never wrapped in an ``ExceptionGroup``), so a ``TimeoutError`` of the work's own is told apart
  from the deadline;
* :func:`wait_tasks` only waits, it never cancels;
* :func:`wait_first` and :func:`unless` race work against an event and leave nothing running;
* :func:`guarded` never lets a task's exception escape into its task group (which would cancel
  the siblings in no particular order and surface an ``ExceptionGroup``): it logs the failure and
  hands it to the owner, who decides how to stop;
* :func:`stop_now` returns only once every task has ended: it cancels, and cancels again whatever
  is still waiting in its cleanup (a controller draining its reconciles, say), because a task that
  was asked to stop *now* must not spend a grace period first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

from etctl.log import get_logger
from etctl.runtime._clock import Clock, timer

__all__ = [
    "WorkTimedOut",
    "guarded",
    "run_with_timeout",
    "stop_now",
    "unless",
    "wait_first",
    "wait_tasks",
]

log = get_logger(__name__)

T = TypeVar("T")

# How long, in loop time, a task asked to stop now may sit in one cleanup wait before it is
# cancelled again. Short: it only bounds how long a cleanup wait can delay a hard stop.
_RECANCEL_SECONDS = 0.005


class WorkTimedOut(TimeoutError):
    """:func:`run_with_timeout`'s deadline passed: the work was cancelled and has ended."""


async def run_with_timeout(
    clock: Clock, timeout: float, work: Callable[[], Awaitable[T]], *, name: str
) -> T:
    """Await ``work()``, cancelling it if ``timeout`` seconds of ``clock`` time pass first.

    ``work`` is called inside the task that awaits it, so nothing is left un-awaited when the caller
    is cancelled before the work started.

    Raises:
        WorkTimedOut: the timeout passed first (the work has been cancelled and has ended).
        Exception: whatever ``work`` raised.
    """

    async def capture() -> tuple[T | None, Exception | None]:
        try:
            return await work(), None
        except Exception as err:  # noqa: BLE001 - handed back to the caller below
            return None, err

    async with asyncio.TaskGroup() as group:
        task = group.create_task(capture(), name=name)
        expiry = group.create_task(timer(clock, max(timeout, 0.0)), name=f"{name}:timeout")
        await asyncio.wait((task, expiry), return_when=asyncio.FIRST_COMPLETED)
        timed_out = not task.done()
        task.cancel()
        expiry.cancel()
    if timed_out:
        msg = f"{name}: no answer within {timeout:g}s"
        raise WorkTimedOut(msg)
    value, error = task.result()
    if error is not None:
        raise error
    return value  # type: ignore[return-value]  # no error: the work returned a T


async def wait_tasks(clock: Clock, tasks: Collection[asyncio.Task[Any]], timeout: float) -> bool:
    """Wait until every task has ended or ``timeout`` seconds of ``clock`` time passed.

    Returns:
        True when every task has ended.
    """
    pending = {task for task in tasks if not task.done()}
    if not pending:
        return True
    if timeout <= 0:
        return False
    async with asyncio.TaskGroup() as group:
        expiry = group.create_task(timer(clock, timeout), name="wait-tasks-timeout")
        waiter = group.create_task(asyncio.wait(pending), name="wait-tasks")
        await asyncio.wait((expiry, waiter), return_when=asyncio.FIRST_COMPLETED)
        expiry.cancel()
        waiter.cancel()
    return all(task.done() for task in tasks)


async def stop_now(tasks: Collection[asyncio.Task[Any]]) -> None:
    """Cancel every task and wait until each has ended, cancelling again while they clean up."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=_RECANCEL_SECONDS)


async def wait_first(task: asyncio.Task[Any], event: asyncio.Event) -> None:
    """Wait until ``task`` ended or ``event`` is set."""
    if task.done() or event.is_set():
        return
    async with asyncio.TaskGroup() as group:
        waiter = group.create_task(event.wait(), name="wait-first")
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()


async def unless(work: Callable[[], Awaitable[bool]], event: asyncio.Event) -> bool:
    """``await work()``, unless ``event`` is (or gets) set first: False then."""
    if event.is_set():
        return False

    async def outcome() -> bool:
        return await work()

    async with asyncio.TaskGroup() as group:
        task = group.create_task(outcome(), name="unless-work")
        waiter = group.create_task(event.wait(), name="unless-event")
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
        task.cancel()
        waiter.cancel()
    return not task.cancelled() and task.result()


async def guarded(
    name: str,
    fn: Callable[[], Awaitable[None]],
    *,
    on_failure: Callable[[Exception], None],
    finishable: bool = True,
    quiet: Collection[type[Exception]] = (),
) -> None:
    """Run ``fn()`` as the body of the task ``name``, reporting how it ended.

    Args:
        name: what the task is, for the logs.
        fn: the work.
        on_failure: called with the exception ``fn`` raised (never raised from here).
        finishable: whether returning is normal (logged at info) or unexpected (a warning).
        quiet: exception types that are expected outcomes, passed on without a traceback.
    """
    try:
        await fn()
    except asyncio.CancelledError:
        log.debug("task cancelled", task=name)
        raise
    except Exception as err:  # handed to the owner, which stops and re-raises it
        if not isinstance(err, tuple(quiet)):
            log.exception("task failed", task=name)
        on_failure(err)
    else:
        if finishable:
            log.info("task finished", task=name)
        else:
            log.warning("task ended unexpectedly", task=name)
