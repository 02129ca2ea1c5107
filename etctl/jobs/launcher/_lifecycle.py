"""A launcher/worker job's lifecycle: when the launcher may start, and what its fate means.

A kind describes one job with a :class:`LauncherJob` (built from its own model: names, status and
membership fields are its own) and gets the launcher's gate and the job's verdict from it.

**Gate** (:func:`launcher_gate`): the launcher waits until every target worker runs (or, for kinds
that ask, runs and is Ready) and is a member; meanwhile ``<Launcher>Created`` is False with reason
``WorkersNotReady`` and a message counting them, and the job fails with that message when the
workers are not all up ``timeout`` seconds after the job started (or restarted).

**A launcher that vanished** (:func:`launcher_vanished`: it provably existed and there is no pod
any more while workers remain) is created again when the launcher's restartPolicy is Always, with
a Warning Event ``<Kind><Launcher>Vanished`` once it is; otherwise the job fails at once, reason
``<Kind>Failed`` (et-operator's rule, whatever phase the launcher had reached). A launcher gone
together with every worker is a restart: the job waits for its workers again. A whole-job restart
deletes the launcher on purpose, and so does a suspension: neither makes it vanish. A resumed job
starts over (workers, then a new launcher), and only that launcher's vanishing fails it.

*Provably existed* means recorded from the launcher pod itself: ``<Launcher>Created`` True with
reason :data:`~etctl.common.PODS_CREATED` (the job controller writes it only from a pod it created
or found, with that pod's name and uid), or the launcher counted in the job's recorded replica
status (a Running, Succeeded or Failed pod). The decision to create a launcher proves nothing: a
create that failed, or that a stopping operator never sent, leaves no such record, and a job whose
launcher was never created gets one. (Earlier versions wrote ``<Launcher>Created`` True, reason
``GateOpened``, before the create; such a record is not taken as proof.)

``<Launcher>Created`` is derived from the world: every round that finds the launcher pod records
it (the gate opens with ``record``, and the job controller asks the gate even when nothing is to be
created), so a status write lost after the launcher was created (a crash between the two) is made
good by the next round, and a launcher gone afterwards is judged as vanished. A launcher created
and deleted again while no operator ran at all leaves no trace to judge by: it is created again.

**Verdict** (:func:`launcher_verdict`): the launcher decides, as et-operator's
``syncLauncherState``: Running is ``<Kind>Running``; Succeeded is ``<Kind>Succeeded``; Failed is
``<Kind>Failed``, or ``<Kind>Evicted`` when the kubelet evicted it, with the launcher's reason,
message or exit code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from etctl.common import (
    ConditionStatus,
    Gate,
    JobConditionType,
    JobState,
    JobStatus,
    RestartPolicy,
    Verdict,
    get_condition,
    is_true,
    pods_created,
)
from etctl.runtime import ObjectView, objects, podview

__all__ = [
    "DEFAULT_WORKERS_READY_TIMEOUT",
    "LauncherJob",
    "launcher_gate",
    "launcher_vanished",
    "launcher_verdict",
    "vanished_message",
    "workers_ready",
]

DEFAULT_WORKERS_READY_TIMEOUT = 600.0
"""Seconds a job waits for all its workers to run before it fails."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LauncherJob:
    """What the lifecycle reads of one launcher/worker job.

    Attributes:
        kind: the job's kind (reasons and messages).
        name: the job's name.
        status: the job's status as stored (conditions, start time, recorded replica statuses).
        targets: the workers the job should have.
        current: the members (the workers in the hostfile).
        launcher: the launcher pod's name.
        launcher_restart_policy: the launcher replica's restartPolicy.
        launcher_type: the launcher's replica type.
        worker_type: the workers' replica type.
        wait_for_ready: the launcher waits for Ready workers, not merely running ones.
    """

    kind: str
    name: str
    status: JobStatus
    targets: tuple[str, ...]
    current: tuple[str, ...]
    launcher: str
    launcher_restart_policy: RestartPolicy = RestartPolicy.NEVER
    launcher_type: str = "Launcher"
    worker_type: str = "Worker"
    wait_for_ready: bool = False

    @property
    def created_condition(self) -> str:
        """The condition the launcher's gate reports (``LauncherCreated``)."""
        return f"{self.launcher_type}Created"


def workers_ready(job: LauncherJob, state: JobState[Any]) -> tuple[bool, int, int]:
    """``(every target is up and a member, targets up, targets)``."""

    def up(pod: ObjectView) -> bool:
        return (
            podview.running_and_ready(pod)
            if job.wait_for_ready
            else podview.phase(pod) == "Running"
        )

    running = {objects.name(p) for p in state.pods_of(job.worker_type) if up(p)}
    count = sum(1 for name in job.targets if name in running)
    ready = bool(job.targets) and count == len(job.targets) and set(job.current) == set(job.targets)
    return ready, count, len(job.targets)


