"""The ``kubeflow.org`` MPIJob API: v2beta1 (mpi-operator v2) and v1, served by one CRD.

Both versions' manifests apply unchanged. The CRD serves ``v2beta1`` (the storage version: what
mpi-operator v2 and Kueue's built-in integration use) and ``v1`` (mpi-operator v1's elastic Horovod
API, training-operator's MPIJob).

**Storage and conversion.** etctl runs no conversion webhook, so the CRD's conversion strategy is
``None``: every served version reads and writes the same stored fields, only ``apiVersion``
changes (the embedded API server does exactly this too). Both versions therefore have the *same*
structural schema, the union of their fields, so nothing one version wrote is pruned when the
object is stored or read through the other. The versions differ only in their schema defaults,
which the API server applies at the version of the request that creates the object:

========================  ============  ============
default                   v2beta1       v1
========================  ============  ============
``launcherAttachMode``    ``ssh``       ``kubexec``
Launcher restartPolicy    ``OnFailure`` ``Never``
========================  ============  ============

``launcherAttachMode`` is etctl's field (et-operator's name): how the launcher reaches its
workers, over ssh with a generated key (mpi-operator v2) or through ``kubectl exec`` with
``/etc/mpi/kubexec.sh`` (mpi-operator v1, Horovod's Kubeflow mode). A manifest never needs it: the
version it is created with decides, once, and the stored value keeps the job's mode whatever
version reads it later. Objects stored before the field existed read as ``ssh`` (the storage
version's default).

Fields of one version only (``mainContainer`` and a top-level ``cleanPodPolicy`` are v1's,
``sshAuthMountPath``, ``launcherCreationPolicy``, ``mpiImplementation`` and
``runLauncherAsWorker`` v2beta1's) are accepted by both and mean the same everywhere. The top-level
``cleanPodPolicy`` wins over ``runPolicy.cleanPodPolicy`` when set (mpi-operator v1 read only the
former).

**Elastic.** ``spec.elasticPolicy.minReplicas``/``maxReplicas`` (kubeflow's names, as PyTorchJob
has them) bound the workers; a ``Worker.replicas`` outside them (written by ``kubectl scale`` or an
HPA through ``/scale``) is clamped with a Warning Event. The status adds the membership of the
elastic workers (``targetWorkers``, ``currentWorkers``, ``lastWorkerIndex``) and ``phase`` and
``currentScaler``, next to kubeflow's ``JobStatus``.

**Managed by.** ``runPolicy.managedBy`` unset or ``kubeflow.org/mpi-operator`` (mpi-operator's own
value) makes the job etctl's; any other value (``kueue.x-k8s.io/multikueue``) leaves it to that
controller.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import ConfigDict, Field

from etctl.common import (
    REPLICA_BOUNDS,
    CleanPodPolicy,
    CRDVersion,
    CustomResource,
    ElasticWorkersStatus,
    Int32,
    KubeObjectModel,
    PrinterColumn,
    ReplicaSpec,
    RestartPolicy,
    RunPolicy,
    ScaleSubresource,
    ValueModel,
)
from etctl.jobs.launcher import LauncherAttachMode
from etctl.jobs.mpijob._sizes import MAX_WORKERS

__all__ = [
    "API_VERSION",
    "API_VERSION_V1",
    "GROUP",
    "KIND",
    "MPIJOB",
    "MPIJOBS",
    "MPI_OPERATOR",
    "MULTIKUEUE",
    "V1",
    "V2BETA1",
    "ElasticPolicy",
    "LauncherAttachMode",
    "LauncherCreationPolicy",
    "LauncherSpec",
    "MPIImplementation",
    "MPIJob",
    "MPIJobSpec",
    "MPIJobStatus",
    "MPIJobV1",
    "MPIReplicaSpecs",
    "MPIReplicaType",
    "WorkerSpec",
    "parse_mpijob",
]

GROUP: Final = "kubeflow.org"
KIND: Final = "MPIJob"
V2BETA1: Final = "v2beta1"
V1: Final = "v1"
API_VERSION: Final = "kubeflow.org/v2beta1"
API_VERSION_V1: Final = "kubeflow.org/v1"
MPI_OPERATOR: Final = "kubeflow.org/mpi-operator"
"""mpi-operator's ``runPolicy.managedBy`` value: a job naming it is etctl's to run."""
MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
"""Kueue's MultiKueue ``managedBy`` value: such a job is Kueue's, etctl leaves it alone."""


class MPIReplicaType(StrEnum):
    """The replica types of an MPIJob, as keys of ``mpiReplicaSpecs`` and ``replicaStatuses``."""

    LAUNCHER = "Launcher"
    WORKER = "Worker"


class MPIImplementation(StrEnum):
    """The MPI implementation the launcher runs (it decides the hostfile's format)."""

    OPENMPI = "OpenMPI"
    INTEL = "Intel"
    MPICH = "MPICH"


class LauncherCreationPolicy(StrEnum):
    """When the launcher is created."""

    AT_STARTUP = "AtStartup"
    """With the workers."""
    WAIT_FOR_WORKERS_READY = "WaitForWorkersReady"
    """Once every worker is Ready."""


# The restart policies mpi-operator accepts for both replica types; the schema rejects others.
_RESTART_POLICIES: dict[str, Any] = {
    "enum": [RestartPolicy.NEVER.value, RestartPolicy.ON_FAILURE.value]
}


class LauncherSpec(ReplicaSpec):
    """The launcher: one pod that runs ``mpirun`` or ``horovodrun`` against the workers."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 1, "maximum": 1})
    """Always 1."""
    restart_policy: RestartPolicy = Field(
        default=RestartPolicy.ON_FAILURE, json_schema_extra=_RESTART_POLICIES
    )
    """Never or OnFailure (in-place restarts, counted against backoffLimit). Defaults to OnFailure
    (v2beta1) or Never (v1)."""


class _LauncherSpecV1(LauncherSpec):
    """The launcher: one pod that runs ``mpirun`` or ``horovodrun`` against the workers."""

    restart_policy: RestartPolicy = Field(
        default=RestartPolicy.NEVER, json_schema_extra=_RESTART_POLICIES
    )
    """Never or OnFailure (in-place restarts, counted against backoffLimit). Defaults to OnFailure
    (v2beta1) or Never (v1)."""


class WorkerSpec(ReplicaSpec):
    """The workers the launcher runs MPI processes on."""

    # The schema's maximum is the most workers any MPIJob's ConfigMap can list
    # (etctl.jobs.mpijob._sizes): a count above it could never run, so the API server refuses it
    # (on create, update and /scale) rather than the job failing later.
    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 1, "maximum": MAX_WORKERS})
    """Desired number of workers (what ``kubectl scale`` writes). Defaults to 1."""
    restart_policy: RestartPolicy = Field(
        default=RestartPolicy.NEVER, json_schema_extra=_RESTART_POLICIES
    )
    """Never (a failed worker leaves the job's hosts) or OnFailure (a failed worker is replaced by
    a new one under a new name). Defaults to Never."""


class MPIReplicaSpecs(ValueModel):
    """The Launcher and Worker replica specs, under mpi-operator's exact keys.

    Other keys are kept (not pruned) so that validation can name them.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=False,
        json_schema_extra={
            "x-kubernetes-preserve-unknown-fields": True,
            # The keys are mpi-operator's, case and all: a lower-case "launcher" or "worker"
            # (kept for the controller to name) leaves a required key missing.
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.Launcher)",
                    "message": "an MPIJob needs exactly one Launcher (keys are case-sensitive: "
                    "Launcher, Worker)",
                },
                {
                    "rule": "has(self.Worker)",
                    "message": "an MPIJob needs Workers (keys are case-sensitive: Launcher, "
                    "Worker)",
                },
            ],
        },
    )

    launcher: LauncherSpec | None = Field(
        default=None, alias="Launcher", json_schema_extra={"nullable": False}
    )
    """The launcher. Required."""
    worker: WorkerSpec | None = Field(
        default=None, alias="Worker", json_schema_extra={"nullable": False}
    )
    """The workers. Required."""

    def unknown(self) -> list[str]:
        """Keys that name no replica type (a lower-case ``worker``, a typo)."""
        return sorted((self.model_extra or {}).keys())


