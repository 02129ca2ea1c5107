"""The job plugin protocol: a small required core plus optional one-method capabilities.

A job kind (TFJob, TrainingJob, elastic MPIJob, a third party's) is a *plugin* of the generic
:class:`~etctl.common.JobController`. The controller owns everything generic: reading
the job and its children from the cache, claiming them, run policy (cleanup, TTL, suspend, deadline,
backoff), gang scheduling, creating and deleting pods and services, restarts, expectations, events,
metrics and the single status write. A plugin says only what is particular to its kind.

Required core (:class:`JobPlugin`):

* ``resource``: the job kind's CRD description; ``custom_resources``: every CRD the plugin brings;
* ``model``: the pydantic model objects are parsed into, once, at the boundary;
* ``validate``: problems the CRD schema cannot express, worded so a user can fix them;
* ``decorate_pod``: what the kind adds to the pod of replica type R and index i (TF_CONFIG, volumes,
  commands);
* ``verdict``: what the replica statuses mean for the job (Running, Succeeded, Failed...).

Optional capabilities, each one method, detected once when the plugin is registered
(:class:`Capabilities`). A plugin implements only what it needs and never stubs a method:

* :class:`BuildsServices`: the headless service of a replica, if the kind wants one;
* :class:`BuildsExtraObjects`: more children (ConfigMap, Secret, ServiceAccount, Role...);
* :class:`GatesCreation`: ordering between replica types (launcher after workers run);
* :class:`PlansReplicas`: which pods a replica type should have (elastic kinds keep a membership
  instead of indices ``0..replicas-1``);
* :class:`ExtendsStatus`: status fields of its own (TrainingJob's phase and worker lists);
* :class:`RestartsWholeJob`: restart every pod of the job after a failure, up to backoffLimit;
* :class:`DeclaresRBAC`: rules the operator needs beyond the generic ones;
* :class:`ScalesElastically`: one replica type is an elastic job's *members*, which ScaleIn/ScaleOut
  objects and the ``/scale`` subresource resize (the machinery is :mod:`etctl.common._scaling`);
  the plugin says where its job records them (:class:`Members`, :class:`MemberFields`);
* :class:`RunsControllers`: controllers of the kind's own besides the job controller (TrainingJob's
  hostfile pusher), registered once when the operator is wired;
* :class:`PublishesFiles`: files the kind renders into ConfigMaps for its pods (a hostfile), so
  tools that show a job (``etctl status``) can show them as the pods read them.

Invariants the controller guarantees to plugins: hooks are called with a :class:`JobState` built
from one consistent read of the cache; they are pure (no I/O, no clock other than ``state.now``),
may be called several times per reconcile, and their results are applied idempotently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from etctl.common._api import JobConditionType, ReplicaStatus, ReplicatedJob
from etctl.common._crd import CustomResource
from etctl.common._labels import OPERATOR_NAME
from etctl.runtime import KubeObject, ObjectView, Resource

if TYPE_CHECKING:
    from etctl.runtime import Manager

__all__ = [
    "BuildsExtraObjects",
    "BuildsServices",
    "Capabilities",
    "DeclaresRBAC",
    "DesiredObject",
    "Elasticity",
    "ExecTarget",
    "ExtendsStatus",
    "Gate",
    "GatesCreation",
    "JobPlugin",
    "JobSettings",
    "JobState",
    "MemberFields",
    "Members",
    "PlansReplicas",
    "PolicyRule",
    "PublishedFile",
    "PublishesFiles",
    "ReplicaRef",
    "RestartsWholeJob",
    "RunsControllers",
    "ScalesElastically",
    "SyncPolicy",
    "Verdict",
]


JobT = TypeVar("JobT", bound=ReplicatedJob)
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
    """

    operator_name: str = "etctl"
    cluster_domain: str = ""
    gang_scheduler: str = ""
    init_container_image: str = "busybox:1.36"
    burst: int = 500

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
    """

    job: JobT
    pods: Mapping[str, Sequence[ObjectView]]
    services: Mapping[str, ObjectView]
    children: Mapping[Resource, Mapping[str, ObjectView]]
    replica_statuses: Mapping[str, ReplicaStatus]
    now: datetime
    settings: JobSettings

    def pods_of(self, replica_type: str) -> Sequence[ObjectView]:
        """The live pods of one replica type (empty when there are none)."""
        return self.pods.get(replica_type, ())


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the replica statuses mean for the job, as a condition to set.

    ``condition`` is Running, Succeeded, Failed or Restarting; ``reason`` is CamelCase and
    prefixed by the kind by convention (``TFJobSucceeded``); ``message`` is for people.
    """

    condition: JobConditionType
    reason: str
    message: str