def launcher_vanished(job: LauncherJob, state: JobState[Any]) -> bool:
    """The launcher provably existed and has no pod now, while workers remain.

    Not when a whole-job restart or a suspension deleted it on purpose (see the module docstring).
    """
    if state.pods_of(job.launcher_type):
        return False
    conditions = job.status.conditions
    if is_true(conditions, JobConditionType.RESTARTING):
        return False  # a whole-job restart deleted it on purpose
    if is_true(conditions, JobConditionType.SUSPENDED):
        # The suspension deleted it. The round that resumes the job still reads Suspended: its
        # gate finds the workers not up and writes <Launcher>Created False with the resumption,
        # so the launcher of the resumed run is the one a later vanishing is judged by.
        return False
    if not state.pods_of(job.worker_type):
        # Gone with every worker: a whole-job restart whose record was not written yet (or a
        # loss of everything). The job starts again rather than failing.
        return False
    if pods_created(conditions, job.launcher_type):
        return True  # created, whatever its phase was: a Pending pod is in no count
    recorded = job.status.replica_statuses.get(job.launcher_type)
    return recorded is not None and recorded.active + recorded.succeeded + recorded.failed > 0


def vanished_message(job: LauncherJob, *, again: str) -> str:
    """The Warning Event's message when a vanished launcher is created again (``again``: why)."""
    return f"launcher {job.launcher} of {job.kind} {job.name} vanished; created again: {again}"


def _waiting_since(job: LauncherJob, now: datetime) -> datetime:
    since = job.status.start_time or now
    restarting = get_condition(job.status.conditions, JobConditionType.RESTARTING)
    if (
        restarting is not None
        and restarting.status is ConditionStatus.TRUE
        and restarting.last_transition_time is not None
    ):
        since = max(since, restarting.last_transition_time)
    return since


def launcher_gate(job: LauncherJob, state: JobState[Any], *, timeout: float) -> Gate:
    """Whether the launcher pod may be created now (see the module docstring)."""
    if state.pods_of(job.launcher_type):
        # It exists: <Launcher>Created is recorded from the world on every round, whichever
        # status write recorded it before (or was lost: a crash between the create and the write).
        return Gate.opened(record=True)
    if launcher_vanished(job, state):
        policy = job.launcher_restart_policy
        if policy is RestartPolicy.ALWAYS:
            again = vanished_message(job, again="its restartPolicy is Always")
            return Gate.opened(record=True, vanished=again)
        return Gate(
            open=False,
            reason=f"{job.kind}Failed",
            message=(
                f"launcher pod {job.launcher} of {job.kind} {job.name} vanished and its "
                f"restartPolicy {policy.value} does not recreate it (Always would)"
            ),
            fail_at=state.now,
        )
    ready, up, total = workers_ready(job, state)
    if ready:
        # <Launcher>Created, written once the launcher exists, is what tells a vanished Pending
        # launcher from one never created: it must be recorded even when the round that saw the
        # gate closed lost its status write.
        return Gate.opened(record=True)
    what = "running and ready" if job.wait_for_ready else "running"
    return Gate(
        open=False,
        reason="WorkersNotReady",
        message=(
            f"{up} of {total} workers of {job.kind} {job.name} are {what} members; "
            f"the launcher starts when all are (waiting at most {timeout:g} s)"
        ),
        fail_at=_waiting_since(job, state.now) + timedelta(seconds=timeout),
    )


def launcher_verdict(job: LauncherJob, state: JobState[Any]) -> Verdict | None:
    """What the launcher's phase means for the job, or None while it has none yet."""
    pods = state.pods_of(job.launcher_type)
    if not pods:
        return None
    launcher = pods[0]
    kind, name = job.kind, job.name
    pod = objects.name(launcher)
    phase = podview.phase(launcher)
    if phase == "Running":
        return Verdict(JobConditionType.RUNNING, f"{kind}Running", f"{kind} {name} is running.")
    if phase == "Succeeded":
        return Verdict(
            JobConditionType.SUCCEEDED,
            f"{kind}Succeeded",
            f"{kind} {name} succeeded: launcher {pod} completed.",
        )
    if phase == "Failed":
        evicted = podview.reason(launcher) == "Evicted"
        return Verdict(
            JobConditionType.FAILED,
            f"{kind}Evicted" if evicted else f"{kind}Failed",
            f"{kind} {name} failed: launcher {pod} failed ({podview.failure(launcher)}).",
        )
    return None
