"""The ``kubeflow.org/v1`` TFJob API, JSON-compatible with kubeflow's training-operator.

A TFJob runs TensorFlow replicas of up to five types (PS, Worker, Chief, Master, Evaluator), each a
:class:`~etctl.common.ReplicaSpec`; the controller injects ``TF_CONFIG`` into the container
named ``tensorflow`` of every pod. kubeflow's manifests (dist-mnist, the estimator and keras
examples) parse and apply unchanged; replica type keys are matched case-insensitively, as
kubeflow's defaulting does (``worker`` becomes ``Worker``).

Defaults are kubeflow's and live in the CRD schema as well as in the models: replicas 1,
restartPolicy Never, runPolicy.cleanPodPolicy None, successPolicy "" (the default rules).

:func:`validate_tfjob` reports what the schema cannot express: no ``tensorflow`` container, both
Chief and Master, unknown replica types, names that pods and services cannot be derived from.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field

from etctl.common import (
    CRDVersion,
    CustomResource,
    Int32,
    JobStatus,
    KnownKeys,
    KubeObjectModel,
    PrinterColumn,
    ReplicaSpec,
    RunPolicy,
    ValueModel,
    canonical_keys,
    pod_containers,
    validate_name,
    validate_replica_spec,
    validate_run_policy,
)

__all__ = [
    "API_VERSION",
    "CUSTOM_RESOURCES",
    "DEFAULT_CONTAINER_NAME",
    "DEFAULT_PORT",
    "DEFAULT_PORT_NAME",
    "GROUP",
    "KIND",
    "TFJOB",
    "TFJOBS",
    "TRAINING_OPERATOR",
    "VERSION",
    "SuccessPolicy",
    "TFJob",
    "TFJobSpec",
    "TFReplicaType",
    "validate_tfjob",
]

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION: Final = "kubeflow.org/v1"
KIND: Final = "TFJob"
DEFAULT_CONTAINER_NAME = "tensorflow"
"""The container TF_CONFIG is injected into; every replica template must have one."""
DEFAULT_PORT_NAME = "tfjob-port"
"""The container port whose number TF_CONFIG advertises."""
DEFAULT_PORT = 2222
"""The port advertised when the container declares no ``tfjob-port``."""
TRAINING_OPERATOR: Final = "kubeflow.org/training-operator"
"""training-operator's ``runPolicy.managedBy`` value: a job naming it is etctl's to run."""


class TFReplicaType(StrEnum):
    """The replica types of a TFJob, in the order their pods are created."""

    PS = "PS"
    WORKER = "Worker"
    CHIEF = "Chief"
    MASTER = "Master"
    EVALUATOR = "Evaluator"


class SuccessPolicy(StrEnum):
    """When a TFJob counts as succeeded."""

    DEFAULT = ""
    """The chief (or master) succeeded; without one, worker 0 succeeded."""
    ALL_WORKERS = "AllWorkers"
    """Every worker succeeded."""


_TYPES = frozenset(t.value for t in TFReplicaType)


class _ChiefReplicaSpec(ReplicaSpec):
    """Replica spec of the Chief or Master: a TFJob has at most one."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 0, "maximum": 1})
    """Number of chief pods: 0 or 1. Defaults to 1."""


_REPLICA_SPEC_SCHEMA = KnownKeys(
    (
        (TFReplicaType.PS.value, ReplicaSpec),
        (TFReplicaType.WORKER.value, ReplicaSpec),
        (TFReplicaType.CHIEF.value, _ChiefReplicaSpec),
        (TFReplicaType.MASTER.value, _ChiefReplicaSpec),
        (TFReplicaType.EVALUATOR.value, ReplicaSpec),
    ),
    min_properties=1,
)

TFReplicaSpecs = Annotated[
    dict[str, ReplicaSpec], canonical_keys(TFReplicaType), _REPLICA_SPEC_SCHEMA
]


class TFJobSpec(ValueModel):
    """Desired state of a TFJob."""

    model_config = ConfigDict(json_schema_extra={"required": ["tfReplicaSpecs"]})

    tf_replica_specs: TFReplicaSpecs = Field(
        default_factory=dict,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.Chief) || !has(self.Master)",
                    "message": "Chief and Master are the same role: set only one",
                }
            ]
        },
    )
    """Replica specs by type: PS, Worker, Chief, Master, Evaluator."""
    run_policy: RunPolicy = Field(default_factory=RunPolicy, json_schema_extra={"default": {}})
    """Cleanup, time limits, retries, gang scheduling and suspension."""
    success_policy: SuccessPolicy = SuccessPolicy.DEFAULT
    """When the job counts as succeeded: "" (chief or worker 0) or AllWorkers."""
    enable_dynamic_worker: bool = False
    """Workers may come and go: TF_CONFIG lists workers sparsely and a failed worker does not fail
    the job."""

    def replica_types(self) -> list[str]:
        """The replica types of this job in creation order (known types first, then others)."""
        known = [t.value for t in TFReplicaType if t.value in self.tf_replica_specs]
        return known + sorted(set(self.tf_replica_specs) - set(known))