class SyncPolicy(StrEnum):
    """How the controller keeps an extra child object in line with what the plugin wants."""

    CREATE = "create"
    """Create it when missing, never change it (generated secrets such as ssh keys)."""
    SYNC = "sync"
    """Create it when missing and patch it whenever a field the plugin sets drifts."""


@dataclass(frozen=True, slots=True)
class DesiredObject:
    """An extra child the plugin wants; ``build`` runs only when the object must be written."""

    resource: Resource
    name: str
    build: Callable[[], KubeObject]
    policy: SyncPolicy = SyncPolicy.SYNC


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
class MemberFields:
    """Where an elastic kind records its members in a job's status, as JSON field names.

    The scaling machinery writes only these fields (merge patches of ``/status``, guarded by the
    version read), besides the ``Scaling`` condition; each is a top-level field of ``status``.

    Attributes:
        targets: the list of members the job should have (the plan pods are created from).
        current: the list of members in use (the hostfile), in index order.
        last_index: the highest member index ever used (an integer).
        scaler: the scaler being executed (``<Kind>:<namespace>/<name>``).
        phase: a phase field the machinery keeps equal to the latest condition that holds when it
            writes conditions (et-operator's ``phase``), or None when the kind has none.
    """

    targets: str
    current: str
    last_index: str
    scaler: str
    phase: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Members:
    """An elastic job's members as its status records them, and where (see :class:`MemberFields`).

    Attributes:
        fields: the status fields that hold them.
        targets: the members the job should have, by pod name.
        current: the members in use, by pod name.
        last_index: the highest member index ever used (None: none yet).
        scaler: the scaler being executed, or None.
    """

    fields: MemberFields
    targets: tuple[str, ...] = ()
    current: tuple[str, ...] = ()
    last_index: int | None = None
    scaler: str | None = None


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
class Elasticity:
    """How an elastic job's members may be resized now, as its plugin reads the job.

    The scaling machinery (:mod:`etctl.common._scaling`) keeps the members in the job's status,
    in fields the plugin names (``members``); this is what it needs to know about the kind to do
    so. Members are pods of one replica type, named ``<member_prefix><index>``.

    Attributes:
        members: the members as the job records them, and the fields that hold them (the scaling
            controller refuses an elasticity without them).
        replica_type: the elastic replica type; its pods are the members.
        replicas: the member count the spec asks for (what ``/scale`` writes).
        replicas_path: where that count lives in the object, as JSON keys from the root.
        min_replicas: the fewest members a scaler may leave.
        max_replicas: the most members a scaler may make (None: no limit).
        member_prefix: members are named ``<member_prefix><index>``.
        slots: slots per member in the host list a scaler's script receives.
        replace: members to replace under new names now (failed under the kind's restart
            policy, or vanished); the machinery never reuses a name.
        ready: scalers may start (the job runs).
        executor: where scalers' scripts run, or None when nothing runs there now.
        membership_delivered: whatever consumes the membership (a launcher's hostfile) holds
            the one recorded in the status, or nothing consumes it now.
        membership_in_use: something consumes the membership now (a launcher runs). Only then
            does a member whose pod stopped running leave it; while nothing uses it, a member
            leaves only when it stops being a target, so workers lost meanwhile (a whole-job
            restart) come back under their names and nothing is rewritten meanwhile.
        membership_problem: why the job's objects could not hold a membership of these names
            (a ConfigMap or status past the cluster's size limits), or None when they can; a
            scale-out that would cross it fails at its start. None: no such limit.
        name_rule: why a member's name is at most 63 characters, as messages say it (the kind's
            own reason: a Service named after each worker, a worker's hostname). The job grows
            only as far as names fit: ``/scale`` is clamped there, a scale-out past it fails.
    """

    replica_type: str
    replicas: int
    replicas_path: tuple[str, ...]
    members: Members | None = None
    min_replicas: int = 1
    max_replicas: int | None = None
    member_prefix: str
    slots: int = 1
    replace: frozenset[str] = frozenset()
    ready: bool = False
    executor: ExecTarget | None = None
    membership_delivered: bool = True
    membership_in_use: bool = True
    membership_problem: Callable[[Sequence[str]], str | None] | None = None
    name_rule: str = "a worker's name is a DNS label"


# --- the required core --------------------------------------------------------------------------


