"""The launcher's gate and verdict for any kind: names, reasons and readiness are the kind's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from etctl.common import JobConditionType, JobSettings, JobState, JobStatus, RestartPolicy
from etctl.jobs.launcher import LauncherJob, launcher_gate, launcher_verdict, workers_ready

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
TARGETS = ("pi-worker-0", "pi-worker-1")


def pod(name: str, phase: str = "Running", *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def job(status: dict[str, Any] | None = None, **changes: Any) -> LauncherJob:
    fields: dict[str, Any] = {
        "kind": "MPIJob",
        "name": "pi",
        "status": JobStatus.model_validate(status or {}),
        "targets": TARGETS,
        "current": TARGETS,
        "launcher": "pi-launcher",
        **changes,
    }
    return LauncherJob(**fields)


def state(
    workers: list[dict[str, Any]], launchers: tuple[dict[str, Any], ...] = ()
) -> JobState[Any]:
    return JobState(
        job=None,
        pods={"Worker": tuple(workers), "Launcher": tuple(launchers)},
        services={},
        children={},
        replica_statuses={},
        now=NOW,
        settings=JobSettings(),
    )


def test_a_kind_may_wait_for_ready_workers() -> None:
    workers = [pod("pi-worker-0"), pod("pi-worker-1", ready=False)]
    assert workers_ready(job(), state(workers)) == (True, 2, 2)
    ready = job(wait_for_ready=True)
    assert workers_ready(ready, state(workers)) == (False, 1, 2)
    gate = launcher_gate(ready, state(workers), timeout=60)
    assert not gate.open
    assert gate.message.startswith("1 of 2 workers of MPIJob pi are running and ready members")


def test_reasons_and_messages_are_the_kinds() -> None:
    created = {
        "conditions": [{"type": "LauncherCreated", "status": "True", "reason": "PodsCreated"}]
    }
    gate = launcher_gate(job(created), state([pod("pi-worker-0")]), timeout=60)
    assert (gate.open, gate.reason) == (False, "MPIJobFailed")
    assert gate.message.startswith("launcher pod pi-launcher of MPIJob pi vanished")
    always = job(created, launcher_restart_policy=RestartPolicy.ALWAYS)
    assert launcher_gate(always, state([pod("pi-worker-0")]), timeout=60).open
    verdict = launcher_verdict(job(), state([], (pod("pi-launcher"),)))
    assert verdict is not None
    assert (verdict.condition, verdict.reason) == (JobConditionType.RUNNING, "MPIJobRunning")


def test_a_suspension_or_a_restart_does_not_make_it_vanish() -> None:
    for held in ("Suspended", "Restarting"):
        status = {
            "conditions": [
                {"type": "LauncherCreated", "status": "True", "reason": "PodsCreated"},
                {"type": held, "status": "True"},
            ]
        }
        gate = launcher_gate(job(status), state([pod("pi-worker-0", "Pending")]), timeout=60)
        assert gate.reason == "WorkersNotReady", held


def test_an_existing_launcher_is_recorded() -> None:
    gate = launcher_gate(job(), state([], (pod("pi-launcher", "Pending"),)), timeout=60)
    assert gate.open
    assert gate.record
