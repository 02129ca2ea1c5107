import asyncio
import gc
import itertools
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etctl.runtime import FakeClock
from etctl.runtime._ratelimit import ItemExponentialRateLimiter
from etctl.runtime._workqueue import LOW_PRIORITY, ShutDown, WorkQueue
from etctl.testing import eventually
from tests.runtime._fakes import sample, unique_name


@asynccontextmanager
async def running(queue: WorkQueue[Any]) -> AsyncIterator[None]:
    """Run the queue's timer loop for the duration of the block."""
    async with asyncio.TaskGroup() as group:
        group.create_task(queue.run(), name="queue-run")
        try:
            yield
        finally:
            queue.shut_down()


# -- the base queue


async def test_fifo_order_and_dedup_of_queued_items() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for item in ["a", "b", "a", "c", "b"]:
        queue.add(item)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]
    assert len(queue) == 0
    assert queue.processing == 3


async def test_a_thousand_adds_of_one_item_yield_one_get() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for _ in range(1000):
        queue.add("key")
    assert len(queue) == 1
    assert await queue.get() == "key"
    queue.done("key")
    assert len(queue) == 0
    assert queue.depth == 0


async def test_adds_during_processing_cause_exactly_one_more_run() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("key")
    assert await queue.get() == "key"
    for _ in range(5):
        queue.add("key")
    assert len(queue) == 0  # not handed out again while processing
    assert queue.depth == 1
    queue.done("key")
    assert len(queue) == 1
    assert await queue.get() == "key"
    queue.done("key")
    assert (len(queue), queue.depth, queue.processing) == (0, 0, 0)


async def test_get_waits_for_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not getter.done()
    queue.add("x")
    assert await getter == "x"


async def test_a_cancelled_getter_passes_its_wake_up_on() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("x")  # wakes the first getter...
    first.cancel()  # ...which is cancelled before it runs
    assert await second == "x"
    assert first.cancelled()


_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "get", "done"]), st.integers(min_value=0, max_value=4)),
    max_size=120,
)


@settings(max_examples=150)
@given(ops=_OPS)
async def test_the_queue_matches_a_model_of_client_go_semantics(ops: list[tuple[str, int]]) -> None:
    queue: WorkQueue[int] = WorkQueue(clock=FakeClock())
    state: dict[int, str] = {}  # idle (absent), queued, running, running+dirty
    fifo: list[int] = []
    for op, key in ops:
        current = state.get(key, "idle")
        if op == "add":
            queue.add(key)
            if current == "idle":
                state[key] = "queued"
                fifo.append(key)
            elif current == "running":
                state[key] = "running+dirty"
        elif op == "get" and fifo:
            expected = fifo.pop(0)
            assert await queue.get() == expected
            state[expected] = "running"
        elif op == "done" and current.startswith("running"):
            queue.done(key)
            if current == "running+dirty":
                state[key] = "queued"
                fifo.append(key)
            else:
                del state[key]
        values = list(state.values())
        assert len(queue) == len(fifo)
        assert queue.depth == values.count("queued") + values.count("running+dirty")
        assert queue.processing == values.count("running") + values.count("running+dirty")


async def test_never_two_workers_on_one_item_under_adversarial_re_adds() -> None:
    queue: WorkQueue[int] = WorkQueue(clock=FakeClock())
    rng = random.Random(1234)
    in_flight: set[int] = set()
    overlaps = 0
    runs = 0
    last_add: dict[int, int] = {}
    last_start: dict[int, int] = {}
    tick = 0

    async def worker() -> None:
        nonlocal overlaps, runs, tick
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            if key in in_flight:
                overlaps += 1
            in_flight.add(key)
            tick += 1
            last_start[key] = tick
            runs += 1
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)
            in_flight.discard(key)
            queue.done(key)

    async def producer() -> None:
        nonlocal tick
        for _ in range(3000):
            key = rng.randrange(6)
            queue.add(key)  # mostly while the key is running or queued
            tick += 1
            last_add[key] = tick
            if rng.random() < 0.5:
                await asyncio.sleep(0)

    async with asyncio.TaskGroup() as group:
        for i in range(8):
            group.create_task(worker(), name=f"worker-{i}")
        await producer()
        await eventually(lambda: queue.depth == 0 and queue.processing == 0)
        queue.shut_down()
    assert overlaps == 0
    assert runs < 3000  # re-adds collapsed
    # every key ran after its last add: no add was lost
    assert all(last_start[key] > added for key, added in last_add.items())


