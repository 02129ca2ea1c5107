"""Bounded waits and stops on a virtual clock."""

from __future__ import annotations

import asyncio

import pytest

from etctl.runtime import FakeClock
from etctl.runtime._tasks import (
    guarded,
    run_with_timeout,
    stop_now,
    unless,
    wait_first,
    wait_tasks,
)
from etctl.testing import eventually


async def test_run_with_timeout_returns_raises_or_cancels() -> None:
    clock = FakeClock()

    async def answer() -> int:
        await clock.sleep(1.0)
        return 42

    async def broken() -> int:
        msg = "broken"
        raise KeyError(msg)

    async with asyncio.TaskGroup() as group:
        quick = group.create_task(run_with_timeout(clock, 2.0, answer, name="quick"))
        await clock.advance(1.0)
    assert quick.result() == 42

    with pytest.raises(KeyError, match="broken"):  # the work's own error, never a group
        await run_with_timeout(clock, 2.0, broken, name="broken")

    cancelled: list[float] = []

    async def hang() -> int:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            cancelled.append(clock.monotonic())
        return 0

    async def attempt() -> str:
        with pytest.raises(TimeoutError) as raised:
            await run_with_timeout(clock, 3.0, hang, name="slow")
        return str(raised.value)

    async with asyncio.TaskGroup() as group:
        slow = group.create_task(attempt())
        await clock.advance(2.9)
        assert not slow.done()
        await clock.advance(0.1)
        await eventually(slow.done)
    assert slow.result() == "slow: no answer within 3s"
    assert cancelled == [4.0]  # the hanging work was cancelled, and had ended


async def test_wait_tasks_waits_on_the_clock_without_cancelling() -> None:
    clock = FakeClock()
    release = asyncio.Event()
    async with asyncio.TaskGroup() as group:
        work = group.create_task(release.wait())
        waiting = group.create_task(wait_tasks(clock, [work], 5.0))
        await clock.advance(5.0)
        await eventually(waiting.done)
        assert waiting.result() is False
        assert not work.done()
        assert await wait_tasks(clock, [work], 0.0) is False
        release.set()
        assert await wait_tasks(clock, [work], 1.0) is True
        assert await wait_tasks(clock, [work], 0.0) is True


async def test_stop_now_cancels_cleanups_that_wait() -> None:
    clock = FakeClock()
    phases: list[str] = []

    async def draining() -> None:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            phases.append("draining")
            try:
                await clock.sleep(30.0)  # a graceful drain that a hard stop must cut short
            finally:
                phases.append("cut")

    async with asyncio.TaskGroup() as group:
        task = group.create_task(draining())
        await asyncio.sleep(0)
        await stop_now([task])
        assert task.done()
    assert phases == ["draining", "cut"]
    assert clock.monotonic() == 0.0
    await stop_now([task])  # nothing left to stop


async def test_wait_first_and_unless_race_work_against_an_event() -> None:
    clock = FakeClock()
    event = asyncio.Event()
    async with asyncio.TaskGroup() as group:
        work = group.create_task(clock.sleep(10.0))
        racing = group.create_task(wait_first(work, event))
        await asyncio.sleep(0)
        assert not racing.done()
        event.set()
        await eventually(racing.done)
        assert not work.done()
        work.cancel()

    async def slow_true() -> bool:
        await clock.sleep(1.0)
        return True

    calm = asyncio.Event()
    async with asyncio.TaskGroup() as group:
        finished = group.create_task(unless(slow_true, calm))
        await clock.advance(1.0)
        await eventually(finished.done)
    assert finished.result() is True

    hurry = asyncio.Event()
    async with asyncio.TaskGroup() as group:
        interrupted = group.create_task(unless(slow_true, hurry))
        await asyncio.sleep(0)
        hurry.set()
        await eventually(interrupted.done)
    assert interrupted.result() is False
    assert await unless(slow_true, hurry) is False  # already set: the work never starts


async def test_guarded_hands_failures_over_and_lets_cancellation_through() -> None:
    failures: list[Exception] = []

    async def broken() -> None:
        msg = "broken"
        raise ValueError(msg)

    async def done() -> None:
        return None

    async def forever() -> None:
        await asyncio.get_running_loop().create_future()

    async with asyncio.TaskGroup() as group:  # a failure never reaches the group
        group.create_task(guarded("broken", broken, on_failure=failures.append))
        group.create_task(guarded("done", done, on_failure=failures.append, finishable=False))
        endless = group.create_task(guarded("forever", forever, on_failure=failures.append))
        await asyncio.sleep(0)
        endless.cancel()
    assert [str(f) for f in failures] == ["broken"]
    assert endless.cancelled()
