"""What a user sees of one TrainingJob through the API, and what changed between two looks.

:func:`snapshot` condenses what ``kubectl get`` would show (the job, its pods, and the
ScaleOut/ScaleIn objects that name it, :func:`selects`) into a :class:`Snapshot`: the few fields a
person follows, so that two snapshots compare equal when nothing worth telling changed.

:func:`changes` compares two snapshots and describes each difference in a few words (a pod went
from ``ContainerCreating`` to ``Running``, a scaler moved to its ``Joining`` step, the hostfile
gained a worker), in a stable order: the job, then pods by name, then scalers by name.

Pod statuses are worded as ``kubectl get pods`` words them (``Terminating``, ``Evicted``,
``ContainerCreating``, ``Init:0/1``), since that is what a user would compare them with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from etctl.cli._timeline import Tone
from etctl.runtime import ObjectView, objects

__all__ = [
    "Change",
    "JobView",
    "PodView",
    "ScalerView",
    "Snapshot",
    "changes",
    "pod_status",
    "selects",
    "snapshot",
]

_FINISHED_SCALER = frozenset({"ScaleSucceeded", "ScaleFailed"})
_GOOD_PHASES = frozenset({"Running", "Succeeded"})
_BAD_PHASES = frozenset({"Failed"})


@dataclass(frozen=True, slots=True)
class JobView:
    """The parts of a TrainingJob's status the demo follows.

    Attributes:
        phase: ``status.phase`` (empty until the operator wrote one).
        targets: ``status.targetWorkers``: the pods the job should have.
        members: ``status.currentWorkers``: the running members, i.e. the hostfile.
        replicas: ``spec.etReplicaSpecs.worker.replicas``.
    """

    phase: str
    targets: tuple[str, ...]
    members: tuple[str, ...]
    replicas: int


@dataclass(frozen=True, slots=True)
class PodView:
    """One pod as ``kubectl get pods -o wide`` shows it."""

    name: str
    status: str
    node: str
    ip: str


@dataclass(frozen=True, slots=True)
class ScalerView:
    """One ScaleOut or ScaleIn.

    Attributes:
        kind: ``ScaleOut`` or ``ScaleIn``.
        name: its name.
        step: ``status.step`` (empty before the operator picked it up).
        chosen: the workers it adds (``status.addPods``) or removes (``status.toDeletePods``).
        outcome: ``(type, reason, message)`` of its final condition once it finished.
    """

    kind: str
    name: str
    step: str
    chosen: tuple[str, ...]
    outcome: tuple[str, str, str] | None

    @property
    def subject(self) -> str:
        """``scaleout/<name>``, as kubectl names it."""
        return f"{self.kind.lower()}/{self.name}"

    @property
    def succeeded(self) -> bool:
        """True once it finished with ``ScaleSucceeded``."""
        return self.outcome is not None and self.outcome[0] == "ScaleSucceeded"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One look at a job: the job (None when absent), its pods and its scalers, by name."""

    job: JobView | None
    pods: Mapping[str, PodView]
    scalers: Mapping[str, ScalerView]

    def running(self, *names: str) -> bool:
        """True when every named pod exists and is Running."""
        return all(name in self.pods and self.pods[name].status == "Running" for name in names)


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between two looks: what changed and how."""

    subject: str
    what: str
    tone: Tone = Tone.PLAIN


def pod_status(pod: ObjectView) -> str:
    """The STATUS column of ``kubectl get pods`` for ``pod`` (the common cases)."""
    if objects.meta(pod).get("deletionTimestamp"):
        return "Terminating"
    status: Mapping[str, Any] = pod.get("status") or {}
    if status.get("reason"):
        return str(status["reason"])
    inits: Sequence[Mapping[str, Any]] = status.get("initContainerStatuses") or []
    finished = sum(
        1 for s in inits if (s.get("state") or {}).get("terminated", {}).get("exitCode") == 0
    )
    if inits and finished < len(inits):
        return f"Init:{finished}/{len(inits)}"
    phase = str(status.get("phase") or "Pending")
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            reason = (state.get(key) or {}).get("reason")
            if reason:
                return str(reason)
    if phase == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
        return "Pending"
    return phase


def _job_view(job: ObjectView) -> JobView:
    status: Mapping[str, Any] = job.get("status") or {}
    worker = ((job.get("spec") or {}).get("etReplicaSpecs") or {}).get("worker") or {}
    return JobView(
        phase=str(status.get("phase") or ""),
        targets=tuple(status.get("targetWorkers") or ()),
        members=tuple(status.get("currentWorkers") or ()),
        replicas=int(worker.get("replicas") or 0),
    )


def _pod_view(pod: ObjectView) -> PodView:
    status: Mapping[str, Any] = pod.get("status") or {}
    return PodView(
        name=objects.name(pod),
        status=pod_status(pod),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        ip=str(status.get("podIP") or ""),
    )


def _scaler_view(scaler: ObjectView) -> ScalerView:
    status: Mapping[str, Any] = scaler.get("status") or {}
    outcome = None
    for condition in status.get("conditions") or []:
        if condition.get("type") in _FINISHED_SCALER and condition.get("status") == "True":
            outcome = (
                str(condition["type"]),
                str(condition.get("reason") or ""),
                str(condition.get("message") or ""),
            )
    chosen = status.get("addPods") or status.get("toDeletePods") or ()
    return ScalerView(
        kind=str(scaler.get("kind") or ""),
        name=objects.name(scaler),
        step=str(status.get("step") or ""),
        chosen=tuple(chosen),
        outcome=outcome,
    )


def snapshot(
    job: ObjectView | None, pods: Iterable[ObjectView], scalers: Iterable[ObjectView]
) -> Snapshot:
    """Condense the job (None when absent), its pods and its scalers into a :class:`Snapshot`."""
    views = {view.name: view for view in map(_pod_view, pods)}
    scaler_views = {view.subject: view for view in map(_scaler_view, scalers)}
    return Snapshot(
        job=None if job is None else _job_view(job),
        pods=dict(sorted(views.items())),
        scalers=dict(sorted(scaler_views.items())),
    )


def selects(scaler: ObjectView, job: str) -> bool:
    """True when a ScaleOut or ScaleIn names ``job`` (``spec.selector.name``)."""
    return bool(((scaler.get("spec") or {}).get("selector") or {}).get("name") == job)


def _phase_tone(phase: str) -> Tone:
    if phase in _GOOD_PHASES:
        return Tone.GOOD
    if phase in _BAD_PHASES:
        return Tone.BAD
    return Tone.PLAIN


def _pod_tone(status: str) -> Tone:
    if status == "Running":
        return Tone.GOOD
    if status in ("Terminating", "Completed"):
        return Tone.WARN
    if status in ("Failed", "Evicted", "Error", "OOMKilled") or "BackOff" in status:
        return Tone.BAD
    return Tone.PLAIN


def _membership(label: str, before: Sequence[str], after: Sequence[str]) -> str:
    added = [f"+{name}" for name in after if name not in before]
    removed = [f"-{name}" for name in before if name not in after]
    return f"{label} {' '.join(added + removed)}"


def _job_changes(
    subject: str, before: JobView | None, after: JobView | None, arrow: str
) -> list[Change]:
    if after is None:
        return [Change(subject, "deleted", Tone.WARN)] if before is not None else []
    if before is None:
        out = [Change(subject, "created")]
        before = JobView(phase="", targets=(), members=(), replicas=after.replicas)
    else:
        out = []
    if after.phase != before.phase:
        what = (
            f"phase {before.phase} {arrow} {after.phase}"
            if before.phase
            else f"phase {after.phase}"
        )
        out.append(Change(subject, what, _phase_tone(after.phase)))
    if set(after.targets) != set(before.targets):
        out.append(Change(subject, _membership("workers", before.targets, after.targets)))
    if set(after.members) != set(before.members):
        out.append(Change(subject, _membership("hostfile", before.members, after.members)))
    return out


def _pod_changes(before: PodView | None, after: PodView | None, arrow: str) -> list[Change]:
    pod = after or before
    assert pod is not None
    subject = f"pod/{pod.name}"
    if after is None:
        return [Change(subject, "deleted", Tone.WARN)]
    where = f" on {after.node}" if after.node and (before is None or not before.node) else ""
    if before is None:
        return [Change(subject, f"created, {after.status}{where}", _pod_tone(after.status))]
    if after.status != before.status:
        what = f"{before.status} {arrow} {after.status}{where}"
        return [Change(subject, what, _pod_tone(after.status))]
    return []


def _scaler_changes(
    before: ScalerView | None, after: ScalerView | None, arrow: str
) -> list[Change]:
    scaler = after or before
    assert scaler is not None
    if after is None:
        return [Change(scaler.subject, "deleted", Tone.WARN)]
    out = [] if before is not None else [Change(after.subject, "created")]
    previous_step = before.step if before is not None else ""
    if after.step != previous_step:
        what = (
            f"step {previous_step} {arrow} {after.step}" if previous_step else f"step {after.step}"
        )
        out.append(Change(after.subject, what))
    if after.chosen and (before is None or not before.chosen):
        verb = "adds" if after.kind == "ScaleOut" else "removes"
        out.append(Change(after.subject, f"{verb} {', '.join(after.chosen)}"))
    if after.outcome is not None and (before is None or before.outcome is None):
        kind, reason, message = after.outcome
        tone = Tone.GOOD if kind == "ScaleSucceeded" else Tone.BAD
        out.append(Change(after.subject, f"{kind} ({reason}): {message}", tone))
    return out


def changes(
    before: Snapshot | None, after: Snapshot, job: str, *, arrow: str = "->"
) -> list[Change]:
    """What differs from ``before`` (None: nothing seen yet) to ``after``, in a stable order.

    Args:
        before: the previous look, or None for the first one.
        after: the new look.
        job: the job's name (the subject of job changes).
        arrow: how a transition is drawn (``->``, or a Unicode arrow on a terminal).
    """
    old = before or Snapshot(job=None, pods={}, scalers={})
    out = _job_changes(f"trainingjob/{job}", old.job, after.job, arrow)
    for name in sorted(set(old.pods) | set(after.pods)):
        if old.pods.get(name) != after.pods.get(name):
            out += _pod_changes(old.pods.get(name), after.pods.get(name), arrow)
    for key in sorted(set(old.scalers) | set(after.scalers)):
        if old.scalers.get(key) != after.scalers.get(key):
            out += _scaler_changes(old.scalers.get(key), after.scalers.get(key), arrow)
    return out
