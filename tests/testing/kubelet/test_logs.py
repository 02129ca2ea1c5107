"""Container logs: appending, dropping past the limit, reading from a position, waiting."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from etctl.testing._kubelet.logs import ContainerLog, LogLine

WHEN = datetime(2026, 1, 1, 0, 0, 1, 500, tzinfo=UTC)


def test_lines_are_split_and_rendered() -> None:
    log = ContainerLog()
    log.write("a\nb\n", time=WHEN)
    log.write("", time=WHEN)
    assert [line.text for line in log.lines()] == ["a", "b", ""]
    assert LogLine(WHEN, "x").render(timestamps=True) == "2026-01-01T00:00:01.000500000Z x\n"


def test_old_lines_are_dropped_past_the_limit() -> None:
    log = ContainerLog(limit=2)
    for text in ("1", "2", "3"):
        log.write(text, time=WHEN)
    assert [line.text for line in log.lines()] == ["2", "3"]
    assert (log.written, log.dropped) == (3, 1)
    lines, position = log.since(0)
    assert ([line.text for line in lines], position) == (["2", "3"], 3)
    assert log.since(2)[0][0].text == "3"


def test_a_closed_log_takes_no_more_lines() -> None:
    log = ContainerLog()
    log.close()
    log.write("late", time=WHEN)
    assert log.lines() == []
    assert log.closed


async def test_waiters_wake_on_a_line_or_the_end() -> None:
    log = ContainerLog()
    async with asyncio.timeout(2), asyncio.TaskGroup() as group:
        waiter = group.create_task(log.wait(0), name="wait-line")
        await asyncio.sleep(0)
        assert not waiter.done()
        log.write("x", time=WHEN)
    async with asyncio.timeout(2), asyncio.TaskGroup() as group:
        ender = group.create_task(log.wait(1), name="wait-end")
        await asyncio.sleep(0)
        log.close()
    assert ender.done()
