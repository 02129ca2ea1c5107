"""Restart drills, repeated: jobs and scalers through SIGTERM, rollouts, lost answers, SIGKILL.

Run: ``.venv/bin/python bench/restart_drills.py [--runs N] [--jobs J] [--drills NAME ...]``

The drills of ``tests/cli/test_restart_drills.py`` (``tests/cli/_restart.py``), each run ``--runs``
times with seeds 1..N against a fresh embedded API server of this process, with ``etctl run`` as
child processes. Printed per drill: runs, jobs (or scalers) in all, how many ended wrong, and the
stops' exit statuses and durations. What must hold, every run:

* ``burst-trainingjob``, ``burst-mpijob``: SIGTERM at seeded points of a burst of launcher jobs
  (2 stops per run), a new operator after each: 0 Failed, 0 launchers recorded as created before
  their pod existed. Before launcher records came from the pod, 4 of 40 TrainingJobs failed per
  run of this drill, and MPIJobs were recorded ``LauncherCreated`` with no launcher;
* ``lease-lost``: two replicas with leader election (3/2/0.4 s); the leader frozen (SIGSTOP) past
  its Lease at a seeded point of a burst (TrainingJobs on odd seeds, MPIJobs on even ones), then
  resumed: 0 Failed, 0 writes by the deposed leader after the takeover, which exits 1;
* ``rolling``: two replicas with leader election replaced one by one while jobs of both kinds
  start: 0 Failed (1-2 of 40 before);
* ``lost``: every Script step's decision and attempt marker committed with its answer dropped:
  0 scalers rolled back, every script run exactly once (before: rolled back as interrupted);
* ``killed``: SIGKILL while the answer of a Script step's write is held, a new operator: the
  documented outcome (decided: run once; marked: interrupted, not run), never twice.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import _report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the drills live with the tests
from tests.cli._failover import Drill, prepare, server
from tests.cli._restart import (
    CRDS,
    LEASE,
    LOST_LEASE,
    Stop,
    drill_for,
    killed_between,
    lease_lost_burst,
    lost_answers,
    rolling_update,
    sigterm_burst,
)

DRILLS = ("burst-trainingjob", "burst-mpijob", "lease-lost", "rolling", "lost", "killed")


class Tally:
    """Counts of one drill over its runs."""

    def __init__(self) -> None:
        self.runs = 0
        self.items = 0
        self.wrong = 0
        self.notes: Counter[str] = Counter()
        self.stops: list[Stop] = []
        self.seconds: list[float] = []

    def report(self, name: str, unit: str, must: str) -> None:
        _report.figure(f"{name}: {unit} ended wrong", self.wrong, f"of {self.items}", compare=must)
        if self.stops:
            exits = Counter(str(stop.exit) for stop in self.stops)
            durations = [stop.seconds for stop in self.stops]
            _report.figure(
                f"{name}: stop took (median)",
                statistics.median(durations),
                "s",
                compare=f"max {max(durations):.2f}s; exits {dict(exits)}; {len(durations)} stops",
            )
        for note, count in sorted(self.notes.items()):
            print(f"   {name}: {note}: {count}")
        _report.figure(f"{name}: one run (median)", statistics.median(self.seconds), "s")


async def run(name: str, drill: Drill, seed: int, jobs: int, tally: Tally) -> None:
    if name.startswith("burst-"):
        kind = name.removeprefix("burst-")
        burst = await sigterm_burst(drill, kind, jobs=jobs, restarts=2, seed=seed)
        tally.items += burst.jobs.total
        tally.wrong += len(burst.jobs.failed) + burst.jobs.states["Starting"]
        tally.notes["launchers recorded before their pod"] += len(burst.premature)
        tally.stops += burst.stops
    elif name == "lease-lost":
        kind = "trainingjob" if seed % 2 else "mpijob"
        takeover = await lease_lost_burst(drill, kind, jobs=jobs, seed=seed)
        tally.items += takeover.jobs.total
        tally.wrong += len(takeover.jobs.failed) + takeover.jobs.states["Starting"]
        tally.notes["launchers recorded before their pod"] += len(takeover.premature)
        tally.notes["writes by a deposed leader"] += len(takeover.deposed_writes)
        tally.notes[f"deposed leaders that exited {takeover.deposed_exit}"] += 1
    elif name == "rolling":
        rollout = await rolling_update(drill, jobs=jobs, seed=seed)
        tally.items += rollout.jobs.total
        tally.wrong += len(rollout.jobs.failed) + rollout.jobs.states["Starting"]
        tally.notes["launchers recorded before their pod"] += len(rollout.premature)
        tally.stops += rollout.stops
    elif name == "lost":
        scaled = await lost_answers(drill, jobs=2, scalers=2)
        tally.items += len(scaled)
        tally.wrong += sum(1 for s in scaled if s.outcome[0] != "ScaleSucceeded")
        final = {s.name.rsplit("-grow-", 1)[0]: s.runs for s in scaled}
        tally.notes["script runs (must equal scalers)"] += sum(final.values())
    else:
        marker = '"step":"Script"' if seed % 2 else "ScriptSending"
        killed = await killed_between(drill, marker=marker)
        tally.items += 1
        expected = (
            (("ScaleSucceeded", "ScalingOutSucceeded"), 1)
            if seed % 2
            else (("ScaleFailed", "ScriptInterrupted"), 0)
        )
        tally.wrong += (killed.outcome, killed.runs) != expected
        tally.notes[f"killed {'before' if seed % 2 else 'after'} the marker: script runs"] += (
            killed.runs
        )


async def main(runs: int, jobs: int, drills: list[str]) -> None:
    _report.header(
        f"restart drills, real processes: {runs} runs each, {jobs} jobs per burst or rollout"
    )
    for name in drills:
        tally = Tally()
        for seed in range(1, runs + 1):
            started = time.monotonic()
            with tempfile.TemporaryDirectory() as tmp:
                async with server(nodes=4, crds=CRDS, gpus=64) as api:
                    await prepare(api)
                    lease = LOST_LEASE if name == "lease-lost" else LEASE
                    drill = drill_for(api, Path(tmp), lease=lease)
                    try:
                        await run(name, drill, seed, jobs, tally)
                    finally:
                        await drill.stop()
            tally.runs += 1
            tally.seconds.append(time.monotonic() - started)
        unit = "scalers" if name in ("lost", "killed") else "jobs"
        tally.report(name, unit, "must be 0")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=40, help="jobs per burst or rollout")
    parser.add_argument("--drills", nargs="+", choices=DRILLS, default=list(DRILLS))
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.jobs, args.drills))
