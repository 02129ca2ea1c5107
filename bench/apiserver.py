"""Throughput of the embedded API server over loopback: start-up, creates/s, watch events/s.

Run: ``.venv/bin/python bench/apiserver.py [--creates N] [--watchers K] [--concurrency C]``

The server runs in its own process (``python -m etctl.testing``) and the load comes from this one
through plain aiohttp, so the two sides do not share a core and each side's CPU use says which
one saturates. Figures:

* start-up: constructing and starting an in-process server (the fixtures' cost), and the time a
  fresh ``python -m etctl.testing`` takes to print its URL (interpreter and imports included);
* creates/s: ``C`` concurrent clients POST config maps; compared with the target of 1,000/s;
* watch events/s: ``K`` watchers follow the namespace while the creates run; events delivered to
  all of them per second, compared with the target of 10,000/s. Clients count event lines without
  decoding them, to measure the server rather than the client's JSON parser;
* for each load phase, the share of one core each process used (a side near 100% saturates).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass

import aiohttp

import _report
from _cluster import cpu_seconds
from etctl.log import configure
from etctl.testing import ApiServer

_NS = "bench"
_CM = f"/api/v1/namespaces/{_NS}/configmaps"


def _machine_ticks() -> tuple[int, int]:
    """``(busy, total)`` CPU ticks of the whole machine (Linux ``/proc/stat``)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


@dataclass
class Phase:
    """CPU and wall time of one load phase."""

    wall: float
    server_cpu: float
    client_cpu: float
    machine_busy: float

    def verdict(self) -> str:
        server = self.server_cpu / self.wall
        client = self.client_cpu / self.wall
        shares = f"server {server:.0%} of a core, client {client:.0%}"
        others = self.machine_busy - (server + client) / (os.cpu_count() or 1)
        if max(server, client) >= 0.85:
            side = "server" if server >= client else "client"
            return f"{shares}: the {side} saturates"
        if self.machine_busy >= 0.85:
            return (
                f"{shares}: the machine is saturated ({others:.0%} of it taken by other "
                "processes); these figures are lower bounds"
            )
        return f"{shares}: neither saturates a core (round-trip latency bounds the rate)"


class Measure:
    """Wall and CPU time of both processes around a phase."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid

    async def run(self, phase: asyncio.Future[None] | asyncio.Task[None]) -> Phase:
        wall, server, client = (
            time.perf_counter(),
            cpu_seconds(self.server_pid),
            time.process_time(),
        )
        busy, total = _machine_ticks()
        await phase
        busy_after, total_after = _machine_ticks()
        return Phase(
            time.perf_counter() - wall,
            cpu_seconds(self.server_pid) - server,
            time.process_time() - client,
            (busy_after - busy) / max(total_after - total, 1),
        )


async def _in_process_start() -> float:
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        server = ApiServer()
        await server.start()
        best = min(best, time.perf_counter() - started)
        await server.stop()
    return best


async def _create_all(
    session: aiohttp.ClientSession, url: str, total: int, concurrency: int, prefix: str
) -> None:
    counter = iter(range(total))

    async def worker() -> None:
        for index in counter:
            body = {"metadata": {"name": f"{prefix}-{index}"}, "data": {"index": str(index)}}
            async with session.post(url + _CM, json=body) as response:
                if response.status != 201:
                    raise RuntimeError(f"create failed: {response.status} {await response.text()}")
                await response.read()

    async with asyncio.TaskGroup() as group:
        for n in range(concurrency):
            group.create_task(worker(), name=f"creator-{n}")


async def _watch(
    session: aiohttp.ClientSession, url: str, rv: str, expected: int, ready: asyncio.Event
) -> None:
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"}
    async with session.get(
        url + _CM, params=params, timeout=aiohttp.ClientTimeout(total=None)
    ) as response:
        ready.set()
        seen = 0
        async for chunk in response.content.iter_any():
            seen += chunk.count(b"\n")
            if seen >= expected:
                return


async def _serve() -> tuple[asyncio.subprocess.Process, str, float]:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "etctl.testing", "--port", "0", stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    url = (await process.stdout.readline()).decode().strip()
    return process, url, time.perf_counter() - started


async def main(creates: int, watchers: int, concurrency: int) -> None:
    _report.header("embedded API server over loopback")
    _report.figure(
        "in-process start (construct + listen)",
        await _in_process_start() * 1000,
        "ms",
        compare="target: well under 1,000 ms",
    )
    process, url, cold = await _serve()
    _report.figure(
        "python -m etctl.testing until its URL",
        cold * 1000,
        "ms",
        compare="interpreter and imports included",
    )
    measure = Measure(process.pid)
    connector = aiohttp.TCPConnector(limit=concurrency + watchers + 4)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            async with session.post(
                url + "/api/v1/namespaces", json={"metadata": {"name": _NS}}
            ) as response:
                await response.read()
            await _create_all(session, url, 200, concurrency, "warm")
            phase = await measure.run(
                asyncio.ensure_future(_create_all(session, url, creates, concurrency, "a"))
            )
            _report.figure(
                f"creates/s ({concurrency} concurrent clients)",
                creates / phase.wall,
                "/s",
                compare="target: 1,000/s",
            )
            print(f"   {phase.verdict()}")
            async with session.get(url + _CM, params={"limit": "1"}) as response:
                rv = (await response.json())["metadata"]["resourceVersion"]
            readies = [asyncio.Event() for _ in range(watchers)]

            async def fan_out() -> None:
                async with asyncio.TaskGroup() as group:
                    for n, ready in enumerate(readies):
                        group.create_task(
                            _watch(session, url, rv, creates, ready), name=f"watcher-{n}"
                        )
                    for ready in readies:
                        await ready.wait()
                    group.create_task(
                        _create_all(session, url, creates, concurrency, "b"), name="creates"
                    )

            phase = await measure.run(asyncio.ensure_future(fan_out()))
            events = watchers * creates
            _report.figure(
                f"watch events/s ({watchers} watchers, creating)",
                events / phase.wall,
                "/s",
                compare="target: 10,000/s",
            )
            _report.figure("  creates/s meanwhile", creates / phase.wall, "/s")
            print(f"   {phase.verdict()}")

            async def replay() -> None:
                async with asyncio.TaskGroup() as group:
                    for n in range(watchers):
                        group.create_task(
                            _watch(session, url, rv, creates, asyncio.Event()), name=f"replay-{n}"
                        )

            phase = await measure.run(asyncio.ensure_future(replay()))
            _report.figure(
                f"watch events/s ({watchers} watchers, replay)",
                watchers * creates / phase.wall,
                "/s",
                compare="target: 10,000/s",
            )
            print(f"   {phase.verdict()}")
    finally:
        process.terminate()
        await process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=5000)
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    configure(fmt="console", level="warning")
    asyncio.run(main(args.creates, args.watchers, args.concurrency))