class TFJob(KubeObjectModel):
    """A distributed TensorFlow training job."""

    model_config = ConfigDict(json_schema_extra={"required": ["spec"]})

    api_version: Literal["kubeflow.org/v1"] = API_VERSION
    kind: Literal["TFJob"] = KIND
    spec: TFJobSpec = Field(default_factory=TFJobSpec)
    """Specification of the desired state of the TFJob."""
    status: JobStatus = Field(default_factory=JobStatus)
    """Most recently observed state of the TFJob (written by the controller)."""

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """The replica specs by type, in creation order."""
        return {t: self.spec.tf_replica_specs[t] for t in self.spec.replica_types()}

    def run_policy(self) -> RunPolicy:
        """The run policy (kubeflow's defaults already applied by the model).

        ``managedBy: kubeflow.org/training-operator`` names the controller etctl stands in for,
        so such a job is etctl's, like one without the field.
        """
        return self.spec.run_policy.owned_by(TRAINING_OPERATOR)


_WORKER = TFReplicaType.WORKER.value


def _longest_suffix(job: TFJob) -> str:
    """The longest ``-<type>-<index>`` suffix of this job's pods (for name length checks).

    Dynamic workers of a job that started are not counted past worker 0: they grow only as far as
    their names fit (the plugin's plan leaves the rest out, with a Warning), so raising their
    replicas never fails a job that runs.
    """
    spec = job.spec
    grows = spec.enable_dynamic_worker and job.status.start_time is not None
    suffixes = [
        f"-{rtype.lower()}-{0 if grows and rtype == _WORKER else max(replica.replicas - 1, 0)}"
        for rtype, replica in spec.tf_replica_specs.items()
    ]
    return max(suffixes, key=len, default="")


def validate_tfjob(job: TFJob) -> list[str]:
    """Problems that make ``job`` impossible to run, as ``<path>: <what>; <why>`` lines."""
    problems = validate_name(job.metadata.name, longest_suffix=_longest_suffix(job))
    specs = job.spec.tf_replica_specs
    path = "spec.tfReplicaSpecs"
    valid = ", ".join(t.value for t in TFReplicaType)
    if not specs:
        problems.append(f"{path}: no replica specs; set at least one of {valid}")
    for rtype, replica in specs.items():
        where = f"{path}.{rtype}"
        if rtype not in _TYPES:
            problems.append(f"{where}: unknown replica type; the types are {valid}")
            continue
        chief = rtype in (TFReplicaType.CHIEF, TFReplicaType.MASTER)
        problems.extend(validate_replica_spec(replica, path=where))
        if chief and replica.replicas > 1:
            problems.append(
                f"{where}.replicas: {replica.replicas}; a TFJob has at most one {rtype}, "
                "the replica that coordinates the others"
            )
        names = [str(container.get("name")) for container in pod_containers(replica.template)]
        if DEFAULT_CONTAINER_NAME not in names:
            problems.append(
                f'{where}.template: no container named "{DEFAULT_CONTAINER_NAME}"; the TFJob '
                "controller injects TF_CONFIG into that container"
            )
    if TFReplicaType.CHIEF in specs and TFReplicaType.MASTER in specs:
        problems.append(
            f"{path}: both Chief and Master are set; they are the same role, keep only one"
        )
    problems.extend(validate_run_policy(job.spec.run_policy))
    return problems


TFJOB = CustomResource(
    group=GROUP,
    kind=KIND,
    plural="tfjobs",
    short_names=("tfj",),
    categories=("kubeflow", "etctl"),
    versions=(
        CRDVersion(
            name=VERSION,
            model=TFJob,
            printer_columns=(
                PrinterColumn(
                    name="State",
                    json_path=".status.conditions[-1:].type",
                    description="The latest condition of the job.",
                ),
                PrinterColumn(
                    name="Workers",
                    json_path=".status.replicaStatuses.Worker.active",
                    type="integer",
                    description="Running worker pods.",
                ),
                PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
                PrinterColumn(
                    name="Reason",
                    json_path=".status.conditions[-1:].reason",
                    description="Why the job is in its state.",
                    priority=1,
                ),
                PrinterColumn(
                    name="Completed",
                    json_path=".status.completionTime",
                    type="date",
                    description="When the job finished.",
                    priority=1,
                ),
            ),
        ),
    ),
)
"""The TFJob CRD. ``kubectl get tfjob``/``tfjobs`` work through the singular and plural names;
``tfj`` is the short name (no clash among common CRDs)."""

TFJOBS = TFJOB.resource()
"""The TFJob resource, for clients and informers."""

CUSTOM_RESOURCES: tuple[CustomResource, ...] = (TFJOB,)
"""The CRDs of the TFJob kind: what :attr:`~etctl.jobs.tfjob._plugin.TFJobPlugin.custom_resources`
lists."""
