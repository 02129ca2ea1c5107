import asyncio

import pytest

from etctl.runtime import FakeClock, RealClock, wait_event


async def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = FakeClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(label: str, delay: float) -> None:
        await clock.sleep(delay)
        woke.append((label, clock.monotonic()))

    async with asyncio.TaskGroup() as group:
        group.create_task(sleeper("late", 10))
        group.create_task(sleeper("early", 2))
        group.create_task(sleeper("never", 100))
        await clock.settle()
        assert clock.sleepers == 3
        await clock.advance(10)
        assert woke == [("early", 2.0), ("late", 10.0)]
        assert clock.monotonic() == 10.0
        await clock.advance(90)
    assert woke[-1] == ("never", 100.0)


async def test_sleeps_started_by_woken_tasks_fire_within_the_same_advance() -> None:
    clock = FakeClock()
    ticks: list[float] = []

    async def ticker() -> None:
        for _ in range(5):
            await clock.sleep(1)
            ticks.append(clock.monotonic())

    async with asyncio.TaskGroup() as group:
        group.create_task(ticker())
        await clock.advance(3.5)
        assert ticks == [1.0, 2.0, 3.0]
        await clock.advance(10)
    assert ticks == [1.0, 2.0, 3.0, 4.0, 5.0]


async def test_cancelled_sleeper_is_skipped() -> None:
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.sleepers == 0
    assert clock.next_deadline() is None
    await clock.advance(10)


async def test_wall_time_follows_monotonic_time() -> None:
    clock = FakeClock()
    start = clock.now()
    await clock.advance(61)
    assert (clock.now() - start).total_seconds() == 61


async def test_advance_refuses_to_go_backwards() -> None:
    with pytest.raises(ValueError, match="backwards"):
        await FakeClock().advance(-1)


async def test_wait_event_times_out_in_virtual_time() -> None:
    clock = FakeClock()
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_event(clock, event, 30))
    await clock.advance(29)
    assert not waiter.done()
    await clock.advance(1)
    assert await waiter is False


async def test_a_wait_times_out_from_when_it_was_called_not_when_its_timer_task_started() -> None:
    clock = FakeClock(settle_rounds=0)  # time moves before the timer task gets to run
    event = asyncio.Event()
    waiting = asyncio.create_task(wait_event(clock, event, 1.0))
    await asyncio.sleep(0)  # wait_event has created its timer task, which has not run yet
    await clock.advance(0.5)
    await clock.advance(0.5)  # one second after the call
    assert await asyncio.wait_for(waiting, 5) is False


async def test_wait_event_returns_when_set() -> None:
    clock = FakeClock()
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_event(clock, event, 30))
    await clock.settle()
    event.set()
    assert await waiter is True
    assert clock.sleepers == 0


async def test_real_clock_is_aware_utc() -> None:
    clock = RealClock()
    assert clock.now().tzinfo is not None
    before = clock.monotonic()
    await clock.sleep(0)
    assert clock.monotonic() >= before


async def test_jump_wakes_every_overdue_sleeper_at_once_reading_the_new_time() -> None:
    clock = FakeClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(label: str, delay: float) -> None:
        await clock.sleep(delay)
        woke.append((label, clock.monotonic()))

    async with asyncio.TaskGroup() as group:
        group.create_task(sleeper("late", 10))
        group.create_task(sleeper("early", 2))
        group.create_task(sleeper("after", 30))
        await clock.settle()
        clock.jump(12)  # synchronous: nothing ran while time moved
        assert woke == []
        await clock.settle()
        assert woke == [("early", 12.0), ("late", 12.0)]
        assert clock.sleepers == 1
        with pytest.raises(ValueError, match="backwards"):
            clock.jump(-1)
        await clock.advance(18)
    assert woke[-1] == ("after", 30.0)
