"""The MPIJob plugin: kubeflow's MPIJob (v2beta1 and v1) on the generic job controller.

The generic :class:`~etctl.common.JobController` runs the reconcile; this plugin says what is
particular to an MPIJob, each hook delegating to a module of its own:

=====================  ==========================================================================
required core          the CRDs (MPIJob, ScaleIn, ScaleOut), the model, validation
                       (:mod:`._validation`), pods (:mod:`._pods`), the verdict (:mod:`._lifecycle`)
GatesCreation          the launcher waits for ready workers when asked to (:mod:`._lifecycle`)
ExtendsStatus          the phase (:func:`._lifecycle.extra_status`)
DeclaresRBAC           what the operator needs for MPIJobs (:func:`operator_rules`)
=====================  ==========================================================================

Every hook is pure: it reads the job and the state it is given and returns what it wants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.common import (
    SCALEIN,
    SCALEOUT,
    CustomResource,
    Gate,
    JobState,
    PolicyRule,
    ReplicaRef,
    Verdict,
)
from etctl.jobs.mpijob import _lifecycle as lifecycle
from etctl.jobs.mpijob._api import GROUP, MPIJOB, MPIJob, MPIReplicaType
from etctl.jobs.mpijob._names import launcher_name
from etctl.jobs.mpijob._pods import decorate_launcher, decorate_worker
from etctl.jobs.mpijob._validation import validate_mpijob
from etctl.runtime import KubeObject

__all__ = ["MPIJobPlugin", "operator_rules"]

WORKER = MPIReplicaType.WORKER
LAUNCHER = MPIReplicaType.LAUNCHER

_WRITE = ("create", "get", "list", "watch", "update", "patch", "delete")


def operator_rules() -> tuple[PolicyRule, ...]:
    """What the operator needs for MPIJobs beyond pods, services, events and the CRD's basics.

    ``mpijobs`` patch: the scaling machinery writes ``Worker.replicas`` (a clamped ``/scale``
    value, the size a finished scaler leaves); ScaleIns and ScaleOuts: it adopts them, creates
    them for ``/scale`` and writes their progress.
    """
    scalers = (SCALEIN.group,)
    return (
        PolicyRule((GROUP,), ("mpijobs",), ("get", "list", "watch", "patch")),
        PolicyRule(scalers, (SCALEIN.plural, SCALEOUT.plural), _WRITE),
        PolicyRule(
            scalers,
            (f"{SCALEIN.plural}/status", f"{SCALEOUT.plural}/status"),
            ("get", "update", "patch"),
        ),
    )


class MPIJobPlugin:
    """The MPIJob job kind (see the module docstring)."""

    # -- the required core

    @property
    def resource(self) -> CustomResource:
        """The MPIJob CRD."""
        return MPIJOB

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """MPIJob, and the ScaleIn and ScaleOut every elastic kind shares."""
        return (MPIJOB, SCALEIN, SCALEOUT)

    @property
    def model(self) -> type[MPIJob]:
        """The MPIJob model (both versions parse into it)."""
        return MPIJob

    def validate(self, job: MPIJob) -> list[str]:
        """mpi-operator's rules (:mod:`._validation`)."""
        return validate_mpijob(job)

    def decorate_pod(
        self, job: MPIJob, pod: KubeObject, ref: ReplicaRef, state: JobState[MPIJob]
    ) -> None:
        """Make a pod built from a template a worker or the launcher."""
        decorate = decorate_worker if ref.replica_type == WORKER else decorate_launcher
        decorate(
            pod,
            job=job.metadata.name,
            namespace=job.metadata.namespace,
            spec=job.spec,
            cluster_domain=state.settings.cluster_domain,
        )

    def verdict(self, job: MPIJob, state: JobState[MPIJob]) -> Verdict | None:
        """The launcher decides."""
        return lifecycle.verdict(job, state)

    # -- capabilities

    def gate(self, job: MPIJob, replica_type: str, state: JobState[Any]) -> Gate:
        """The launcher may wait for ready workers; workers never wait."""
        if replica_type != LAUNCHER:
            return Gate.opened()
        return lifecycle.launcher_gate(job, state)

    def plan(self, job: MPIJob, replica_type: str, state: JobState[Any]) -> Sequence[ReplicaRef]:
        """The launcher under mpi-operator's name; workers ``<job>-worker-<index>``."""
        name = job.metadata.name
        if replica_type == LAUNCHER:
            return [ReplicaRef(LAUNCHER, 0, launcher_name(name))]
        worker = job.spec.mpi_replica_specs.worker
        count = worker.replicas if worker is not None else 0
        return [ReplicaRef(WORKER, i, f"{name}-worker-{i}") for i in range(count)]

    def extend_status(self, job: MPIJob, state: JobState[Any]) -> dict[str, Any]:
        """The phase."""
        return lifecycle.extra_status(job, state)

    def rbac_rules(self) -> Sequence[PolicyRule]:
        """What the operator needs for MPIJobs."""
        return operator_rules()
