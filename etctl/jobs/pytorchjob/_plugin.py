"""The PyTorchJob plugin: training-operator's PyTorchJob, elastic, on the generic job controller.

The generic :class:`~etctl.common.JobController` runs the reconcile and the scaling machinery
keeps the elastic workers; each phase delegates to a module of its own:

=====================  ==========================================================================
core                   the CRD (with ScaleIn and ScaleOut: ``custom_resources``) and the model
validate               training-operator's rules and torchrun's (:mod:`._validation`), and at
                       admission what an update must keep
plan                   an elastic job's workers are the framework's elastic plan (its recorded
                       targets); a static job's are ``<job>-worker-0..n-1`` (:mod:`._world`)
build                  each pod's environment, init container and role label (:mod:`._pods`,
                       with training-operator's defaults, :mod:`._defaults`); a Service per pod
                       (the slots' services), the rendezvous Service and the HPA as extra
                       objects (:mod:`._children`)
judge                  training-operator's rules, elastic-aware (:mod:`._verdict`)
extend status          the world: bounds, pending workers, rendezvous, phase (:mod:`._world`)
elastic                the workers are the members; bounds from ``elasticPolicy``; nothing but
                       the job's Running condition consumes them (:mod:`._world`)
kind-level             the operator's RBAC (:func:`operator_rules`)
=====================  ==========================================================================

Every phase is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.common import (
    SCALEIN,
    SCALEOUT,
    Consumer,
    CustomResource,
    DesiredObject,
    JobState,
    MemberPolicy,
    PolicyRule,
    ReplicaRef,
    Replicas,
    RestartPolicy,
    Verdict,
)
from etctl.jobs.pytorchjob import _pods as pods
from etctl.jobs.pytorchjob import _world as world
from etctl.jobs.pytorchjob._api import GROUP, PYTORCHJOB, PyTorchJob, PyTorchReplicaType
from etctl.jobs.pytorchjob._children import (
    OWNED_RESOURCES,
    desired_children,
    rendezvous_host,
    slot_service,
)
from etctl.jobs.pytorchjob._defaults import with_defaults
from etctl.jobs.pytorchjob._names import worker_name
from etctl.jobs.pytorchjob._rendezvous import endpoint, owns_endpoint
from etctl.jobs.pytorchjob._validation import validate_pytorchjob, validate_update
from etctl.jobs.pytorchjob._verdict import verdict
from etctl.runtime import KubeObject, Resource

__all__ = ["PyTorchJobPlugin", "operator_rules"]

WORKER = PyTorchReplicaType.WORKER.value
_SCALER_VERBS = ("create", "get", "list", "watch", "update", "patch", "delete")


def operator_rules() -> tuple[PolicyRule, ...]:
    """What the operator needs for PyTorchJobs beyond pods, services, events, HPAs and the CRD.

    ``pytorchjobs`` patch (the scaling machinery writes ``Worker.replicas``: a clamped ``/scale``
    value, the size a finished scaler leaves); ScaleIns and ScaleOuts (adopted, created for
    ``/scale``, their progress written).
    """
    scalers = (SCALEIN.group,)
    return (
        PolicyRule((GROUP,), ("pytorchjobs",), ("get", "list", "watch", "patch")),
        PolicyRule(scalers, (SCALEIN.plural, SCALEOUT.plural), _SCALER_VERBS),
        PolicyRule(
            scalers,
            (f"{SCALEIN.plural}/status", f"{SCALEOUT.plural}/status"),
            ("get", "update", "patch"),
        ),
    )


class PyTorchJobPlugin:
    """The PyTorchJob job kind (see the module docstring)."""

    owned_resources: Sequence[Resource] = OWNED_RESOURCES
    elastic = world.ELASTIC

    # -- the core

    @property
    def resource(self) -> CustomResource:
        """The PyTorchJob CRD."""
        return PYTORCHJOB

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """PyTorchJob, and the ScaleIn and ScaleOut every elastic kind shares."""
        return (PYTORCHJOB, SCALEIN, SCALEOUT)

    @property
    def model(self) -> type[PyTorchJob]:
        """Jobs parse into :class:`~etctl.jobs.pytorchjob.PyTorchJob`."""
        return PyTorchJob

    def validate(self, job: PyTorchJob) -> list[str]:
        """training-operator's rules and torchrun's (:mod:`._validation`)."""
        return validate_pytorchjob(job)

    def validate_update(self, old: PyTorchJob, new: PyTorchJob) -> list[str]:
        """What an update must keep: the maximum above the replicas, a static job's world."""
        return validate_update(old, new)

    # -- plan

    def plan(self, job: PyTorchJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """A static job's workers keep their indices; everything else is planned as given."""
        if planned.replica_type != WORKER or job.elastic:
            return planned
        worker = job.spec.replicas(PyTorchReplicaType.WORKER)
        count = worker.replicas if worker is not None else 0
        name = job.metadata.name
        slots = tuple(ReplicaRef(WORKER, i, worker_name(name, i)) for i in range(count))
        return Replicas(WORKER, slots, planned.gate, planned.warning)

    # -- build

    def decorate_pod(
        self, job: PyTorchJob, pod: KubeObject, ref: ReplicaRef, state: JobState[Any]
    ) -> None:
        """The environment torchrun reads, the Master wait, the role label, the restart policy."""
        defaulted = with_defaults(job)
        left = world.restarts_left(job)
        pods.decorate_pod(
            defaulted,
            pod,
            ref.replica_type,
            ref.index,
            endpoint=endpoint(defaulted),
            max_restarts=max(left, 0) if left is not None else None,
            init_image=state.settings.init_container_image,
        )
        spec = job.spec.replicas(PyTorchReplicaType.WORKER)
        if ref.replica_type == WORKER and job.elastic and spec is not None:
            # Handed over as Never (see PyTorchJob.replica_specs); the pod runs with the spec's
            # own policy, so the kubelet restarts a torchrun that exited, in place.
            policy = spec.restart_policy
            exit_code = policy is RestartPolicy.EXIT_CODE
            pod["spec"]["restartPolicy"] = RestartPolicy.NEVER.value if exit_code else policy.value

    def build_service(
        self, job: PyTorchJob, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        """The headless Service of one pod, named after it (:mod:`._children`)."""
        return slot_service(with_defaults(job), ref, state.settings.operator_name)

    def extra_objects(self, job: PyTorchJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The rendezvous Service and the HPA (:mod:`._children`)."""
        return desired_children(with_defaults(job), state)

    # -- judge

    def verdict(self, job: PyTorchJob, state: JobState[Any]) -> Verdict | None:
        """training-operator's rules, elastic-aware (:mod:`._verdict`)."""
        return verdict(job, state)

    # -- extend status

    def extend_status(self, job: PyTorchJob, state: JobState[Any]) -> dict[str, Any]:
        """The current world: bounds, pending workers, the rendezvous and its host, the phase."""
        host = rendezvous_host(job, state) if owns_endpoint(job) else None
        return world.world_status(with_defaults(job), state, host)

    # -- elastic

    def member_policy(self, job: PyTorchJob) -> MemberPolicy:
        """``elasticPolicy``'s bounds and the Worker's restartPolicy (:mod:`._world`)."""
        return world.member_policy(job)

    def consumer(self, job: PyTorchJob, state: JobState[Any]) -> Consumer:
        """The members are in use while an elastic job runs (:mod:`._world`)."""
        return world.consumer(job, state)

    # -- kind-level

    def rbac_rules(self) -> Sequence[PolicyRule]:
        """What the operator needs for PyTorchJobs."""
        return operator_rules()
