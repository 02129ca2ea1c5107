"""What a user sees of one job through the API.

:func:`snapshot` condenses what ``kubectl get`` and ``kubectl describe`` would show of a job of
any registered kind (:class:`~etctl.cli._jobkinds.JobKind`) into a :class:`Snapshot`: the job's
phase, conditions, replica counts and elastic membership; its pods; the ScaleOut/ScaleIn objects
that name it (:func:`selects`, elastic kinds only); the files its plugin publishes (a hostfile);
and the Events about all of these. A snapshot holds only the few fields a person follows, so two
snapshots compare equal when nothing worth telling changed.

What changed between two snapshots is :mod:`etctl.cli._changes`'s to say.

Pod statuses are worded as ``kubectl get pods`` words them (``Terminating``, ``Evicted``,
``ContainerCreating``, ``Init:0/1``), since that is what a user would compare them with.

Which pods are the job's: those with the job-name label whose controller is this job (by kind
and name), and labelled orphans with no controller (the operator adopts them); a pod another
job controls is never shown, even if its labels match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from etctl.cli._jobkinds import JobKind
from etctl.common import REPLICA_TYPE, ReplicatedJob, scaler_targets
from etctl.runtime import ObjectView, objects, podview

__all__ = [
    "ConditionView",
    "EventView",
    "FileView",
    "JobView",
    "PodView",
    "ReplicaView",
    "ScalerView",
    "Snapshot",
    "empty",
    "owned_by",
    "pod_status",
    "selects",
    "snapshot",
]

_FINISHED_SCALER = frozenset({"ScaleSucceeded", "ScaleFailed"})
_FINISHED_JOB = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class ConditionView:
    """One status condition."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    since: str = ""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica type: what the spec asks for and the pod counts the status reports.

    ``desired`` is None when the spec could not be read (no plugin, or it does not parse).
    """

    replica_type: str
    desired: int | None
    active: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class JobView:
    """The parts of a job a person follows.

    Attributes:
        kind: the job's kind (``TFJob``).
        name: its name.
        phase: ``status.phase`` where the kind has one, else the type of the latest condition
            that is True (what the ``State`` printer column of kubeflow's kinds shows); empty
            until the operator wrote one.
        conditions: ``status.conditions``, in order.
        replicas: by replica type, the spec's types first (in creation order), then any type
            only the status reports.
        targets: elastic kinds: the members the job should have, from the status field its
            plugin records them in (``status.targetWorkers`` for TrainingJob).
        members: elastic kinds: the members in use, likewise (``status.currentWorkers``).
        members_in: what a person knows the members in use as: the file the kind publishes
            them in (``hostfile``, ``discover_hosts.sh``), else ``members`` (a PyTorchJob's
            torchrun world is in no file).
        created: ``metadata.creationTimestamp``.
    """

    kind: str
    name: str
    phase: str
    conditions: tuple[ConditionView, ...] = ()
    replicas: tuple[ReplicaView, ...] = ()
    targets: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    members_in: str = "members"
    created: str = ""

    @property
    def subject(self) -> str:
        """``<kind>/<name>`` in lower case, as kubectl names it."""
        return f"{self.kind.lower()}/{self.name}"

    @property
    def outcome(self) -> ConditionView | None:
        """The True ``Succeeded`` or ``Failed`` condition once the job finished, else None."""
        for condition in reversed(self.conditions):
            if condition.type in _FINISHED_JOB and condition.status == "True":
                return condition
        return None

    @property
    def finished(self) -> bool:
        """True once the job Succeeded or Failed."""
        return self.outcome is not None

    def replica(self, replica_type: str) -> ReplicaView | None:
        """The replica type called ``replica_type`` (case-insensitive), or None."""
        wanted = replica_type.lower()
        return next((r for r in self.replicas if r.replica_type.lower() == wanted), None)


@dataclass(frozen=True, slots=True)
class PodView:
    """One pod as ``kubectl get pods -o wide`` shows it."""

    name: str
    status: str
    node: str
    ip: str
    replica_type: str = ""
    ready: str = ""
    restarts: int = 0
    created: str = ""


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
class FileView:
    """A file the job's kind publishes (a hostfile), and its content.

    Attributes:
        config_map: the ConfigMap it lives in.
        key: its key there.
        path: where the reading pods find it.
        reader: the pod that reads it, or ``""`` for every pod.
        content: the ConfigMap's value, or None while the ConfigMap or the key is absent.
    """

    config_map: str
    key: str
    path: str
    reader: str
    content: str | None

    @property
    def subject(self) -> str:
        """``configmap/<name>``, as kubectl names it."""
        return f"configmap/{self.config_map}"


@dataclass(frozen=True, slots=True)
class EventView:
    """One Event about the job or one of its objects, as ``kubectl get events`` shows it.

    ``name`` identifies it (the Event's own name); ``count`` grows as the recorder aggregates
    repeats into it, and each growth is a new occurrence.
    """

    name: str
    type: str
    reason: str
    message: str
    subject: str
    count: int = 1
    last: str = ""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One look at a job: the job (None when absent) and what belongs to it.

    Attributes:
        job: the job, or None while it does not exist.
        pods: its pods by name.
        scalers: the scalers naming it, by ``<kind>/<name>``.
        files: the files its kind publishes, by ``<configmap>/<key>``.
        events: the Events about the job, its pods and its scalers, by Event name, in the order
            they were last seen.
    """

    job: JobView | None
    pods: Mapping[str, PodView]
    scalers: Mapping[str, ScalerView]
    files: Mapping[str, FileView] = field(default_factory=dict)
    events: Mapping[str, EventView] = field(default_factory=dict)

    def running(self, *names: str) -> bool:
        """True when every named pod exists and is Running."""
        return all(name in self.pods and self.pods[name].status == "Running" for name in names)

    def file(self, key: str) -> FileView | None:
        """The first published file with this key (``hostfile``), or None."""
        return next((f for f in self.files.values() if f.key == key), None)


def empty() -> Snapshot:
    """The look before anything was seen."""
    return Snapshot(job=None, pods={}, scalers={})


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


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _conditions(status: Mapping[str, Any]) -> tuple[ConditionView, ...]:
    return tuple(
        ConditionView(
            type=_text(c.get("type")),
            status=_text(c.get("status")),
            reason=_text(c.get("reason")),
            message=_text(c.get("message")),
            since=_text(c.get("lastTransitionTime") or c.get("lastUpdateTime")),
        )
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    )


def _phase(status: Mapping[str, Any], conditions: Sequence[ConditionView]) -> str:
    phase = status.get("phase")
    if isinstance(phase, str) and phase:
        return phase
    true = [c for c in conditions if c.status == "True"]
    finished = [c for c in true if c.type in _FINISHED_JOB]
    if finished:  # a finished job stays finished, whatever else is still True
        return finished[-1].type
    if not true:
        return ""
    # The latest True condition; of two set in the same second, the one listed later.
    _, latest = max(enumerate(true), key=lambda item: (item[1].since, item[0]))
    return latest.type


def _replicas(
    kind: JobKind, job: ReplicatedJob | None, status: Mapping[str, Any]
) -> tuple[ReplicaView, ...]:
    desired = kind.desired_replicas(job)
    reported: Mapping[str, Any] = status.get("replicaStatuses") or {}
    out = []
    for replica_type in [*desired, *(t for t in reported if t not in desired)]:
        counts = reported.get(replica_type) or {}
        out.append(
            ReplicaView(
                replica_type=replica_type,
                desired=desired.get(replica_type),
                active=_count(counts.get("active")),
                succeeded=_count(counts.get("succeeded")),
                failed=_count(counts.get("failed")),
            )
        )
    return tuple(out)


def _names(value: object) -> tuple[str, ...]:
    return tuple(str(n) for n in value) if isinstance(value, list) else ()


def _job_view(kind: JobKind, job: ObjectView) -> JobView:
    status: Mapping[str, Any] = job.get("status") or {}
    conditions = _conditions(status)
    parsed = kind.parse(job)
    fields = kind.member_fields(parsed)
    return JobView(
        kind=kind.kind,
        name=objects.name(job),
        phase=_phase(status, conditions),
        conditions=conditions,
        replicas=_replicas(kind, parsed, status),
        targets=_names(status.get(fields.targets)) if fields else (),
        members=_names(status.get(fields.current)) if fields else (),
        members_in=next((f.key for f in kind.files(parsed)), "members"),
        created=_text(objects.meta(job).get("creationTimestamp")),
    )


def _ready(pod: ObjectView) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    containers = (pod.get("spec") or {}).get("containers") or ()
    ready = sum(1 for s in statuses if isinstance(s, Mapping) and s.get("ready") is True)
    return f"{ready}/{len(containers)}"


def _pod_view(pod: ObjectView) -> PodView:
    status: Mapping[str, Any] = pod.get("status") or {}
    return PodView(
        name=objects.name(pod),
        status=pod_status(pod),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        ip=str(status.get("podIP") or ""),
        replica_type=objects.labels(pod).get(REPLICA_TYPE, ""),
        ready=_ready(pod),
        restarts=podview.restarts(pod),
        created=_text(objects.meta(pod).get("creationTimestamp")),
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


def _event_view(event: ObjectView) -> EventView:
    involved: Mapping[str, Any] = event.get("involvedObject") or {}
    return EventView(
        name=objects.name(event),
        type=_text(event.get("type")),
        reason=_text(event.get("reason")),
        message=_text(event.get("message")),
        subject=f"{_text(involved.get('kind')).lower()}/{_text(involved.get('name'))}",
        count=_count(event.get("count")) or 1,
        last=_text(event.get("lastTimestamp") or event.get("eventTime") or ""),
    )


def owned_by(obj: ObjectView, kind: str, job: str) -> bool:
    """True when ``obj`` is the job's: controlled by it, or an orphan (no controller at all)."""
    controller = objects.controller_of(obj)
    if controller is None:
        return True
    return controller.get("kind") == kind and controller.get("name") == job


def selects(scaler: ObjectView, job: str, kind: JobKind) -> bool:
    """True when a ScaleOut or ScaleIn resizes the job ``job`` of ``kind``.

    ``spec.selector.name`` names the job; its kind is ``spec.selector.kind`` (and ``apiGroup``),
    or, unset, the elastic kind of the scalers' own API group, as the operator reads it.
    """
    name = ((scaler.get("spec") or {}).get("selector") or {}).get("name")
    return name == job and scaler_targets(scaler, kind.resource)


def snapshot(
    kind: JobKind,
    name: str,
    job: ObjectView | None,
    pods: Iterable[ObjectView] = (),
    scalers: Iterable[ObjectView] = (),
    *,
    config_maps: Mapping[str, ObjectView] | None = None,
    events: Iterable[ObjectView] | None = None,
) -> Snapshot:
    """Condense what was read of the job called ``name`` into a :class:`Snapshot`.

    Args:
        kind: the job's kind.
        name: the job's name.
        job: the job (None when absent).
        pods: pods with the job-name label; only the job's own are kept (module docstring).
        scalers: ScaleOut and ScaleIn objects of the namespace; only those naming the job are
            kept, and none for a kind that is not elastic.
        config_maps: ConfigMaps by name, to read published files from; None: files not read.
        events: Events of the namespace; only those about the job, its pods and its scalers are
            kept. None: Events not read.
    """
    pod_views = {
        view.name: view for view in (_pod_view(p) for p in pods if owned_by(p, kind.kind, name))
    }
    scaler_views = {
        view.subject: view
        for view in (_scaler_view(s) for s in scalers if kind.elastic and selects(s, name, kind))
    }
    files: dict[str, FileView] = {}
    if config_maps is not None and job is not None:
        for published in kind.files(kind.parse(job)):
            holder = config_maps.get(published.config_map) or {}
            content = (holder.get("data") or {}).get(published.key)
            files[f"{published.config_map}/{published.key}"] = FileView(
                config_map=published.config_map,
                key=published.key,
                path=published.path,
                reader=published.reader,
                content=None if content is None else str(content),
            )
    about = {kind.subject(name), *(f"pod/{p}" for p in pod_views), *scaler_views}
    event_views = sorted(
        (v for v in map(_event_view, events or ()) if v.subject in about),
        key=lambda v: (v.last, v.name),
    )
    return Snapshot(
        job=None if job is None else _job_view(kind, job),
        pods=dict(sorted(pod_views.items())),
        scalers=dict(sorted(scaler_views.items())),
        files=files,
        events={view.name: view for view in event_views},
    )
