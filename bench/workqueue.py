"""Workqueue throughput: add/get/done cycles, concurrent workers, and delayed adds.

Run: ``.venv/bin/python bench/workqueue.py [--items N]``

The baseline is Go: controller-runtime's priority queue does 1,000 x Add+Get+Done on one goroutine
in 300-1049 us (0.3-1.05 us per item, PR #3471), and client-go's delaying queue AddAfter costs
3.1 us per call (k/k PR #127944). Each figure is the best of a few repetitions on the real clock.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from functools import partial

import _report
from etctl.runtime import RealClock
from etctl.runtime._workqueue import ShutDown, WorkQueue

_GO_CYCLE = "Go: 300-1049 ns/item (controller-runtime priority queue)"
_GO_ADD_AFTER = "Go: 3113 ns/op (client-go delaying queue AddAfter)"
_REPEATS = 5
_NAMES = iter(f"bench-{i}" for i in range(1_000_000))


def _queue(*, metrics: bool) -> WorkQueue[int]:
    return WorkQueue(clock=RealClock(), name=next(_NAMES) if metrics else None)


async def _best(run: Callable[[], Awaitable[float]]) -> float:
    """The lowest of a few timings, in seconds: the one least disturbed by the machine."""
    return min([await run() for _ in range(_REPEATS)])


async def batch_cycle(items: int, *, metrics: bool) -> float:
    """Add ``items`` distinct items, then get and done each, on one task."""
    queue = _queue(metrics=metrics)
    start = time.perf_counter()
    for i in range(items):
        queue.add(i)
    for _ in range(items):
        queue.done(await queue.get())
    return time.perf_counter() - start


async def interleaved_cycle(items: int, *, metrics: bool) -> float:
    """add -> get -> done one item at a time, on one task."""
    queue = _queue(metrics=metrics)
    start = time.perf_counter()
    for i in range(items):
        queue.add(i)
        queue.done(await queue.get())
    return time.perf_counter() - start


async def concurrent_workers(items: int, workers: int, *, metrics: bool) -> float:
    """One producer adds ``items`` keys in bursts while ``workers`` tasks get and done them."""
    queue = _queue(metrics=metrics)
    finished = 0
    all_done = asyncio.Event()

    async def worker() -> None:
        nonlocal finished
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            queue.done(item)
            finished += 1
            if finished == items:
                all_done.set()
            await asyncio.sleep(0)  # a worker hands the loop over between items, as in a controller

    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for index in range(workers):
            group.create_task(worker(), name=f"bench-worker-{index}")
        for i in range(items):
            queue.add(i)
            if i % 64 == 63:
                await asyncio.sleep(0)
        await all_done.wait()
        elapsed = time.perf_counter() - start
        queue.shut_down()
    return elapsed


async def add_after_calls(items: int) -> float:
    """The cost of ``add_after`` itself: distinct items with random delays (heap pushes)."""
    queue = _queue(metrics=False)
    delays = [random.uniform(60, 120) for _ in range(items)]
    start = time.perf_counter()
    for i, delay in enumerate(delays):
        queue.add_after(i, delay)
    elapsed = time.perf_counter() - start
    queue.shut_down()
    return elapsed


async def add_after_released(items: int) -> float:
    """add_after with 0-20 ms delays until every item was released by the timer and consumed."""
    queue = _queue(metrics=False)
    delays = [random.uniform(0.0, 0.02) for _ in range(items)]
    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        group.create_task(queue.run(), name="bench-queue")
        for i, delay in enumerate(delays):
            queue.add_after(i, delay)
        for _ in range(items):
            queue.done(await queue.get())
        elapsed = time.perf_counter() - start
        queue.shut_down()
    return elapsed


async def main(items: int) -> None:
    _report.header("workqueue: add/get/done and delayed adds")
    per_item = 1e9 / items  # seconds -> ns per item
    for metrics in (False, True):
        label = "with metrics" if metrics else "no metrics"
        batch = await _best(partial(batch_cycle, items, metrics=metrics))
        _report.figure(
            f"batch add+get+done, 1 task, {label}", batch * per_item, "ns/item", compare=_GO_CYCLE
        )
        _report.figure(f"  = items/s, {label}", items / batch, "items/s")
        one = await _best(partial(interleaved_cycle, items, metrics=metrics))
        _report.figure(
            f"interleaved add->get->done, {label}", one * per_item, "ns/item", compare=_GO_CYCLE
        )
    for workers in (4, 16, 64):
        elapsed = await _best(partial(concurrent_workers, items, workers, metrics=True))
        _report.figure(f"{workers} workers + producer, with metrics", items / elapsed, "items/s")
    calls = await _best(partial(add_after_calls, items))
    _report.figure(
        "add_after call (distinct items)", calls * per_item, "ns/op", compare=_GO_ADD_AFTER
    )
    released = await _best(partial(add_after_released, items))
    _report.figure("add_after 0-20 ms -> released -> done", items / released, "items/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000, help="items per measurement")
    asyncio.run(main(parser.parse_args().items))