async def test_done_of_an_unknown_item_is_ignored() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.done("never-got")
    assert (len(queue), queue.processing) == (0, 0)


# -- priorities


async def take(queue: WorkQueue[Any], count: int) -> list[Any]:
    """The next ``count`` items, each marked done."""
    items = []
    for _ in range(count):
        item = await queue.get()
        queue.done(item)
        items.append(item)
    return items


async def test_higher_priorities_first_and_arrival_order_within_one() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("new-1", priority=LOW_PRIORITY)
    queue.add("a")
    queue.add("new-2", priority=LOW_PRIORITY)
    queue.add("urgent", priority=10)
    queue.add("b")
    assert len(queue) == 5
    assert await take(queue, 5) == ["urgent", "a", "b", "new-1", "new-2"]


async def test_a_re_add_raises_the_priority_and_joins_it_as_a_new_arrival() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("x", priority=LOW_PRIORITY)
    queue.add("a")
    queue.add("y", priority=LOW_PRIORITY)
    queue.add("b")
    queue.add("y")  # now priority 0, behind b
    queue.add("a", priority=LOW_PRIORITY)  # lower: no change
    assert (len(queue), queue.depth) == (4, 4)
    assert queue.priority_of("y") == 0
    assert await take(queue, 4) == ["a", "b", "y", "x"]


async def test_an_item_re_added_while_processing_reruns_with_the_highest_priority() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("job", priority=LOW_PRIORITY)
    assert await queue.get() == "job"
    assert queue.priority_of("job") == LOW_PRIORITY
    queue.add("other")
    queue.add("job", priority=LOW_PRIORITY)
    queue.add("job", priority=5)
    queue.done("job")
    assert await take(queue, 2) == ["job", "other"]


async def test_requeues_keep_the_priority_the_item_was_handed_out_with() -> None:
    clock = FakeClock()
    limiter = ItemExponentialRateLimiter(base=1.0, cap=10.0)
    queue: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=limiter)
    async with running(queue):
        queue.add("urgent", priority=10)
        queue.add("new", priority=LOW_PRIORITY)
        assert await queue.get() == "urgent"
        queue.add_rate_limited("urgent")  # failed: back in 1 s, still urgent
        queue.done("urgent")
        assert await queue.get() == "new"
        queue.add_after("new", 1)  # a requeue after 1 s, still low
        queue.done("new")
        queue.add("plain")
        await clock.advance(1)
        assert await take(queue, 3) == ["urgent", "plain", "new"]
        queue.add_after("late", 1, priority=3)
        queue.add_after("late", 2, priority=7)  # the earlier time and the higher priority win
        queue.add("plain")
        await clock.advance(1)
        assert queue.priority_of("late") == 7
        assert await take(queue, 2) == ["late", "plain"]


async def test_an_add_of_a_delayed_item_keeps_the_higher_priority() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    async with running(queue):
        queue.add_after("a", 10, priority=9)
        queue.add("b", priority=5)
        queue.add("a", priority=LOW_PRIORITY)  # ready now, at the delayed add's priority
        assert queue.waiting == 0
        assert await take(queue, 2) == ["a", "b"]


async def test_another_items_delay_leaves_the_priority_of_an_add_alone() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add_after("delayed", 10)
    queue.add("very-low", priority=LOW_PRIORITY - 400)
    assert queue.priority_of("very-low") == LOW_PRIORITY - 400


