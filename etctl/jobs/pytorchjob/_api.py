"""The ``kubeflow.org/v1`` PyTorchJob API, JSON-compatible with kubeflow's training-operator.

A PyTorchJob runs PyTorch processes in pods of two replica types, each a
:class:`~etctl.common.ReplicaSpec`: an optional ``Master`` (exactly one pod, rank 0 of a static
job) and ``Worker`` (the elastic members of a job with an ``elasticPolicy``). The controller gives
every container the environment ``torchrun`` (``torch.distributed.run``) reads
(:mod:`etctl.jobs.pytorchjob._env`). training-operator's manifests (its ``examples/pytorch``,
elastic and not) parse and apply unchanged; replica type keys are matched case-insensitively, as
training-operator's defaulting camel-cases them (``worker`` becomes ``Worker``).

Defaults that are constants live in the CRD schema and in the models (training-operator's):
replicas 1, restartPolicy OnFailure, runPolicy.cleanPodPolicy None. Those that depend on other
fields (the ``pytorchjob-port`` on the ``pytorch`` container, the elastic bounds, ``nprocPerNode``
``auto``) are training-operator's ``SetDefaults_PyTorchJob``, applied by
:func:`etctl.jobs.pytorchjob._defaults.with_defaults` before anything reads them.

The schema refuses at admission what it can say cheaply (CEL rules that iterate over nothing):
a Master of other than one replica, fewer than one Worker, an elastic job without a Worker, bounds
out of order, an unknown ``rdzvBackend``, an etcd backend without ``rdzvHost``, ``nProcPerNode``
or ``nprocPerNode`` below 1, a ``rdzvConf`` entry torchrun cannot parse, a name too long for the
children. :func:`etctl.jobs.pytorchjob._validation.validate_pytorchjob` checks it all again for
jobs that bypassed the schema, plus what needs more than one field.

**Status** is kubeflow's JobStatus plus the elastic world: the members (``targetWorkers``,
``currentWorkers``, ``lastWorkerIndex``, as TrainingJob and MPIJob record them), the bounds in
force (``minReplicas``, ``maxReplicas``: the policy's, defaulted as training-operator defaults
them), the workers that do not run yet (``pendingWorkers``), and the rendezvous
(``rendezvousEndpoint``, ``rendezvousHost``).

**Managed by.** ``runPolicy.managedBy`` unset or ``kubeflow.org/training-operator`` makes the job
etctl's; any other value (``kueue.x-k8s.io/multikueue``) leaves it to that controller.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field

from etctl.common import (
    REPLICA_BOUNDS,
    CRDVersion,
    CustomResource,
    ElasticWorkersStatus,
    Int32,
    KnownKeys,
    KubeObjectModel,
    PrinterColumn,
    ReplicaSpec,
    RestartPolicy,
    RunPolicy,
    ScaleSubresource,
    ValueModel,
    canonical_keys,
)
from etctl.jobs.pytorchjob._metrics import MetricSpec
from etctl.jobs.pytorchjob._names import SHORTEST_SUFFIX

__all__ = [
    "API_VERSION",
    "CUSTOM_RESOURCES",
    "DEFAULT_CONTAINER_NAME",
    "DEFAULT_NPROC_PER_NODE",
    "DEFAULT_PORT",
    "DEFAULT_PORT_NAME",
    "GROUP",
    "KIND",
    "MAX_NAME_LENGTH",
    "NPROC_PER_NODE_PATTERN",
    "PYTORCHJOB",
    "PYTORCHJOBS",
    "TRAINING_OPERATOR",
    "VERSION",
    "ElasticPolicy",
    "PyTorchJob",
    "PyTorchJobSpec",
    "PyTorchJobStatus",
    "PyTorchReplicaSpec",
    "PyTorchReplicaType",
    "RDZVBackend",
    "RDZVConf",
]

GROUP: Final = "kubeflow.org"
VERSION: Final = "v1"
API_VERSION: Final = "kubeflow.org/v1"
KIND: Final = "PyTorchJob"
DEFAULT_CONTAINER_NAME: Final = "pytorch"
"""The container whose ``pytorchjob-port`` names the job's ports; every template needs one."""
DEFAULT_PORT_NAME: Final = "pytorchjob-port"
"""The container port whose number is ``MASTER_PORT`` and the default rendezvous port."""
DEFAULT_PORT: Final = 23456
"""The port the ``pytorch`` container gets when it declares no ``pytorchjob-port``."""
DEFAULT_NPROC_PER_NODE: Final = "auto"
"""``spec.nprocPerNode`` when neither it nor ``elasticPolicy.nProcPerNode`` is set."""
NPROC_PER_NODE_PATTERN: Final = r"^(auto|cpu|gpu|xpu|[1-9][0-9]*)$"
"""What ``torchrun --nproc-per-node`` accepts: a device kind, ``auto``, or a positive count."""
TRAINING_OPERATOR: Final = "kubeflow.org/training-operator"
"""training-operator's ``runPolicy.managedBy`` value: a job naming it is etctl's to run."""
MAX_NAME_LENGTH: Final = 63 - len(SHORTEST_SUFFIX)
"""The longest job name whose first worker's (and Master's) name is still a DNS-1035 label."""