class _MPIReplicaSpecsV1(MPIReplicaSpecs):
    """The Launcher and Worker replica specs, under mpi-operator's exact keys.

    Other keys are kept (not pruned) so that validation can name them.
    """

    launcher: _LauncherSpecV1 | None = Field(
        default=None, alias="Launcher", json_schema_extra={"nullable": False}
    )
    """The launcher. Required."""


class ElasticPolicy(ValueModel):
    """Bounds of the elastic workers (kubeflow's PyTorchJob names)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [REPLICA_BOUNDS]})

    min_replicas: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Fewest workers the job may be scaled to. Unset means 1."""
    max_replicas: Int32 | None = Field(
        default=None, json_schema_extra={"minimum": 1, "maximum": MAX_WORKERS}
    )
    """Most workers the job may be scaled to. Unset means no limit."""

    def bounds(self) -> tuple[int, int | None]:
        """``(minimum, maximum)`` workers: unset minReplicas is 1, unset maxReplicas None."""
        low = self.min_replicas if self.min_replicas is not None else 1
        return max(low, 1), self.max_replicas


_REQUIRED_SPECS: dict[str, Any] = {"required": ["mpiReplicaSpecs"]}


class MPIJobSpec(ValueModel):
    """Desired state of an MPIJob (the fields of both versions; see the module docstring)."""

    model_config = ConfigDict(json_schema_extra=_REQUIRED_SPECS)

    slots_per_worker: Int32 = Field(default=1, json_schema_extra={"minimum": 1})
    """MPI processes per worker in the hostfile and discover_hosts.sh. Defaults to 1."""
    run_launcher_as_worker: bool = False
    """The launcher runs MPI processes too: it comes first in the hostfile (v2beta1)."""
    run_policy: RunPolicy = Field(default_factory=RunPolicy, json_schema_extra={"default": {}})
    """Cleanup, time limits, retries, gang scheduling, suspension and managedBy."""
    mpi_replica_specs: MPIReplicaSpecs = Field(default_factory=MPIReplicaSpecs)
    """The Launcher (exactly one) and Worker replica specs."""
    ssh_auth_mount_path: str = Field(default="/root/.ssh", json_schema_extra={"minLength": 1})
    """Where the ssh key is mounted in the launcher's and workers' first container (ssh mode).
    Defaults to /root/.ssh."""
    launcher_creation_policy: LauncherCreationPolicy = LauncherCreationPolicy.AT_STARTUP
    """When the launcher is created: AtStartup (with the workers) or WaitForWorkersReady."""
    mpi_implementation: MPIImplementation = MPIImplementation.OPENMPI
    """OpenMPI, Intel or MPICH: the hostfile's format and the launcher's environment."""
    clean_pod_policy: CleanPodPolicy | None = None
    """v1: pods deleted when the job finishes; wins over runPolicy.cleanPodPolicy when set."""
    main_container: str | None = None
    """v1: the worker container kubexec.sh runs commands in (default: the first one)."""
    elastic_policy: ElasticPolicy | None = None
    """Bounds of the elastic workers."""
    launcher_attach_mode: LauncherAttachMode = LauncherAttachMode.SSH
    """How the launcher reaches the workers: ssh (the v2beta1 default) or kubexec (the v1
    default). Set by the version a job is created with; manifests need not set it."""

    def replicas(self, replica_type: MPIReplicaType) -> ReplicaSpec | None:
        """The replica spec of ``replica_type``, if the job has one."""
        specs = self.mpi_replica_specs
        return specs.launcher if replica_type is MPIReplicaType.LAUNCHER else specs.worker

    def bounds(self) -> tuple[int, int | None]:
        """``(minimum, maximum)`` workers (see :meth:`ElasticPolicy.bounds`)."""
        return (self.elastic_policy or ElasticPolicy()).bounds()