async def test_aging_hands_out_an_item_that_waited_too_long_behind_higher_ones() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, aging=30)
    queue.add("old-new", priority=LOW_PRIORITY)
    await clock.advance(10)
    queue.add("newer", priority=LOW_PRIORITY)
    queue.add("in-progress")
    assert await take(queue, 1) == ["in-progress"]
    for index in range(3):  # a steady stream of priority-0 work
        queue.add(f"busy-{index}")
    await clock.advance(20)  # old-new has waited 30 s, newer 20 s
    assert await take(queue, 2) == ["old-new", "busy-0"]
    await clock.advance(10)  # newer has waited 30 s too
    assert await take(queue, 3) == ["newer", "busy-1", "busy-2"]


async def test_without_aging_priorities_are_strict() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, aging=None)
    queue.add("low", priority=LOW_PRIORITY)
    await clock.advance(3600)
    queue.add("high")
    assert await take(queue, 2) == ["high", "low"]
    with pytest.raises(ValueError, match="aging"):
        WorkQueue(clock=clock, aging=0)


_PRIORITY_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "get", "done"]),
        st.integers(min_value=0, max_value=4),
        st.sampled_from([LOW_PRIORITY, 0, 10]),
    ),
    max_size=120,
)


@settings(max_examples=150)
@given(ops=_PRIORITY_OPS)
async def test_priorities_match_a_model(ops: list[tuple[str, int, int]]) -> None:
    """Highest priority first, then arrival (a raised item arrives anew), no aging."""
    queue: WorkQueue[int] = WorkQueue(clock=FakeClock(), aging=None)
    arrivals = itertools.count()
    queued: dict[int, tuple[int, int]] = {}  # item -> (priority, arrival)
    running_items: dict[int, int | None] = {}  # item -> priority to rerun with, if dirty
    for op, key, priority in ops:
        if op == "add":
            queue.add(key, priority=priority)
            if key in running_items:
                dirty = running_items[key]
                running_items[key] = priority if dirty is None else max(dirty, priority)
            elif key in queued:
                if priority > queued[key][0]:
                    queued[key] = (priority, next(arrivals))
            else:
                queued[key] = (priority, next(arrivals))
        elif op == "get" and queued:
            expected = min(queued, key=lambda k: (-queued[k][0], queued[k][1]))
            assert await queue.get() == expected
            del queued[expected]
            running_items[expected] = None
        elif op == "done" and key in running_items:
            queue.done(key)
            dirty = running_items.pop(key)
            if dirty is not None:
                queued[key] = (dirty, next(arrivals))
        assert len(queue) == len(queued)
        assert queue.depth == len(queued) + sum(p is not None for p in running_items.values())


# -- shutdown


async def test_shut_down_drops_queued_items_and_wakes_every_getter() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.shut_down()
    for getter in getters:
        with pytest.raises(ShutDown):
            await getter
    queue.add("late")
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()
    assert queue.shutting_down


async def test_shut_down_never_hands_out_queued_items_and_done_does_not_requeue() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("running")
    queue.add("queued")
    assert await queue.get() == "running"
    queue.add("running")  # dirty while processing
    queue.shut_down()
    assert (len(queue), queue.depth) == (0, 0)
    queue.done("running")
    assert len(queue) == 0
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shut_down_with_drain_waits_for_processing_items() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("a")
    queue.add("b")
    item_a = await queue.get()
    item_b = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain(timeout=10))
    await clock.advance(5)
    queue.done(item_a)
    await clock.settle()
    assert not drain.done()
    queue.done(item_b)
    assert await drain is True


async def test_shut_down_with_drain_times_out_in_virtual_time() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("stuck")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain(timeout=30))
    await clock.advance(29)
    assert not drain.done()
    await clock.advance(1)
    assert await drain is False
    assert await queue.shut_down_with_drain(timeout=0) is False
    queue.done("stuck")
    assert await queue.shut_down_with_drain(timeout=0) is True


# -- delays


