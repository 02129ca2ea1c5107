"""The job plugin contract: a kind's identity, then one method per phase, run by the framework.

A job kind (TFJob, TrainingJob, elastic MPIJob, a third party's) is a *plugin* of the generic
:class:`~etctl.common.JobController`. The controller owns everything generic: reading the job and
its children, claiming them, run policy (cleanup, TTL, suspend, deadline, backoff), gang
scheduling, creating and deleting pods and services, restarts, events, metrics and the single
status write. A plugin says only what is particular to its kind.

**Required core** (:class:`JobPlugin`): ``resource``, the kind's CRD description, and ``model``,
the pydantic model its objects are parsed into, once, at the boundary.

**Phases.** Every reconcile runs them in this order (:mod:`etctl.common._phases`); a plugin
implements the methods it needs, each detected once when it is registered, and never stubs one:

=====================  ======================  ===============================================
phase                  method                  what it may return
=====================  ======================  ===============================================
1 validate & default   ``validate(job)``       problems (``<path>: <what>; <fix>``), or none
2 plan replicas        ``plan(job, planned,    the :class:`Replicas` of one type: ``planned``
                       state)``                itself, renamed, limited (a Warning), or
                                               waiting (a closed :class:`Gate`)
3 build desired        ``decorate_pod(job,     nothing: it adds to the pod built from the
  objects              pod, ref, state)``      template
                       ``build_service(job,    a Service for the slot, or None
                       ref, state)``
                       ``extra_objects(job,    :class:`DesiredObject` s (with
                       state)``                ``owned_resources``)
4 judge the outcome    ``verdict(job,          a :class:`Verdict` (Running, Succeeded, Failed,
                       state)``                Restarting), or None: nothing new
                       ``restarts_on_failure   True: a failed job restarts as a whole
                       (job)``
5 extend status        ``extend_status(job,    the kind's own status fields (JSON names)
                       state)``
=====================  ======================  ===============================================

Without a method, the framework's default runs: a :class:`~etctl.common.JobModel` kind's generic
checks; indices ``0..replicas-1`` (an elastic kind's members for its elastic type); the pod as
the template has it, no service, nothing extra; the generic judgement (:func:`judge_replicas`);
no status fields of its own.

**Kind-level capabilities**, used when the operator is wired or a tool shows a job, not per
reconcile: ``custom_resources`` (every CRD the plugin brings, the kind's first),
``rbac_rules()`` (:class:`DeclaresRBAC`), ``setup_controllers(manager, context)``
(:class:`RunsControllers`), ``published_files(job)`` (:class:`PublishesFiles`) and
:class:`ScalesElastically`: one replica type is an elastic job's members, which ScaleIn/ScaleOut
objects and the ``/scale`` subresource resize; the plugin says which type and where the job
records them (:class:`ElasticMembers`) and a job's bounds (:class:`MemberPolicy`), and may say
who consumes the members (:class:`ConsumesMembers`: a launcher) and how many its objects can
hold (:class:`LimitsMembers`).

Invariants the framework guarantees to plugins: each phase is called at most once per replica
type and reconcile, with a :class:`JobState` built from one consistent read of the cache (as
observed for phases 1-3, as the reconcile's writes leave it for 4-5); phases are pure (no I/O, no
clock other than ``state.now``), and their results are applied idempotently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from etctl.common._api import JobConditionType, ReplicaStatus, ReplicatedJob, RestartPolicy
from etctl.common._crd import CustomResource
from etctl.common._labels import OPERATOR_NAME
from etctl.common._members import WORKER_FIELDS, MemberFields
from etctl.runtime import KubeObject, ObjectView, Resource

if TYPE_CHECKING:
    from etctl.common._context import ControllerContext
    from etctl.runtime import Manager

__all__ = [
    "BringsResources",
    "BuildsExtraObjects",
    "BuildsServices",
    "Capabilities",
    "Consumer",
    "ConsumesMembers",
    "DeclaresRBAC",
    "DecoratesPods",
    "DesiredObject",
    "ElasticMembers",
    "ExecTarget",
    "ExtendsStatus",
    "Gate",
    "JobPlugin",
    "JobSettings",
    "JobState",
    "Judges",
    "LimitsMembers",
    "MemberPolicy",
    "PlansReplicas",
    "PolicyRule",
    "PublishedFile",
    "PublishesFiles",
    "ReplicaRef",
    "Replicas",
    "RestartsWholeJob",
    "RunsControllers",
    "ScalesElastically",
    "SyncPolicy",
    "Validates",
    "ValidatesUpdates",
    "Verdict",
]


JobT = TypeVar("JobT", bound=ReplicatedJob)
JobT_co = TypeVar("JobT_co", bound=ReplicatedJob, covariant=True)
JobT_contra = TypeVar("JobT_contra", bound=ReplicatedJob, contravariant=True)


@dataclass(frozen=True, slots=True)
class JobSettings:
    """Operator-wide settings every plugin may read (from flags or the embedding application).

    Attributes:
        operator_name: value of the ``training.kubeflow.org/operator-name`` label.
        cluster_domain: DNS suffix of services (``cluster.local``); empty to omit it.
        gang_scheduler: ``""`` (none), ``volcano`` or ``scheduler-plugins``.
        init_container_image: image of the helper init containers plugins add.
        burst: pods, and services, one reconcile of a job creates at most (the ReplicaSet
            controller's ``burstReplicas``); the created pods' events requeue the job for the
            rest, so a job of a huge size never holds a worker, and every other job, for long.
        member_batch: seconds an elastic job's scaling controller lets changes of its pods and
            updates of the job gather before it looks at them (the Kubernetes Job controller's
            pod update batch period, applied to the members only; a new job is taken up at once):
            workers that start, or go, together join, or leave, the members together, so a
            launcher sees one membership change instead of one per pod (each change of Horovod's
            host list is a re-rendezvous of every worker), and the job's status is written for
            them together. A failed member's replacement, and a ``/scale`` request, are decided
            up to this much later; a ScaleIn or ScaleOut at once. The job controller is not
            batched: restarts, conditions and the creation of decided pods follow each change at
            once. 0 (the default, as controller-runtime batches nothing): no batching; ``etctl
            run`` batches 0.5 s.
    """

    operator_name: str = "etctl"
    cluster_domain: str = ""
    gang_scheduler: str = ""
    init_container_image: str = "busybox:1.36"
    burst: int = 500
    member_batch: float = 0.0

    @property
    def child_selector(self) -> str:
        """The label selector of every child this operator could own (its ``operator-name``).

        Every pod, service and extra object a job controller creates carries the label, and
        claiming only keeps or adopts objects that do: the informers of children select on it, so
        the operator never caches the rest of the cluster's pods, services, ConfigMaps and Secrets.
        """
        return f"{OPERATOR_NAME}={self.operator_name}"


@dataclass(frozen=True, slots=True, order=True)
class ReplicaRef:
    """One pod slot of a job: replica type, index, and the pod (and service) name."""

    replica_type: str
    index: int
    name: str


@dataclass(frozen=True, slots=True)
class JobState(Generic[JobT]):
    """What the controller observed for one job, from one read of the cache.

    Attributes:
        job: the parsed job.
        pods: the job's live pods (controlled by it, not being deleted) by replica type.
        services: the job's services by name.
        children: the job's other owned objects by resource, then by name.
        replica_statuses: pod counts by replica type, as the status will report them.
        now: the reconcile's time (from the controller's clock).
        settings: operator-wide settings.
        plans: the plan of every replica type, once the plan phase ran (empty before).
    """

    job: JobT
    pods: Mapping[str, Sequence[ObjectView]]
    services: Mapping[str, ObjectView]
    children: Mapping[Resource, Mapping[str, ObjectView]]
    replica_statuses: Mapping[str, ReplicaStatus]
    now: datetime
    settings: JobSettings
    plans: Mapping[str, Replicas] = field(default_factory=dict)

    def pods_of(self, replica_type: str) -> Sequence[ObjectView]:
        """The live pods of one replica type (empty when there are none)."""
        return self.pods.get(replica_type, ())

    def replicas(self, replica_type: str) -> int:
        """The pods a replica type has once planned: its slots, else the spec's ``replicas``."""
        planned = self.plans.get(replica_type)
        if planned is not None:
            return len(planned.slots)
        spec = self.job.replica_specs().get(replica_type)
        return spec.replicas if spec is not None else 0


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the replica statuses mean for the job, as a condition to set.

    ``condition`` is Running, Succeeded, Failed or Restarting; ``reason`` is CamelCase and
    prefixed by the kind by convention (``TFJobSucceeded``); ``message`` is for people.
    """

    condition: JobConditionType
    reason: str
    message: str

    @classmethod
    def running(cls, reason: str, message: str) -> Verdict:
        """The job runs."""
        return cls(JobConditionType.RUNNING, reason, message)

    @classmethod
    def succeeded(cls, reason: str, message: str) -> Verdict:
        """The job succeeded (final)."""
        return cls(JobConditionType.SUCCEEDED, reason, message)

    @classmethod
    def failed(cls, reason: str, message: str) -> Verdict:
        """The job failed (final)."""
        return cls(JobConditionType.FAILED, reason, message)

    @classmethod
    def restarting(cls, reason: str, message: str) -> Verdict:
        """Failed pods are being created again."""
        return cls(JobConditionType.RESTARTING, reason, message)


class SyncPolicy(StrEnum):
    """How the controller keeps an extra child object in line with what the plugin wants."""

    CREATE = "create"
    """Create it when missing, never change it (generated secrets such as ssh keys)."""
    SYNC = "sync"
    """Create it when missing and patch it whenever a field the plugin sets drifts."""


@dataclass(frozen=True, slots=True)
class DesiredObject:
    """An extra child the plugin wants; ``build`` runs only when the object must be written.

    ``with_pods``: the pods need nothing of it when they are created (a Service selecting them, an
    autoscaler), so it is written in the same round trips as the pods instead of one ahead of them
    (the default, for what a pod mounts or runs as: a ConfigMap, a Secret, a ServiceAccount).
    """

    resource: Resource
    name: str
    build: Callable[[], KubeObject]
    policy: SyncPolicy = SyncPolicy.SYNC
    with_pods: bool = False


@dataclass(frozen=True, slots=True)
class Gate:
    """Whether a replica type's pods may be created now.

    A closed gate carries the reason and message of the condition the controller reports while
    waiting, and optionally a deadline after which the job fails with that message (a launcher
    must not wait forever for workers that never run).
    """

    open: bool
    reason: str = ""
    message: str = ""
    fail_at: datetime | None = None
    record: bool = False
    vanished: str = ""

    @classmethod
    def opened(cls, *, record: bool = False, vanished: str = "") -> Gate:
        """A gate that lets pods be created.

        Args:
            record: report the ``<Type>Created`` condition True once pods of the type exist even
                if no closed gate was ever written (for a type that always waits first: whether
                its wait reached the status depends on timing, what the job remembers must not).
            vanished: the pods about to be created replace pods of the type that provably
                existed and vanished; this message says so. The controller records it as a
                Warning Event (``<Kind><Type>Vanished``) once they are created.
        """
        return cls(open=True, record=record, vanished=vanished)


OPEN = Gate(open=True)


@dataclass(frozen=True, slots=True)
class Replicas:
    """The plan of one replica type: its pod slots, whether they may be created now, a warning.

    The framework plans every type (indices ``0..replicas-1``, or an elastic kind's members) and
    hands the plan to the kind's ``plan``, which returns it as it is or changed with the methods
    below. Pods outside the slots are deleted; missing ones are created while the gate is open.

    Attributes:
        replica_type: the replica type.
        slots: the pods it should have.
        gate: whether missing pods may be created now.
        warning: ``(reason, message)`` of a Warning Event about the plan (a limit it met), sent
            once per job generation.
    """

    replica_type: str
    slots: tuple[ReplicaRef, ...]
    gate: Gate = OPEN
    warning: tuple[str, str] | None = None

    def named(self, *names: str) -> Replicas:
        """The first slots renamed to ``names`` (a launcher ``<job>-launcher``), the rest cut."""
        slots = tuple(replace(ref, name=name) for ref, name in zip(self.slots, names, strict=False))
        return replace(self, slots=slots)

    def limited(self, count: int, reason: str, message: str) -> Replicas:
        """The first ``count`` slots only, with a Warning Event ``reason`` saying why."""
        return replace(self, slots=self.slots[: max(count, 0)], warning=(reason, message))

    def waiting(self, reason: str, message: str, *, fail_at: datetime | None = None) -> Replicas:
        """Missing pods wait: ``<Type>Created`` False says why; past ``fail_at`` the job fails."""
        return replace(self, gate=Gate(open=False, reason=reason, message=message, fail_at=fail_at))

    def gated(self, gate: Gate) -> Replicas:
        """The plan under ``gate``."""
        return replace(self, gate=gate)


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """An RBAC rule the operator's ClusterRole must contain."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExecTarget:
    """A running container commands may be executed in (``pods/exec``)."""

    pod: str
    container: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedFile:
    """A file a job kind renders into one of the job's ConfigMaps for its pods to read.

    Attributes:
        config_map: the ConfigMap's name (in the job's namespace, owned by the job).
        key: the ConfigMap key holding the file's content; also how tools title it.
        path: where the pods that read it find it (``/etc/edl/hostfile``).
        reader: the pod that reads it (``<job>-launcher``), or ``""`` when every pod does.
    """

    config_map: str
    key: str
    path: str
    reader: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElasticMembers:
    """Which replica type an elastic kind resizes, and where its jobs record the members.

    Members are the pods of ``replica_type``, named ``<job>-<type lower>-<index>``; their desired
    count is where the kind's CRD ``/scale`` subresource says (``specReplicasPath``).

    Attributes:
        replica_type: the elastic replica type.
        fields: the status fields that record the members (et-operator's by default:
            ``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``, ``currentScaler``,
            ``phase``).
        name_rule: why a member's name is at most 63 characters, as messages say it (a Service
            named after each worker, a worker's hostname). The job grows only as far as names
            fit: ``/scale`` is clamped there, a scale-out past it fails.
    """

    replica_type: str
    fields: MemberFields = WORKER_FIELDS
    name_rule: str = "a member's name is a DNS label"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberPolicy:
    """An elastic job's bounds, and how its members are replaced, as its spec says.

    Attributes:
        min_replicas: the fewest members a scaler may leave.
        max_replicas: the most members a scaler may make (None: no limit).
        restart_policy: the members' restartPolicy, which says who is replaced under a new name
            (None: the elastic replica type's, as ``replica_specs()`` gives it).
        fixed: why this job's members can never be resized (a kind's static job, say ``is not
            elastic: it has no elasticPolicy``), or None when they can. A scaler naming such a
            job fails at once (reason ``JobNotElastic``) instead of waiting for it to become
            ready, and the scalers' webhook refuses it when the job is known.
    """

    min_replicas: int = 1
    max_replicas: int | None = None
    restart_policy: RestartPolicy | None = None
    fixed: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Consumer:
    """Whatever consumes an elastic job's members now (a launcher's hostfile), as the kind reads it.

    Attributes:
        running: it runs. Only then does a member whose pod stopped running leave the membership,
            and a vanished member get replaced under a new name (while nothing runs, a worker lost
            comes back under its name); scalers start only then (and not while suspended).
        delivered: it holds the membership the status records, or there is nothing to deliver to.
        executor: where scalers' scripts run, or None when nothing runs there now.
        slots: slots per member in the host list a scaler's script receives.
    """

    running: bool
    delivered: bool = True
    executor: ExecTarget | None = None
    slots: int = 1


# --- the required core --------------------------------------------------------------------------


@runtime_checkable
class JobPlugin(Protocol[JobT_co]):
    """The required core of a job kind: its CRD and its model."""

    @property
    def resource(self) -> CustomResource:
        """The job kind's CRD description."""
        ...

    @property
    def model(self) -> type[JobT_co]:
        """The pydantic model job objects are parsed into."""
        ...


# --- the phases, in their order -----------------------------------------------------------------


@runtime_checkable
class Validates(Protocol[JobT_contra]):
    """Phase 1, validate and default: what the CRD schema and the model cannot express."""

    def validate(self, job: JobT_contra) -> Sequence[str]:
        """Problems, each naming the field and how to fix it (``<path>: <what>; <fix>``)."""
        ...


@runtime_checkable
class ValidatesUpdates(Protocol[JobT_contra]):
    """Phase 1, at admission: what an update must keep, beyond the generic update rules."""

    def validate_update(self, old: JobT_contra, new: JobT_contra) -> Sequence[str]:
        """Problems with changing ``old`` into ``new`` (``<path>: <what>; <fix>``), or none."""
        ...


@runtime_checkable
class PlansReplicas(Protocol[JobT_contra]):
    """Phase 2, plan replicas: names, limits and gates of a replica type's slots."""

    def plan(self, job: JobT_contra, planned: Replicas, state: JobState[Any]) -> Replicas:
        """The plan of ``planned.replica_type``: ``planned`` itself, or changed by its methods."""
        ...


@runtime_checkable
class DecoratesPods(Protocol[JobT_contra]):
    """Phase 3, build desired objects: what the kind adds to a pod built from its template."""

    def decorate_pod(
        self, job: JobT_contra, pod: KubeObject, ref: ReplicaRef, state: JobState[Any]
    ) -> None:
        """Add the kind's particulars to a new pod (mutates ``pod``)."""
        ...


@runtime_checkable
class BuildsServices(Protocol[JobT_contra]):
    """Phase 3, build desired objects: the kind wants services for (some of) its pods."""

    def build_service(
        self, job: JobT_contra, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        """The service of one pod slot, or None when this replica type has none."""
        ...


@runtime_checkable
class BuildsExtraObjects(Protocol[JobT_contra]):
    """Phase 3, build desired objects: children besides pods and services."""

    owned_resources: Sequence[Resource]
    """The resources of those children, so the controller can watch and claim them."""

    def extra_objects(self, job: JobT_contra, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The extra children wanted now; the controller creates, syncs and prunes them."""
        ...


@runtime_checkable
class Judges(Protocol[JobT_contra]):
    """Phase 4, judge the outcome: what the replica statuses mean for the job."""

    def verdict(self, job: JobT_contra, state: JobState[Any]) -> Verdict | None:
        """The condition the replica statuses call for, or None while nothing has changed."""
        ...


@runtime_checkable
class RestartsWholeJob(Protocol[JobT_contra]):
    """Phase 4, judge the outcome: a failure restarts every pod, up to backoffLimit."""

    def restarts_on_failure(self, job: JobT_contra) -> bool:
        """True when a failed job should be restarted rather than left Failed."""
        ...


@runtime_checkable
class ExtendsStatus(Protocol[JobT_contra]):
    """Phase 5, extend status: the kind's status has fields of its own."""

    def extend_status(self, job: JobT_contra, state: JobState[Any]) -> Mapping[str, Any]:
        """Extra status fields (JSON names), merged into the status the controller writes."""
        ...


# --- kind-level capabilities --------------------------------------------------------------------


@runtime_checkable
class BringsResources(Protocol):
    """The plugin brings CRDs besides its kind's (ScaleIn and ScaleOut)."""

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """Every CRD this plugin brings, the job kind's first."""
        ...


@runtime_checkable
class DeclaresRBAC(Protocol):
    """The operator needs permissions beyond pods, services and events for this kind."""

    def rbac_rules(self) -> Sequence[PolicyRule]:
        """Rules added to the operator's ClusterRole when this plugin is enabled."""
        ...


@runtime_checkable
class ScalesElastically(Protocol[JobT_contra]):
    """One replica type is an elastic job's members, which scalers and ``/scale`` resize.

    The machinery (:mod:`etctl.common._scaling`) keeps the members in the job's status and
    derives the rest: the desired count from the CRD's ``/scale`` path, members to replace from
    the type's restartPolicy, the plan the job controller creates pods from.
    """

    elastic: ElasticMembers
    """Which replica type, and where its jobs record the members."""

    def member_policy(self, job: JobT_contra) -> MemberPolicy:
        """The job's bounds and the members' restartPolicy."""
        ...


@runtime_checkable
class ConsumesMembers(Protocol[JobT_contra]):
    """Something of the job consumes its members (a launcher reads a hostfile).

    Without it, the members are in use while the job runs, nothing is delivered and no script
    runs.
    """

    def consumer(self, job: JobT_contra, state: JobState[Any]) -> Consumer:
        """The consumer as the job's pods show it now."""
        ...


@runtime_checkable
class LimitsMembers(Protocol[JobT_contra]):
    """The job's objects can hold only so many members (a ConfigMap, the status)."""

    def membership_problem(
        self, job: JobT_contra, names: Sequence[str], state: JobState[Any]
    ) -> str | None:
        """Why the job cannot hold ``names`` as its members, or None when it can.

        A scale-out that would cross it fails at its start.
        """
        ...


@runtime_checkable
class RunsControllers(Protocol):
    """The kind needs controllers of its own besides the job controller."""

    def setup_controllers(self, manager: Manager, context: ControllerContext) -> None:
        """Register them with ``manager`` (called once, before it runs)."""
        ...


@runtime_checkable
class PublishesFiles(Protocol[JobT_contra]):
    """The kind renders files (a hostfile) into ConfigMaps its pods read."""

    def published_files(self, job: JobT_contra) -> Sequence[PublishedFile]:
        """The files worth showing a person, in the order to show them (pure, no I/O)."""
        ...


@dataclass(frozen=True, slots=True)
class Capabilities:
    """A plugin's phases and capabilities, resolved once at registration (None when absent)."""

    validator: Validates[Any] | None = None
    planner: PlansReplicas[Any] | None = None
    pods: DecoratesPods[Any] | None = None
    services: BuildsServices[Any] | None = None
    extra_objects: BuildsExtraObjects[Any] | None = None
    judge: Judges[Any] | None = None
    restart: RestartsWholeJob[Any] | None = None
    status: ExtendsStatus[Any] | None = None
    resources: BringsResources | None = None
    rbac: DeclaresRBAC | None = None
    elastic: ScalesElastically[Any] | None = None
    consumer: ConsumesMembers[Any] | None = None
    limits: LimitsMembers[Any] | None = None
    controllers: RunsControllers | None = None
    files: PublishesFiles[Any] | None = None
    owned_resources: tuple[Resource, ...] = field(default=())

    @classmethod
    def of(cls, plugin: object) -> Capabilities:
        """Detect which phases and capabilities ``plugin`` implements."""
        extra = plugin if isinstance(plugin, BuildsExtraObjects) else None
        return cls(
            validator=plugin if isinstance(plugin, Validates) else None,
            planner=plugin if isinstance(plugin, PlansReplicas) else None,
            pods=plugin if isinstance(plugin, DecoratesPods) else None,
            services=plugin if isinstance(plugin, BuildsServices) else None,
            extra_objects=extra,
            judge=plugin if isinstance(plugin, Judges) else None,
            restart=plugin if isinstance(plugin, RestartsWholeJob) else None,
            status=plugin if isinstance(plugin, ExtendsStatus) else None,
            resources=plugin if isinstance(plugin, BringsResources) else None,
            rbac=plugin if isinstance(plugin, DeclaresRBAC) else None,
            elastic=plugin if isinstance(plugin, ScalesElastically) else None,
            consumer=plugin if isinstance(plugin, ConsumesMembers) else None,
            limits=plugin if isinstance(plugin, LimitsMembers) else None,
            controllers=plugin if isinstance(plugin, RunsControllers) else None,
            files=plugin if isinstance(plugin, PublishesFiles) else None,
            owned_resources=tuple(extra.owned_resources) if extra else (),
        )


def custom_resources(plugin: JobPlugin[Any]) -> tuple[CustomResource, ...]:
    """Every CRD ``plugin`` brings: its ``custom_resources``, else its kind's alone."""
    if isinstance(plugin, BringsResources):
        return tuple(plugin.custom_resources)
    return (plugin.resource,)
