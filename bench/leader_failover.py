"""Failover of ``etctl run --leader-elect`` with real processes: takeover time, deposed writes.

Run: ``.venv/bin/python bench/leader_failover.py [--rounds N] [--lease 5 3.5 1] [--jobs J]``

Two replicas of the operator run as processes against the embedded API server of this process
(with the simulated kubelet); every round stops the leader (SIGSTOP) just after it sent a renew,
lets the standby take the Lease over while new TFJobs arrive, then resumes the old leader
(SIGCONT) and restarts it once it has exited (see ``tests/cli/_failover.py``). Printed:

* takeover: from the stop to the standby holding the Lease: the lease duration after the standby
  *saw* the last renew, plus up to one of its polls (``2.2 * retry_period``), as in client-go;
* writes the deposed leader sent after the takeover, from the server's request log: must be 0.
  Before leader-only writes were fenced, the same drill measured 7 to 11 per round (48 in 5 rounds
  at 5/3.5/1 s, 16 in 2 rounds at the defaults): TFJob status patches that succeeded, Events, even
  pod and Service creates;
* how long the old leader took to exit after it resumed, and with what status (1: it lost the
  lease and exits for a new process to stand).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the drill lives with the tests
from tests.cli._failover import Drill, prepare, server


async def main(rounds: int, lease: tuple[float, float, float], jobs: int) -> None:
    _report.header(
        f"leader failover, real processes: lease {lease[0]:g}s, renew deadline {lease[1]:g}s, "
        f"retry {lease[2]:g}s; {jobs} TFJobs created during each pause"
    )
    takeovers: list[float] = []
    deposed = 0
    exits: list[int | None] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with server() as api:
            await prepare(api)
            drill = Drill(api, Path(tmp), lease=lease)
            try:
                await drill.start("replica-a")
                await drill.start("replica-b")
                for index in range(1, rounds + 1):
                    started = time.monotonic()
                    result = await drill.paused_leader(jobs=jobs)
                    takeovers.append(result.takeover)
                    deposed += len(result.deposed_writes)
                    exits.append(result.deposed_exit)
                    writes = ", ".join(
                        f"{r.verb} {r.resource}/{r.subresource or ''} {r.name}"
                        for r in result.deposed_writes[:5]
                    )
                    print(
                        f"   round {index}: takeover {result.takeover:.2f}s, paused "
                        f"{result.paused:.2f}s, deposed writes {len(result.deposed_writes)}"
                        f"{' (' + writes + ')' if writes else ''}, exit {result.deposed_exit}, "
                        f"successor writes {result.successor_writes} "
                        f"[{time.monotonic() - started:.1f}s]"
                    )
                    for user, replica in list(drill.replicas.items()):
                        if replica.process.returncode is not None:
                            await drill.start(user)
            finally:
                await drill.stop()
    _report.figure(
        "takeover after the leader stopped (median)",
        statistics.median(takeovers),
        "s",
        compare=f"lease {lease[0]:g}s; max {max(takeovers):.2f}s",
    )
    _report.figure(
        "writes by a deposed leader after the takeover",
        deposed,
        "",
        compare=f"must be 0; {rounds} rounds; before fencing 7-11 per round",
    )
    _report.figure(
        "deposed leaders that exited with status 1",
        sum(1 for code in exits if code == 1),
        f"of {rounds}",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--lease",
        type=float,
        nargs=3,
        default=(5.0, 3.5, 1.0),
        metavar=("DURATION", "RENEW_DEADLINE", "RETRY"),
    )
    parser.add_argument("--jobs", type=int, default=4, help="TFJobs created during each pause")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, tuple(args.lease), args.jobs))