class _MPIJobSpecV1(MPIJobSpec):
    """Desired state of an MPIJob (the fields of both versions; see the module docstring)."""

    mpi_replica_specs: _MPIReplicaSpecsV1 = Field(default_factory=_MPIReplicaSpecsV1)
    """The Launcher (exactly one) and Worker replica specs."""
    launcher_attach_mode: LauncherAttachMode = LauncherAttachMode.KUBEXEC
    """How the launcher reaches the workers: ssh (the v2beta1 default) or kubexec (the v1
    default). Set by the version a job is created with; manifests need not set it."""


class MPIJobStatus(ElasticWorkersStatus):
    """Observed state of an MPIJob: kubeflow's JobStatus plus the elastic membership."""


class MPIJob(KubeObjectModel):
    """An MPI job: a launcher and an elastic set of workers (the controller's view)."""

    model_config = ConfigDict(
        json_schema_extra={
            "required": ["spec"],
            "x-kubernetes-validations": [
                {
                    "rule": "size(self.metadata.name) <= 54",
                    "message": "metadata.name must be at most 54 characters: the launcher pod "
                    "is named <name>-launcher, a DNS-1035 label of at most 63",
                }
            ],
        }
    )

    api_version: Literal["kubeflow.org/v2beta1", "kubeflow.org/v1"] = API_VERSION
    kind: Literal["MPIJob"] = KIND
    spec: MPIJobSpec = Field(default_factory=MPIJobSpec)
    """Specification of the desired state of the MPIJob."""
    status: MPIJobStatus = Field(default_factory=MPIJobStatus)
    """Most recently observed state of the MPIJob (written by the controller)."""

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """Workers first, then the launcher: the order pods are created in.

        Workers are handed over with restartPolicy Never: a failed worker is replaced under a new
        name by the scaling machinery (Horovod blacklists a host that failed), never restarted
        in place or recreated under its name by the generic controller.
        """
        specs = self.spec.mpi_replica_specs
        out: dict[str, ReplicaSpec] = {}
        if specs.worker is not None:
            never = {"restart_policy": RestartPolicy.NEVER}
            out[MPIReplicaType.WORKER] = specs.worker.model_copy(update=never)
        if specs.launcher is not None:
            out[MPIReplicaType.LAUNCHER] = specs.launcher
        return out

    def run_policy(self) -> RunPolicy:
        """The run policy, with v1's top-level cleanPodPolicy and mpi-operator's managedBy.

        ``backoffLimit`` unset is 6, the default of the batch Job mpi-operator v2 runs its
        launcher as (restarts of the launcher are what it counts).
        """
        policy = self.spec.run_policy.owned_by(MPI_OPERATOR)
        update: dict[str, Any] = {}
        if self.spec.clean_pod_policy is not None:
            update["clean_pod_policy"] = self.spec.clean_pod_policy
        if policy.backoff_limit is None:
            update["backoff_limit"] = 6
        return policy.model_copy(update=update) if update else policy