class PyTorchReplicaType(StrEnum):
    """The replica types of a PyTorchJob, in the order their pods are created."""

    MASTER = "Master"
    WORKER = "Worker"


class RDZVBackend(StrEnum):
    """The rendezvous backends training-operator accepts (``torchrun --rdzv-backend``)."""

    C10D = "c10d"
    """A TCP store hosted by one member (etctl chooses which, see the rendezvous Service)."""
    ETCD = "etcd"
    """An etcd server of your own at ``rdzvHost`` (etcd's v2 API, torchrun's legacy backend)."""
    ETCD_V2 = "etcd-v2"
    """An etcd server of your own at ``rdzvHost`` (etcd's v2 API, the dynamic rendezvous)."""


class RDZVConf(ValueModel):
    """One key=value of torchrun's --rdzv-conf (join_timeout, read_timeout...)."""

    # torchrun splits the joined string on ',' and each entry on its first '=', and refuses an
    # empty key or value: the schema refuses what would make every member fail at start.
    model_config = ConfigDict(json_schema_extra={"required": ["key", "value"]})

    key: str = Field(default="", json_schema_extra={"pattern": r"^[^,=\s]+$", "default": None})
    """The option's name."""
    value: str = Field(default="", json_schema_extra={"pattern": r"^[^,\s]+$", "default": None})
    """The option's value."""


class PyTorchReplicaSpec(ReplicaSpec):
    """The pods of one replica type; training-operator restarts them OnFailure by default."""

    restart_policy: RestartPolicy = RestartPolicy.ON_FAILURE
    """Restart policy of these pods: Always, OnFailure, Never or ExitCode. Defaults to
    OnFailure."""


class _MasterSpec(PyTorchReplicaSpec):
    """The Master: rank 0 of a static job, ``MASTER_ADDR`` for every pod. Exactly one."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 1, "maximum": 1})
    """Always 1."""


class _WorkerSpec(PyTorchReplicaSpec):
    """The workers: the elastic members of a job with an elasticPolicy."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 1})
    """Desired number of workers (what ``kubectl scale`` and an HPA write). Defaults to 1."""


_REPLICA_SPEC_SCHEMA = KnownKeys(
    (
        (PyTorchReplicaType.MASTER.value, _MasterSpec),
        (PyTorchReplicaType.WORKER.value, _WorkerSpec),
    ),
    min_properties=1,
)

PyTorchReplicaSpecs = Annotated[
    dict[str, PyTorchReplicaSpec], canonical_keys(PyTorchReplicaType), _REPLICA_SPEC_SCHEMA
]

