"""Slow-start batches: doubling batch sizes, stop at the first failing batch."""

from __future__ import annotations

import asyncio

from etctl.common._batches import slow_start
from etctl.errors import EtctlError, ServerError
from etctl.runtime._reconcile import STOPPING


async def test_batches_double_and_run_concurrently() -> None:
    running = 0
    peaks: list[int] = []
    done: list[int] = []

    async def write(item: int) -> EtctlError | None:
        nonlocal running
        running += 1
        peaks.append(running)
        await asyncio.sleep(0)
        running -= 1
        done.append(item)
        return None

    assert await slow_start(list(range(10)), write, name="t") == []
    assert sorted(done) == list(range(10))
    assert max(peaks) == 4  # batches of 1, 2, 4, then the remaining 3


async def test_a_failing_batch_stops_the_rest() -> None:
    attempted: list[int] = []

    async def write(item: int) -> EtctlError | None:
        attempted.append(item)
        return ServerError("boom") if item == 2 else None

    errors = await slow_start(list(range(20)), write, name="t")
    assert [str(e) for e in errors] == [str(ServerError("boom"))]
    assert sorted(attempted) == [0, 1, 2]


async def test_no_batch_starts_once_the_controller_stops() -> None:
    stopping = asyncio.Event()
    attempted: list[int] = []

    async def write(item: int) -> EtctlError | None:
        attempted.append(item)
        if item == 2:
            stopping.set()  # the controller began to stop while the batch [1, 2] ran
        return None

    token = STOPPING.set(stopping)
    try:
        assert await slow_start(list(range(20)), write, name="t") == []
    finally:
        STOPPING.reset(token)
    assert sorted(attempted) == [0, 1, 2]
