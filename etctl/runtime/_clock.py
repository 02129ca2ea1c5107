"""Time, injectable: a real clock for production and a virtual one for tests.

Every etctl component that waits (workqueue delays, rate limiters, reflector backoff, leader
election,
requeue timers, the simulated kubelet) takes a :class:`Clock` and never calls ``time`` or
``asyncio.sleep`` itself. Tests pass a :class:`FakeClock` and move time with
:meth:`FakeClock.advance`, so a 1000-second backoff takes no wall time and no test waits for luck.

Invariants of :class:`FakeClock`:

* time only moves inside :meth:`~FakeClock.advance`, never by itself;
* sleepers wake in deadline order (ties in the order they started sleeping), and the clock reads
  exactly each sleeper's deadline when it wakes;
* a sleeper woken by ``advance`` runs (up to its next suspension on the clock or an idle queue)
  before ``advance`` moves on, so sleeps started by woken tasks that fall inside the window also
  fire;
* :meth:`~FakeClock.jump` is the exception, on purpose: it models a paused process (SIGSTOP, then
  SIGCONT), whose overdue timers all fire at once, late.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "RealClock", "timer", "wait_event"]


@runtime_checkable
class Clock(Protocol):
    """A source of time and of sleeping."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for deadlines and durations)."""
        ...

    def now(self) -> datetime:
        """The current wall-clock time, timezone-aware UTC (for timestamps written to objects)."""
        ...

    async def sleep(self, delay: float) -> None:
        """Suspend for ``delay`` seconds of this clock's time (``<= 0`` yields once)."""
        ...


class RealClock:
    """The process clock: :func:`time.monotonic`, UTC wall time and :func:`asyncio.sleep`."""

    def monotonic(self) -> float:
        """Seconds from :func:`time.monotonic`."""
        return time.monotonic()

    def now(self) -> datetime:
        """Aware UTC wall time."""
        return datetime.now(UTC)

    async def sleep(self, delay: float) -> None:
        """Sleep on the event loop."""
        await asyncio.sleep(max(delay, 0.0))


class FakeClock:
    """Virtual time for tests: nothing moves until :meth:`advance` is awaited.

    Args:
        start: the wall-clock time that monotonic zero corresponds to.
        settle_rounds: how many times ``advance`` yields to the event loop after waking a sleeper,
            so that the woken task (and what it wakes in turn) runs before time moves on.
    """

    def __init__(
        self,
        start: datetime = datetime(2026, 1, 1, tzinfo=UTC),
        *,
        settle_rounds: int = 20,
    ) -> None:
        self._start = start
        self._now = 0.0
        self._settle_rounds = settle_rounds
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    def monotonic(self) -> float:
        """The virtual monotonic time."""
        return self._now

    def now(self) -> datetime:
        """The virtual wall time: ``start`` plus the monotonic time."""
        return self._start + timedelta(seconds=self._now)

    async def sleep(self, delay: float) -> None:
        """Wait until ``advance`` moves the clock past ``now + delay``."""
        if delay <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + delay, next(self._seq), future))
        await future  # cancellation leaves a done future in the heap; advance skips it

    @property
    def sleepers(self) -> int:
        """How many tasks are sleeping on this clock right now."""
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    def next_deadline(self) -> float | None:
        """The earliest pending wake-up time, or None when nobody sleeps."""
        for deadline, _, fut in sorted(self._sleepers):
            if not fut.done():
                return deadline
        return None

    async def settle(self) -> None:
        """Let ready tasks run: yield to the event loop ``settle_rounds`` times."""
        for _ in range(self._settle_rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking every sleeper whose deadline falls inside."""
        if seconds < 0:
            msg = "a clock cannot go backwards"
            raise ValueError(msg)
        target = self._now + seconds
        await self.settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            if future.done():
                continue
            self._now = max(self._now, deadline)
            future.set_result(None)
            await self.settle()
        self._now = max(self._now, target)  # a jump() made while settling is kept
        await self.settle()

    def jump(self, seconds: float) -> None:
        """Move time forward at once, as a process stopped that long finds it when it resumes.

        Unlike :meth:`advance`, nothing runs while time moves: every sleeper whose deadline fell
        inside is woken together (their tasks run, in deadline order, once the caller yields) and
        reads the new time, not its own deadline, as the timers of a process resumed after
        SIGSTOP all fire late at once. Synchronous, so a test can call it at an exact point of the
        code under test (right after an answer arrived, say).
        """
        if seconds < 0:
            msg = "a clock cannot go backwards"
            raise ValueError(msg)
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)


async def _sleep_until(clock: Clock, deadline: float) -> None:
    await clock.sleep(deadline - clock.monotonic())


def timer(clock: Clock, delay: float) -> Coroutine[Any, Any, None]:
    """A sleep that ends ``delay`` seconds after this call, however late its task starts.

    A task created to sleep starts at the loop's next turn; computing its deadline then would let
    time that passed in between (a FakeClock advanced meanwhile) push the deadline back, so a
    timeout could fire late or, in a test, never.
    """
    return _sleep_until(clock, clock.monotonic() + delay)


async def wait_event(clock: Clock, event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds of ``clock`` time pass.

    Returns:
        True if the event was set, False on timeout.
    """
    if event.is_set():
        return True
    if timeout is None:
        await event.wait()
        return True
    if timeout <= 0:
        return False
    async with asyncio.TaskGroup() as group:
        waiter = group.create_task(event.wait(), name="wait-event")
        sleeper = group.create_task(timer(clock, timeout), name="wait-event-timeout")
        done, _ = await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        for task in (waiter, sleeper):
            if task not in done:
                task.cancel()
    return event.is_set()