_ETCD_NEEDS_HOST: dict[str, Any] = {
    "rule": "!has(self.rdzvBackend) || !(self.rdzvBackend in ['etcd', 'etcd-v2']) "
    "|| has(self.rdzvHost)",
    "message": "the etcd and etcd-v2 backends rendezvous through an etcd server of your own: "
    "set rdzvHost (and rdzvPort) to its address",
}


class ElasticPolicy(ValueModel):
    """How torchrun runs the workers elastically, and how far they may be scaled."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [REPLICA_BOUNDS, _ETCD_NEEDS_HOST]}
    )

    min_replicas: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Fewest workers the job may be scaled to (torchrun's minimum nodes). Unset: maxReplicas,
    or Worker.replicas when both are unset."""
    max_replicas: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Most workers the job may be scaled to (torchrun's maximum nodes). Unset: minReplicas, or
    Worker.replicas when both are unset."""
    rdzv_backend: RDZVBackend | None = None
    """The rendezvous backend: c10d (the default), etcd or etcd-v2."""
    rdzv_port: Int32 | None = Field(
        default=None, json_schema_extra={"minimum": 1, "maximum": 65535}
    )
    """The rendezvous port. Unset: the Worker's pytorchjob-port (23456 by default)."""
    rdzv_host: str | None = Field(default=None, json_schema_extra={"minLength": 1})
    """The rendezvous host. Unset: the job's rendezvous Service, <job>-rdzv, which follows the
    member hosting the c10d store."""
    rdzv_id: str | None = None
    """torchrun's --rdzv-id (its run id)."""
    rdzv_conf: list[RDZVConf] | None = None
    """More rendezvous options (torchrun's --rdzv-conf), in order."""
    standalone: bool | None = None
    """Run a single-node rendezvous on localhost (torchrun's --standalone): backend, endpoint and
    id are then torchrun's own."""
    n_proc_per_node: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Processes per worker. Deprecated by training-operator: use spec.nprocPerNode."""
    max_restarts: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """How many times the workers may be restarted before the job fails (torchrun's
    --max-restarts); etctl counts it across replaced pods too."""
    metrics: list[MetricSpec] | None = None
    """The metrics of the HorizontalPodAutoscaler etctl creates for the job (none when unset)."""


_ELASTIC_NEEDS_WORKER: dict[str, Any] = {
    "rule": "!has(self.elasticPolicy) || has(self.pytorchReplicaSpecs.Worker) "
    "|| has(self.pytorchReplicaSpecs.worker)",
    "message": "an elastic PyTorchJob needs a Worker replica spec: its workers are the members "
    "the elasticPolicy scales",
}


# A transition rule: it runs on updates only, so a job created above its maximum is the
# controller's to refuse, and a /scale write above an unchanged maximum is clamped, not refused.
_MAX_NOT_BELOW_REPLICAS: dict[str, Any] = {
    "rule": "!has(self.elasticPolicy) || !has(self.elasticPolicy.maxReplicas) "
    "|| !has(self.pytorchReplicaSpecs.Worker) "
    "|| self.pytorchReplicaSpecs.Worker.replicas <= self.elasticPolicy.maxReplicas "
    "|| (has(oldSelf.elasticPolicy) && has(oldSelf.elasticPolicy.maxReplicas) "
    "&& oldSelf.elasticPolicy.maxReplicas == self.elasticPolicy.maxReplicas)",
    "message": "elasticPolicy.maxReplicas may not be set below the Worker replicas the job asks "
    "for: scale the job in first (kubectl scale), then lower it",
}


# A static job's pods carry WORLD_SIZE and RANK: its Worker count is its world, which /scale (and
# so kubectl scale) may not change while it has no elasticPolicy.
_STATIC_WORLD_FIXED: dict[str, Any] = {
    "rule": "has(self.elasticPolicy) || has(oldSelf.elasticPolicy) "
    "|| !has(self.pytorchReplicaSpecs.Worker) || !has(oldSelf.pytorchReplicaSpecs.Worker) "
    "|| self.pytorchReplicaSpecs.Worker.replicas == oldSelf.pytorchReplicaSpecs.Worker.replicas",
    "message": "a PyTorchJob without an elasticPolicy keeps its Worker replicas: its pods' "
    "WORLD_SIZE and RANK are fixed; a job created with an elasticPolicy can be scaled",
}

# Whether a job is elastic is settled when it is created: its pods' environment says it (a fixed
# WORLD_SIZE and RANK, or torchrun's rendezvous), and a policy added or removed later would give
# the pods made afterwards another world than the running ones.
_ELASTIC_KEPT: dict[str, Any] = {
    "rule": "has(self.elasticPolicy) == has(oldSelf.elasticPolicy)",
    "message": "elasticPolicy may not be added or removed once the PyTorchJob exists: its pods' "
    "environment (a fixed WORLD_SIZE and RANK, or torchrun's rendezvous) is settled; create a "
    "new job",
}


class PyTorchJobSpec(ValueModel):
    """Desired state of a PyTorchJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "required": ["pytorchReplicaSpecs"],
            "x-kubernetes-validations": [
                _ELASTIC_NEEDS_WORKER,
                _MAX_NOT_BELOW_REPLICAS,
                _STATIC_WORLD_FIXED,
                _ELASTIC_KEPT,
            ],
        }
    )

    run_policy: RunPolicy = Field(default_factory=RunPolicy, json_schema_extra={"default": {}})
    """Cleanup, time limits, retries, gang scheduling, suspension and managedBy."""
    elastic_policy: ElasticPolicy | None = None
    """Makes the workers elastic: torchrun's rendezvous, bounds, restarts and autoscaling."""
    pytorch_replica_specs: PyTorchReplicaSpecs = Field(default_factory=dict)
    """Replica specs by type: Master and Worker."""
    nproc_per_node: str | None = Field(
        default=None, json_schema_extra={"pattern": NPROC_PER_NODE_PATTERN}
    )
    """Processes per pod (torchrun's --nproc-per-node): auto, cpu, gpu, xpu or a count. Defaults
    to auto unless elasticPolicy.nProcPerNode is set."""

    def replica_types(self) -> list[str]:
        """The replica types of this job in creation order (known types first, then others)."""
        known = [t.value for t in PyTorchReplicaType if t.value in self.pytorch_replica_specs]
        return known + sorted(set(self.pytorch_replica_specs) - set(known))

    def replicas(self, replica_type: PyTorchReplicaType) -> PyTorchReplicaSpec | None:
        """The replica spec of ``replica_type``, if the job has one."""
        return self.pytorch_replica_specs.get(replica_type.value)