class MPIJobV1(MPIJob):
    """An MPI job, as the ``kubeflow.org/v1`` version defaults it."""

    api_version: Literal["kubeflow.org/v2beta1", "kubeflow.org/v1"] = API_VERSION_V1
    spec: _MPIJobSpecV1 = Field(default_factory=_MPIJobSpecV1)
    """Specification of the desired state of the MPIJob."""


def parse_mpijob(document: dict[str, Any]) -> MPIJob:
    """A manifest parsed with the defaults of its own ``apiVersion`` (v1 or v2beta1).

    The operator reads every job at the storage version, after the API server applied the
    defaults of the version it was created with; this applies them to a manifest that never went
    through a server.
    """
    model = MPIJobV1 if document.get("apiVersion") == API_VERSION_V1 else MPIJob
    return model.model_validate(document)


def _columns() -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn(
            name="State",
            json_path=".status.phase",
            description=(
                "The latest condition of the job that holds (a finished scaling leaves a False "
                "Scaling condition last, so the last condition alone would say Scaling)."
            ),
        ),
        PrinterColumn(
            name="Workers",
            json_path=".status.replicaStatuses.Worker.active",
            type="integer",
            description="Running worker pods.",
        ),
        PrinterColumn(
            name="Desired",
            json_path=".spec.mpiReplicaSpecs.Worker.replicas",
            type="integer",
            description="Desired worker pods.",
        ),
        PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
        PrinterColumn(
            name="Min", json_path=".spec.elasticPolicy.minReplicas", type="integer", priority=1
        ),
        PrinterColumn(
            name="Max", json_path=".spec.elasticPolicy.maxReplicas", type="integer", priority=1
        ),
        PrinterColumn(
            name="Attach",
            json_path=".spec.launcherAttachMode",
            description="How the launcher reaches the workers: ssh or kubexec.",
            priority=1,
        ),
        PrinterColumn(
            name="Reason",
            json_path=".status.conditions[-1:].reason",
            description="Why the job is in its state.",
            priority=1,
        ),
    )


_SCALE = ScaleSubresource(
    spec_replicas_path=".spec.mpiReplicaSpecs.Worker.replicas",
    status_replicas_path=".status.replicaStatuses.Worker.active",
    label_selector_path=".status.replicaStatuses.Worker.selector",
)

MPIJOB = CustomResource(
    group=GROUP,
    kind=KIND,
    plural="mpijobs",
    short_names=("mj", "mpij"),
    categories=("kubeflow", "etctl"),
    versions=(
        CRDVersion(
            name=V2BETA1, model=MPIJob, storage=True, printer_columns=_columns(), scale=_SCALE
        ),
        CRDVersion(
            name=V1, model=MPIJobV1, storage=False, printer_columns=_columns(), scale=_SCALE
        ),
    ),
)
"""The MPIJob CRD: v2beta1 (storage) and v1, ``/scale`` on the workers (kubeflow's paths, as
PyTorchJob's), short names ``mj`` and ``mpij`` (mpi-operator v1's)."""

MPIJOBS = MPIJOB.resource()
"""The MPIJob resource at the storage version, for clients and informers."""
