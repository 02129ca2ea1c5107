"""Leader election on the real clock against the embedded API server: handover, takeover, fencing.

Run: ``.venv/bin/python bench/leader_election.py [--rounds N] [--scale S]``

Durations are the defaults (lease 15 s, renew deadline 10 s, retry 2 s) times ``--scale`` (0.1 by
default), so a round takes seconds. Figures are in units of the scaled durations:

* handover after a release: how long a standby takes to lead once the leader released the Lease.
  The baseline is client-go without ``ReleaseOnCancel`` (controller-runtime's default), where the
  standby waits a whole lease duration;
* takeover after a kill: from the dead leader's last renew to the standby leading (at least the
  lease duration, as the written ``leaseDurationSeconds`` is whole seconds, rounded up);
* fencing: from the last good renew to the leader giving up while every renew hangs, and the margin
  left before a standby may take over. kubernetes_asyncio's elector has no request timeout, so a
  hung renew there never ends (no loss is ever declared).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _report
from etctl.errors import LeaderElectionLost
from etctl.log import configure
from etctl.runtime import Client, ClientOptions, RealClock
from etctl.runtime._leader import LeaderElectionConfig, LeaderElector, LeaderState
from etctl.testing import ApiServer, Fault


async def _until(condition: Callable[[], bool], *, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            msg = "the election did not get there in time"
            raise RuntimeError(msg)
        await asyncio.sleep(0.001)


class Bench:
    def __init__(self, server: ApiServer, client: Client, scale: float) -> None:
        self.server = server
        self.client = client
        self.scale = scale
        self.rounds = 0

    def pair(self) -> tuple[LeaderElector, LeaderElector]:
        self.rounds += 1
        lease = f"bench-{self.rounds}"
        electors = []
        for identity in ("a", "b"):
            config = LeaderElectionConfig(
                name=lease,
                namespace="default",
                identity=identity,
                lease_duration=15.0 * self.scale,
                renew_deadline=10.0 * self.scale,
                retry_period=2.0 * self.scale,
            )
            electors.append(LeaderElector(self.client, config, clock=RealClock()))
        return electors[0], electors[1]

    async def handover(self) -> float:
        a, b = self.pair()
        await a.acquire()
        async with asyncio.TaskGroup() as group:
            standby = group.create_task(b.acquire())
            await _until(lambda: b.state is LeaderState.STANDBY)
            await a.release()
            released = time.monotonic()
            await standby
        return time.monotonic() - released

    async def takeover(self) -> float:
        a, b = self.pair()
        await a.acquire()  # and never renews: the process is gone
        assert a.renewed_at is not None
        async with asyncio.TaskGroup() as group:
            group.create_task(b.acquire())
            await _until(lambda: b.is_leader)
        return time.monotonic() - a.renewed_at

    async def fencing(self) -> tuple[float, float]:
        a, _ = self.pair()
        await a.acquire()
        hang = self.server.faults.add(
            Fault(verb="update", resource="leases", name=a.config.name, delay=3600, times=None)
        )
        try:
            try:
                await a.hold()
            except LeaderElectionLost:
                lost = time.monotonic()
        finally:
            self.server.faults.remove(hang)
        assert a.renewed_at is not None
        assert a.fence_deadline is not None
        return lost - a.renewed_at, a.fence_deadline - lost


async def main(rounds: int, scale: float) -> None:
    configure(fmt="console", level="critical")  # the failures provoked here log errors on purpose
    _report.header(f"leader election, real clock, durations x{scale:g}")
    async with ApiServer() as server:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            options = ClientOptions(request_timeout=30)
            async with Client.connect(kubeconfig, options=options) as client:
                bench = Bench(server, client, scale)
                lease, retry, deadline = 15e3 * scale, 2e3 * scale, 10e3 * scale  # in ms
                handovers = [await bench.handover() * 1e3 for _ in range(rounds)]
                _report.figure(
                    "handover after a release, mean",
                    statistics.mean(handovers),
                    "ms",
                    compare=f"<= 2.2 x retry = {2.2 * retry:.0f} ms; no release: {lease:.0f} ms",
                )
                _report.figure("handover after a release, max", max(handovers), "ms")
                takeovers = [await bench.takeover() * 1e3 for _ in range(rounds)]
                _report.figure(
                    "takeover after a kill, mean",
                    statistics.mean(takeovers),
                    "ms",
                    compare=f">= lease, {lease:.0f} ms rounded up to whole seconds",
                )
                fences = [await bench.fencing() for _ in range(rounds)]
                _report.figure(
                    "hung renews: loss after the last renew, mean",
                    statistics.mean(f[0] for f in fences) * 1e3,
                    "ms",
                    compare=f"renew deadline {deadline:.0f} ms; never without timeouts",
                )
                _report.figure(
                    "hung renews: margin before others may lead, min",
                    min(f[1] for f in fences) * 1e3,
                    "ms",
                    compare=f"lease - renew deadline = {lease - deadline:.0f} ms",
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scale", type=float, default=0.1)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.scale))