@runtime_checkable
class JobPlugin(Protocol[JobT]):
    """The required core of a job kind."""

    @property
    def resource(self) -> CustomResource:
        """The job kind's CRD description."""
        ...

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """Every CRD this plugin brings (the job kind first)."""
        ...

    @property
    def model(self) -> type[JobT]:
        """The pydantic model job objects are parsed into."""
        ...

    def validate(self, job: JobT) -> list[str]:
        """Problems the CRD schema cannot express; each names the field and how to fix it."""
        ...

    def decorate_pod(
        self, job: JobT, pod: KubeObject, ref: ReplicaRef, state: JobState[JobT]
    ) -> None:
        """Add the kind's particulars to a new pod (mutates ``pod``, built from the template)."""
        ...

    def verdict(self, job: JobT, state: JobState[JobT]) -> Verdict | None:
        """The condition the replica statuses call for, or None while nothing has changed."""
        ...


# --- optional capabilities ----------------------------------------------------------------------


@runtime_checkable
class BuildsServices(Protocol[JobT_contra]):
    """The kind wants services for (some of) its pods."""

    def build_service(
        self, job: JobT_contra, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        """The service of one pod slot, or None when this replica type has none."""
        ...


@runtime_checkable
class BuildsExtraObjects(Protocol[JobT_contra]):
    """The kind needs children besides pods and services."""

    owned_resources: Sequence[Resource]
    """The resources of those children, so the controller can watch and claim them."""

    def extra_objects(self, job: JobT_contra, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The extra children wanted now; the controller creates, syncs and prunes them."""
        ...


@runtime_checkable
class GatesCreation(Protocol[JobT_contra]):
    """Some replica types must wait for others (a launcher for its workers)."""

    def gate(self, job: JobT_contra, replica_type: str, state: JobState[Any]) -> Gate:
        """Whether pods of ``replica_type`` may be created now."""
        ...


@runtime_checkable
class PlansReplicas(Protocol[JobT_contra]):
    """The kind decides which pod slots a replica type has (elastic membership)."""

    def plan(
        self, job: JobT_contra, replica_type: str, state: JobState[Any]
    ) -> Sequence[ReplicaRef]:
        """The pod slots wanted for ``replica_type``; pods outside the plan are deleted."""
        ...


@runtime_checkable
class ExtendsStatus(Protocol[JobT_contra]):
    """The kind's status has fields of its own."""

    def extend_status(self, job: JobT_contra, state: JobState[Any]) -> Mapping[str, Any]:
        """Extra status fields (JSON names), merged into the status the controller writes."""
        ...


@runtime_checkable
class RestartsWholeJob(Protocol[JobT_contra]):
    """After a failure the kind restarts every pod, up to the run policy's backoffLimit."""

    def restarts_on_failure(self, job: JobT_contra) -> bool:
        """True when a failed job should be restarted rather than left Failed."""
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

    The plugin maps the machinery's notions to its own API: which replica type holds the members,
    where the desired count lives in the spec, which status fields record the members
    (:class:`Members`), who consumes them (a launcher's hostfile) and which to replace.
    """

    def elasticity(self, job: JobT_contra, state: JobState[Any]) -> Elasticity:
        """How the job's members may be resized now, and where they are recorded."""
        ...


@runtime_checkable
class RunsControllers(Protocol):
    """The kind needs controllers of its own besides the job controller."""

    def setup_controllers(self, manager: Manager, settings: JobSettings) -> None:
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
    """A plugin's optional capabilities, resolved once at registration (None when absent)."""

    services: BuildsServices[Any] | None = None
    extra_objects: BuildsExtraObjects[Any] | None = None
    gate: GatesCreation[Any] | None = None
    planner: PlansReplicas[Any] | None = None
    status: ExtendsStatus[Any] | None = None
    restart: RestartsWholeJob[Any] | None = None
    rbac: DeclaresRBAC | None = None
    elastic: ScalesElastically[Any] | None = None
    controllers: RunsControllers | None = None
    files: PublishesFiles[Any] | None = None
    owned_resources: tuple[Resource, ...] = field(default=())

    @classmethod
    def of(cls, plugin: object) -> Capabilities:
        """Detect which capabilities ``plugin`` implements."""
        extra = plugin if isinstance(plugin, BuildsExtraObjects) else None
        return cls(
            services=plugin if isinstance(plugin, BuildsServices) else None,
            extra_objects=extra,
            gate=plugin if isinstance(plugin, GatesCreation) else None,
            planner=plugin if isinstance(plugin, PlansReplicas) else None,
            status=plugin if isinstance(plugin, ExtendsStatus) else None,
            restart=plugin if isinstance(plugin, RestartsWholeJob) else None,
            rbac=plugin if isinstance(plugin, DeclaresRBAC) else None,
            elastic=plugin if isinstance(plugin, ScalesElastically) else None,
            controllers=plugin if isinstance(plugin, RunsControllers) else None,
            files=plugin if isinstance(plugin, PublishesFiles) else None,
            owned_resources=tuple(extra.owned_resources) if extra else (),
        )
