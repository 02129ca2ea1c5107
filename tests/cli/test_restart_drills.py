"""An operator restart never fails a job, and an ambiguous write never rolls a scaler back.

Drills with real processes (:mod:`tests.cli._restart`): ``etctl run`` replicas against the
embedded API server of this process, stopped with SIGTERM in the middle of a burst of launcher
jobs, frozen past their Lease while a standby takes over, replaced one by one as a Deployment's
rolling update replaces them, killed with SIGKILL
between a scaler's record and its exec, and answered by a server that commits a write and drops
its answer. The outcomes do not depend on timing: every job runs, nothing says a launcher was
created before it was, no script runs twice, and none is rolled back unless it may have run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.cli._failover import Drill, prepare, server
from tests.cli._restart import (
    CRDS,
    LOST_LEASE,
    drill_for,
    killed_between,
    lease_lost_burst,
    lost_answers,
    rolling_update,
    sigterm_burst,
)

pytestmark = [
    pytest.mark.etctl_hooks("the embedded server's commits, request log and fault injection"),
    pytest.mark.timeout(300),
]


@asynccontextmanager
async def drill(tmp_path: Path, **options: Any) -> AsyncIterator[Drill]:
    async with server(nodes=4, crds=CRDS, gpus=64) as api:
        await prepare(api)
        found = drill_for(api, tmp_path, **options)
        try:
            yield found
        finally:
            await found.stop()


@pytest.mark.parametrize(("kind", "restarts", "seed"), [("trainingjob", 2, 1), ("mpijob", 3, 2)])
async def test_sigterm_in_a_burst_of_launcher_jobs_fails_none(
    tmp_path: Path, kind: str, restarts: int, seed: int
) -> None:
    async with drill(tmp_path) as found:
        burst = await sigterm_burst(found, kind, jobs=30, restarts=restarts, seed=seed)
    assert burst.jobs.failed == {}
    assert dict(burst.jobs.states) == {"Running": 30}
    assert burst.premature == []  # no launcher was said created before its pod existed
    assert [stop.exit for stop in burst.stops] == [0] * restarts  # each stop was clean


async def test_a_rolling_update_of_two_replicas_fails_no_starting_job(tmp_path: Path) -> None:
    async with drill(tmp_path) as found:
        rollout = await rolling_update(found, jobs=40, seed=1)
    assert rollout.jobs.failed == {}
    assert dict(rollout.jobs.states) == {"Running": 40}
    assert rollout.premature == []
    assert [stop.exit for stop in rollout.stops] == [0, 0]


async def test_a_lost_lease_in_a_burst_of_launcher_jobs_fails_none(tmp_path: Path) -> None:
    async with drill(tmp_path, lease=LOST_LEASE) as found:
        takeover = await lease_lost_burst(found, "trainingjob", jobs=20, seed=1)
    assert takeover.jobs.failed == {}
    assert dict(takeover.jobs.states) == {"Running": 20}
    assert takeover.premature == []
    assert takeover.deposed_writes == []  # fenced from the renew deadline on
    assert takeover.deposed_exit == 1  # it exits for a new process to stand


async def test_a_dropped_answer_never_rolls_back_a_scaler_whose_script_never_ran(
    tmp_path: Path,
) -> None:
    async with drill(tmp_path) as found:
        scaled = await lost_answers(found, jobs=2, scalers=2)
    assert [s.outcome for s in scaled] == [("ScaleSucceeded", "ScalingOutSucceeded")] * 4
    # Two scalers per job, each adding a worker to the two it started with; one run each.
    final = {s.name.rsplit("-grow-", 1)[0]: s for s in scaled}
    assert {job: (s.runs, s.workers) for job, s in final.items()} == {
        "job-0": (2, 4),
        "job-1": (2, 4),
    }


@pytest.mark.parametrize(
    ("marker", "outcome", "runs", "workers"),
    [
        # The step decided, its script never sent: the next operator sends it, once.
        pytest.param(
            '"step":"Script"', ("ScaleSucceeded", "ScalingOutSucceeded"), 1, 3, id="before-marker"
        ),
        # Marked: it may have run; it is not run again and the scale-out is rolled back.
        pytest.param(
            "ScriptSending", ("ScaleFailed", "ScriptInterrupted"), 0, 2, id="after-marker"
        ),
    ],
)
async def test_sigkill_between_a_steps_record_and_its_exec_runs_no_script_twice(
    tmp_path: Path, marker: str, outcome: tuple[str, str], runs: int, workers: int
) -> None:
    async with drill(tmp_path) as found:
        scaled = await killed_between(found, marker=marker)
    assert (scaled.outcome, scaled.runs, scaled.workers) == (outcome, runs, workers)
