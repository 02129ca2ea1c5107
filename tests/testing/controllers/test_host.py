"""The controllers' work queue: deduplicated, drained in order, robust to a failing key."""

from __future__ import annotations

import asyncio

from etctl.testing._controllers import WorkQueue


def test_keys_are_deduplicated_and_drained_in_order() -> None:
    seen: list[str] = []
    queue: WorkQueue[str] = WorkQueue(seen.append)
    for key in ("a", "b", "a", "c"):
        queue.add(key)
    assert len(queue) == 3
    assert queue.drain() == 3
    assert seen == ["a", "b", "c"]


def test_keys_added_while_draining_are_handled_in_the_same_drain() -> None:
    seen: list[str] = []

    def handle(key: str) -> None:
        seen.append(key)
        if key == "a":
            queue.add("b")

    queue: WorkQueue[str] = WorkQueue(handle)
    queue.add("a")
    queue.drain()
    assert seen == ["a", "b"]


async def test_a_failing_key_does_not_stop_the_queue() -> None:
    seen: list[str] = []

    def handle(key: str) -> None:
        if key == "bad":
            msg = "boom"
            raise RuntimeError(msg)
        seen.append(key)

    queue: WorkQueue[str] = WorkQueue(handle)
    async with asyncio.TaskGroup() as group:
        task = group.create_task(queue.run(), name="queue")
        queue.add("bad")
        queue.add("good")
        async with asyncio.timeout(2):
            while seen != ["good"]:
                await asyncio.sleep(0)
        task.cancel()