class PyTorchJobStatus(ElasticWorkersStatus):
    """Observed state of a PyTorchJob: kubeflow's JobStatus plus the elastic world."""

    min_replicas: Int32 | None = None
    """The fewest workers the job may run with now (torchrun's minimum nodes)."""
    max_replicas: Int32 | None = None
    """The most workers the job may run with now (torchrun's maximum nodes)."""
    pending_workers: list[str] = Field(default_factory=list)
    """Target workers whose pods do not run yet (unscheduled, pulling, starting), by name."""
    rendezvous_endpoint: str | None = None
    """PET_RDZV_ENDPOINT: where the members rendezvous (host:port)."""
    rendezvous_host: str | None = None
    """The member the rendezvous Service selects: the one hosting torchrun's c10d store."""
    worker_replacements: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Workers replaced under new names so far (failed or vanished): what elasticPolicy.maxRestarts
    is counted against, written with the targets that replace them."""


_NAME_FITS: dict[str, Any] = {
    "rule": f"size(self.metadata.name) <= {MAX_NAME_LENGTH}",
    "message": f"metadata.name must be at most {MAX_NAME_LENGTH} characters: the pods and their "
    "Services are named <name>-worker-<index> and <name>-master-0, DNS-1035 labels of at most 63",
}


class PyTorchJob(KubeObjectModel):
    """A distributed (and optionally elastic) PyTorch training job."""

    model_config = ConfigDict(
        json_schema_extra={"required": ["spec"], "x-kubernetes-validations": [_NAME_FITS]}
    )

    api_version: Literal["kubeflow.org/v1"] = API_VERSION
    kind: Literal["PyTorchJob"] = KIND
    spec: PyTorchJobSpec = Field(default_factory=PyTorchJobSpec)
    """Specification of the desired state of the PyTorchJob."""
    status: PyTorchJobStatus = Field(default_factory=PyTorchJobStatus)
    """Most recently observed state of the PyTorchJob (written by the controller)."""

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """The replica specs by type, in creation order (Master, then Worker).

        An elastic job's workers are handed over with restartPolicy Never: a worker whose pod
        failed is replaced under a new name by the scaling machinery (its rank is the
        rendezvous', not its index), never recreated under its name by the generic controller.
        Their pods still run with the spec's policy (the plugin sets it back on each pod), so the
        kubelet restarts a torchrun that exited in place.
        """
        specs: dict[str, ReplicaSpec] = {
            t: self.spec.pytorch_replica_specs[t] for t in self.spec.replica_types()
        }
        worker = specs.get(PyTorchReplicaType.WORKER.value)
        if self.elastic and worker is not None:
            never = worker.model_copy(update={"restart_policy": RestartPolicy.NEVER})
            specs[PyTorchReplicaType.WORKER.value] = never
        return specs

    def run_policy(self) -> RunPolicy:
        """The run policy; ``managedBy: kubeflow.org/training-operator`` reads as unset.

        That value names the controller etctl stands in for, so such a job is etctl's, like one
        without the field.
        """
        return self.spec.run_policy.owned_by(TRAINING_OPERATOR)

    @property
    def elastic(self) -> bool:
        """Whether the job has an elasticPolicy (its workers are elastic members)."""
        return self.spec.elastic_policy is not None


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
            name="Min",
            json_path=".status.minReplicas",
            type="integer",
            description="The fewest workers the job may run with (torchrun's minimum nodes).",
        ),
        PrinterColumn(
            name="Max",
            json_path=".status.maxReplicas",
            type="integer",
            description="The most workers the job may run with (torchrun's maximum nodes).",
        ),
        PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
        PrinterColumn(
            name="Desired",
            json_path=".spec.pytorchReplicaSpecs.Worker.replicas",
            type="integer",
            description="Desired worker pods.",
            priority=1,
        ),
        PrinterColumn(
            name="Rendezvous",
            json_path=".status.rendezvousEndpoint",
            description="Where the members rendezvous (PET_RDZV_ENDPOINT).",
            priority=1,
        ),
        PrinterColumn(
            name="Reason",
            json_path=".status.conditions[-1:].reason",
            description="Why the job is in its state.",
            priority=1,
        ),
    )


PYTORCHJOB = CustomResource(
    group=GROUP,
    kind=KIND,
    plural="pytorchjobs",
    short_names=("ptj",),
    categories=("kubeflow", "etctl"),
    versions=(
        CRDVersion(
            name=VERSION,
            model=PyTorchJob,
            printer_columns=_columns(),
            scale=ScaleSubresource(
                spec_replicas_path=".spec.pytorchReplicaSpecs.Worker.replicas",
                status_replicas_path=".status.replicaStatuses.Worker.active",
                label_selector_path=".status.replicaStatuses.Worker.selector",
            ),
        ),
    ),
)
"""The PyTorchJob CRD: ``/scale`` on the workers (training-operator's paths), short name ``ptj``
(``kubectl get pytorchjob``/``pytorchjobs`` work through the singular and plural)."""

PYTORCHJOBS = PYTORCHJOB.resource()
"""The PyTorchJob resource, for clients and informers."""

CUSTOM_RESOURCES: tuple[CustomResource, ...] = (PYTORCHJOB,)
"""The CRD of the PyTorchJob kind (ScaleIn and ScaleOut come with every elastic kind)."""