async def test_the_earliest_ready_time_wins() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    async with running(queue):
        queue.add_after("a", 10)
        queue.add_after("a", 1)
        queue.add_after("a", 5)  # later than what is pending: ignored
        assert queue.waiting == 1
        await clock.advance(0.5)
        assert len(queue) == 0
        await clock.advance(0.5)
        assert len(queue) == 1
        assert clock.monotonic() == 1.0
        queue.done(await queue.get())
        await clock.advance(20)  # the superseded 10 s timer does not fire
        assert (len(queue), queue.waiting) == (0, 0)


async def test_an_add_while_waiting_is_immediate_and_leaves_no_timer() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    async with running(queue):
        queue.add_after("a", 10)
        await clock.settle()
        assert clock.sleepers == 1
        queue.add("a")
        await clock.settle()
        assert len(queue) == 1
        assert queue.waiting == 0
        assert clock.sleepers == 0
        queue.done(await queue.get())
        await clock.advance(10)
        assert len(queue) == 0


async def test_one_timer_releases_many_items_in_ready_order() -> None:
    clock = FakeClock()
    queue: WorkQueue[int] = WorkQueue(clock=clock)
    delays = random.Random(5).sample(range(1, 200), 100)
    async with running(queue):
        for item, delay in enumerate(delays):
            queue.add_after(item, delay)
        await clock.settle()
        assert clock.sleepers == 1  # no timer per item
        released: list[int] = []
        for _ in range(200):
            await clock.advance(1)
            while len(queue):
                released.append(await queue.get())
        assert released == sorted(range(100), key=lambda i: delays[i])


async def test_add_after_without_delay_adds_now() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add_after("a", 0)
    queue.add_after("b", -3)
    assert len(queue) == 2
    assert queue.waiting == 0


async def test_add_after_of_a_queued_item_is_a_no_op() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("a")
    queue.add_after("a", 5)
    assert queue.waiting == 0
    assert len(queue) == 1


async def test_a_delayed_add_of_a_processing_item_reruns_it_after_done() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    async with running(queue):
        queue.add("a")
        item = await queue.get()
        queue.add_after(item, 5)
        await clock.advance(5)
        assert (len(queue), queue.depth) == (0, 1)
        queue.done(item)
        assert len(queue) == 1


async def test_items_added_before_run_are_released_once_it_runs() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("early", 2)
    await clock.advance(5)
    assert len(queue) == 0
    async with running(queue):
        await clock.settle()
        assert len(queue) == 1


async def test_many_reschedules_keep_the_heap_small() -> None:
    clock = FakeClock()
    queue: WorkQueue[int] = WorkQueue(clock=clock)
    async with running(queue):
        for round_ in range(50):
            for item in range(10):
                queue.add_after(item, 10_000 - round_)  # each one earlier than the last
        assert queue.waiting == 10
        assert len(queue._heap) <= 2 * 10 + 64
        await clock.advance(10_000)
        assert len(queue) == 10


async def test_shut_down_drops_waiting_items_and_ends_run() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    async with asyncio.TaskGroup() as group:
        runner = group.create_task(queue.run())
        queue.add_after("a", 5)
        await clock.settle()
        queue.shut_down()
        await clock.settle()
        assert runner.done()
    assert queue.waiting == 0
    await clock.advance(10)
    assert len(queue) == 0


async def test_cancelling_run_shuts_the_queue_down() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    runner = asyncio.create_task(queue.run())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="already running"):
        await queue.run()
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert queue.shutting_down


# -- rate limits


async def test_rate_limited_adds_back_off_and_forget_resets() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=ItemExponentialRateLimiter(1, 100))
    async with running(queue):
        arrivals: list[float] = []
        for _ in range(3):
            queue.add_rate_limited("a")
            await clock.advance(10)
            assert len(queue) == 1
            queue.done(await queue.get())
            arrivals.append(clock.monotonic())
        assert queue.num_requeues("a") == 3
        queue.forget("a")
        assert queue.num_requeues("a") == 0
        queue.add_rate_limited("a")
        await clock.advance(0.5)
        assert len(queue) == 0
        await clock.advance(0.5)
        assert len(queue) == 1


async def test_rate_limited_delays_are_exact_in_virtual_time() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=ItemExponentialRateLimiter(1, 100))
    async with running(queue):
        seen: list[float] = []
        for _ in range(4):
            start = clock.monotonic()
            queue.add_rate_limited("a")
            while not len(queue):
                await clock.advance(0.25)
            seen.append(clock.monotonic() - start)
            queue.done(await queue.get())
        assert seen == [1.0, 2.0, 4.0, 8.0]


async def test_shut_down_ignores_rate_limited_adds_without_counting_a_failure() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.shut_down()
    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 0


# -- metrics


async def test_metrics_read_back_from_the_registry() -> None:
    clock = FakeClock()
    name = unique_name("queue")
    labels = {"name": name, "controller": name}
    queue: WorkQueue[str] = WorkQueue(clock=clock, name=name)
    queue.add("a")
    queue.add("b")
    queue.add("a")
    assert sample("workqueue_adds_total", **labels) == 2
    assert sample("workqueue_depth", **labels, priority="") == 2
    await clock.advance(2)
    assert await queue.get() == "a"
    assert sample("workqueue_depth", **labels, priority="") == 1
    assert sample("workqueue_queue_duration_seconds_count", **labels) == 1
    assert sample("workqueue_queue_duration_seconds_sum", **labels) == 2.0
    await clock.advance(3)
    assert sample("workqueue_unfinished_work_seconds", **labels) == 3.0
    assert sample("workqueue_longest_running_processor_seconds", **labels) == 3.0
    assert await queue.get() == "b"
    await clock.advance(1)
    assert sample("workqueue_unfinished_work_seconds", **labels) == 5.0  # 4 + 1
    assert sample("workqueue_longest_running_processor_seconds", **labels) == 4.0
    queue.done("a")
    assert sample("workqueue_work_duration_seconds_sum", **labels) == 4.0
    assert sample("workqueue_work_duration_seconds_bucket", **labels, le="10.0") == 1
    assert sample("workqueue_work_duration_seconds_bucket", **labels, le="1.0") == 0
    queue.done("b")
    assert sample("workqueue_unfinished_work_seconds", **labels) == 0.0
    assert sample("workqueue_longest_running_processor_seconds", **labels) == 0.0
    queue.add_after("c", 0)
    assert sample("workqueue_retries_total", **labels) == 0
    queue.add_after("d", 1)
    queue.add_after("c", 1)  # already queued, but a retry all the same
    assert sample("workqueue_retries_total", **labels) == 2


async def test_an_add_during_processing_is_timed_from_the_add() -> None:
    clock = FakeClock()
    name = unique_name("queue")
    labels = {"name": name, "controller": name}
    queue: WorkQueue[str] = WorkQueue(clock=clock, name=name)
    queue.add("a")
    await queue.get()
    await clock.advance(1)
    queue.add("a")
    assert sample("workqueue_adds_total", **labels) == 2
    await clock.advance(4)
    queue.done("a")
    await queue.get()
    assert sample("workqueue_queue_duration_seconds_sum", **labels) == 4.0


async def test_a_dropped_queue_reads_as_empty() -> None:
    name = unique_name("queue")
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock(), name=name)
    queue.add("a")
    assert sample("workqueue_depth", name=name, controller=name, priority="") == 1
    del queue
    gc.collect()
    assert sample("workqueue_depth", name=name, controller=name, priority="") == 0


async def test_an_unnamed_queue_records_no_metrics() -> None:
    before = sample("workqueue_adds_total", name="", controller="")
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("a")
    assert sample("workqueue_adds_total", name="", controller="") == before


async def test_idle_until_an_item_is_queued_processing_or_due() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)

    def idle() -> bool:
        return queue.idle

    assert idle()
    queue.add("a")
    assert not idle()
    assert await queue.get() == "a"
    assert not idle()  # processing
    queue.done("a")
    assert idle()
    queue.add_after("b", 10)
    assert idle()  # waiting for its delay is not work
    await clock.advance(10)
    assert not idle()  # due: run() has not released it (it is not running here)
