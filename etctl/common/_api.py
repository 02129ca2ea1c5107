"""The job API shared by every job kind: kubeflow's common types in pydantic.

Field names and JSON shape are those of kubeflow/common (``ReplicaSpec``, ``RunPolicy``,
``JobStatus``...), so existing TFJob, MPIJob and et-operator manifests parse unchanged. Job kinds
build their spec and status from these pieces (``etctl.jobs.<kind>.api``) and
:mod:`etctl.common._crd` turns the models into CRD schemas. The base configuration, scalar types and
metadata come from :mod:`etctl.common._meta` and are re-exported here.

Invariants:

* Parsing is lenient about values and strict about shape: a negative replica count or an
  inconsistent min/max parses (the schema rejects it at admission, and the ``validate_*``
  functions report it for objects that bypassed the schema), while a wrong type, an unknown enum
  value or a pod template without containers is a :class:`pydantic.ValidationError`.
* Values (conditions, owner references, specs and policies) are frozen; statuses are rebuilt with
  ``model_copy(update=...)`` by pure functions (:mod:`etctl.common._conditions`), never mutated.
* Pod templates stay plain dicts (deep-copied on parse, so a model never aliases a cached object);
  only the shape the controllers rely on is checked.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Annotated, Any, Final, Protocol

from pydantic import BeforeValidator, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from etctl.common._meta import (
    Int32,
    Int64,
    KubeModel,
    KubeObjectModel,
    ObjectMeta,
    OmitEmptyModel,
    OwnerReference,
    Quantity,
    Timestamp,
    ValueModel,
    format_timestamp,
    to_timestamp,
)

__all__ = [
    "MANAGED_BY_IMMUTABLE",
    "MANAGED_BY_KEPT",
    "REPLICA_BOUNDS",
    "CleanPodPolicy",
    "ConditionStatus",
    "Int32",
    "Int64",
    "JobCondition",
    "JobConditionType",
    "JobStatus",
    "KubeModel",
    "KubeObjectModel",
    "ObjectMeta",
    "OmitEmptyModel",
    "OwnerReference",
    "PodTemplate",
    "Quantity",
    "ReplicaSpec",
    "ReplicaStatus",
    "ReplicatedJob",
    "RestartPolicy",
    "RunPolicy",
    "SchedulingPolicy",
    "Timestamp",
    "ValueModel",
    "canonical_keys",
    "first_container_name",
    "format_timestamp",
    "pod_containers",
    "spelled_as",
    "to_timestamp",
]


# --- pod templates ------------------------------------------------------------------------------


def _pod_template_error(message: str) -> PydanticCustomError:
    return PydanticCustomError("pod_template", message)


def _check_pod_template(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _pod_template_error("a pod template must be a mapping with metadata and spec")
    spec = value.get("spec")
    if not isinstance(spec, Mapping):
        raise _pod_template_error("spec: a pod template needs a spec with containers")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise _pod_template_error("spec.containers: a pod template needs at least one container")
    for index, container in enumerate(containers):
        if not isinstance(container, Mapping):
            raise _pod_template_error(f"spec.containers[{index}]: a container must be a mapping")
        name = container.get("name")
        if not isinstance(name, str) or not name:
            raise _pod_template_error(
                f"spec.containers[{index}].name: every container needs a name"
            )
    return copy.deepcopy(dict(value))


_POD_TEMPLATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "required": ["spec"],
    "properties": {
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "required": ["containers"],
            "properties": {
                "containers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "required": ["name"],
                        "properties": {"name": {"type": "string", "minLength": 1}},
                    },
                },
            },
        },
    },
}

PodTemplate = Annotated[
    dict[str, Any],
    PlainValidator(_check_pod_template),
    WithJsonSchema(_POD_TEMPLATE_SCHEMA),
]
"""A ``PodTemplateSpec`` kept as a dict: a mapping whose ``spec.containers`` is a non-empty list of
mappings with a ``name``. Everything else in it is passed through untouched."""


def pod_containers(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The containers of a pod template (a checked :data:`PodTemplate` always has one or more)."""
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    if not isinstance(containers, list):
        return []
    return [c for c in containers if isinstance(c, Mapping)]


def first_container_name(obj: Mapping[str, Any]) -> str:
    """The name of the first container of a pod or pod template (``""`` when there is none)."""
    containers = pod_containers(obj)
    return str(containers[0].get("name") or "") if containers else ""


def spelled_as(value: Mapping[Any, Any], valid: Iterable[str]) -> dict[Any, Any]:
    """``value`` with its keys that match ``valid`` case-insensitively spelled as there.

    Unknown keys are kept as they are. Two keys that name the same one (``Worker`` and
    ``worker``) raise a ``duplicate_key`` validation error.
    """
    by_folded = {key.casefold(): str(key) for key in valid}
    out: dict[Any, Any] = {}
    for key, item in value.items():
        name = by_folded.get(key.casefold(), key) if isinstance(key, str) else key
        if name in out:
            raise PydanticCustomError(
                "duplicate_key",
                "'{key}' and another key both name '{name}'",
                {"key": key, "name": name},
            )
        out[name] = item
    return out


def canonical_keys(valid: Iterable[str]) -> BeforeValidator:
    """A validator that renames map keys matching ``valid`` case-insensitively to their spelling.

    kubeflow accepts ``worker`` for ``Worker`` (its defaulting camel-cases replica types); this
    keeps that behaviour. Unknown keys are kept as they are for validation to report. Two keys
    that name the same type (``Worker`` and ``worker``) are an error (:func:`spelled_as`).
    """
    keys = tuple(valid)

    def rename(value: Any) -> Any:
        return spelled_as(value, keys) if isinstance(value, Mapping) else value

    return BeforeValidator(rename)


# --- enums --------------------------------------------------------------------------------------


class RestartPolicy(StrEnum):
    """What happens to the pods of a replica type when they exit."""

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"
    """Restart on a retryable exit code (128 and above, e.g. a kill); fail on 1-127."""


class CleanPodPolicy(StrEnum):
    """Which pods are deleted when a job finishes."""

    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class ConditionStatus(StrEnum):
    """The status of a condition."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class JobConditionType(StrEnum):
    """Condition types every job kind and the scaler machinery share."""

    CREATED = "Created"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SUSPENDED = "Suspended"
    SCALING = "Scaling"
    SCALE_SUCCEEDED = "ScaleSucceeded"
    SCALE_FAILED = "ScaleFailed"
    SCRIPT_EXECUTED = "ScriptExecuted"
    REPLICA_FAILURE = "ReplicaFailure"
    """A pod cannot be created (the server refused it as invalid); removed once pods are."""


# --- spec pieces --------------------------------------------------------------------------------


class ReplicaSpec(ValueModel):
    """The pods of one replica type: how many, from which template, restarted how."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 0})
    """Desired number of pods of this replica type. Defaults to 1."""
    template: PodTemplate
    """Pod template of this replica type. Its restartPolicy is overridden by the replica spec's."""
    restart_policy: RestartPolicy = RestartPolicy.NEVER
    """Restart policy of these pods: Always, OnFailure, Never or ExitCode. Defaults to Never."""


class SchedulingPolicy(ValueModel):
    """Gang-scheduling settings, handed to the batch scheduler's PodGroup."""

    min_available: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Pods that must be schedulable together; defaults to the sum of all replicas."""
    queue: str | None = None
    """Scheduler queue of the PodGroup."""
    min_resources: dict[str, Quantity] | None = None
    """Resources the PodGroup needs before any pod starts."""
    priority_class: str | None = None
    """PriorityClass of the PodGroup."""
    schedule_timeout_seconds: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """How long the PodGroup may wait to be scheduled."""


# The generated CRDs install on Kubernetes 1.25 and later: their rules use neither `reason` nor
# `fieldPath` (1.28) nor `messageExpression` (1.27); an error names the rule's own node.
MANAGED_BY_IMMUTABLE: Final[dict[str, Any]] = {
    "rule": "self == oldSelf",
    "message": "managedBy is immutable once set",
}
"""CEL rule of a ``managedBy`` field: once set, it never changes (kubeflow's rule)."""

MANAGED_BY_KEPT: Final[dict[str, Any]] = {
    "rule": "!has(oldSelf.managedBy) || has(self.managedBy)",
    "message": "managedBy may not be removed once set",
}
"""CEL rule of an object with a ``managedBy`` field: once set, the field is not removed."""

REPLICA_BOUNDS: Final[dict[str, Any]] = {
    "rule": "!has(self.minReplicas) || !has(self.maxReplicas) "
    "|| self.minReplicas <= self.maxReplicas",
    "message": "minReplicas must not be above maxReplicas",
}
"""CEL rule of an object with elastic ``minReplicas`` and ``maxReplicas`` bounds."""


class RunPolicy(ValueModel):
    """Runtime policies of a job: cleanup, time limits, retries, gang scheduling, suspension."""

    # managedBy is immutable once set (kubeflow's rule), so a job Kueue dispatched never
    # changes hands: the CRDs say it with CEL, the API server enforces it.
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [MANAGED_BY_KEPT]})

    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.NONE
    """Pods deleted when the job finishes: All, Running or None. Defaults to None."""
    ttl_seconds_after_finished: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Seconds after the job finishes before it is deleted. Unset keeps it forever."""
    active_deadline_seconds: Int64 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Seconds after the start time before a running job is failed."""
    backoff_limit: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Retries before the job is marked failed."""
    scheduling_policy: SchedulingPolicy | None = None
    """Gang-scheduling settings."""
    suspend: bool = False
    """True stops the job: its pods are deleted until it is resumed."""
    managed_by: str | None = Field(
        default=None, json_schema_extra={"x-kubernetes-validations": [MANAGED_BY_IMMUTABLE]}
    )
    """The controller that manages the job. Unset, or the value of the upstream controller etctl
    stands in for (kubeflow.org/training-operator for a TFJob, kubeflow.org/mpi-operator for an
    MPIJob), means this operator; any other value hands the job to that controller (Kueue's
    MultiKueue, say), and etctl leaves it alone."""

    def owned_by(self, *controllers: str) -> RunPolicy:
        """This policy with ``managedBy`` cleared when it names this operator.

        A job kind's model calls it in ``run_policy()`` with the values of the controllers etctl
        stands in for (``kubeflow.org/mpi-operator``), so the generic controller reads one rule:
        ``managed_by`` set means the job is another controller's. An empty string is unset.
        """
        if self.managed_by is None or (self.managed_by and self.managed_by not in controllers):
            return self
        return self.model_copy(update={"managed_by": None})


# --- status -------------------------------------------------------------------------------------


class ReplicaStatus(ValueModel):
    """Pod counts of one replica type."""

    active: Int32 = 0
    """Pods running or pending."""
    succeeded: Int32 = 0
    """Pods that succeeded."""
    failed: Int32 = 0
    """Pods that failed."""
    selector: str | None = None
    """Label selector of these pods, in string form (for the scale subresource)."""
    completed_indexes: str | None = None
    """Indexes of the pods that succeeded, as batch/v1 Job writes them (1,3-5); a completed pod
    that is removed is not run again."""


class JobCondition(OmitEmptyModel, ValueModel):
    """One observation about a job; the last condition in the list is the latest."""

    type: str
    """Condition type (Created, Running, Succeeded, Failed...)."""
    status: ConditionStatus
    """True, False or Unknown."""
    reason: str = ""
    """Machine-readable reason of the last transition (CamelCase)."""
    message: str = ""
    """Human-readable details of the last transition."""
    last_update_time: Timestamp | None = None
    """When the condition was last updated."""
    last_transition_time: Timestamp | None = None
    """When the status last changed."""


class JobStatus(KubeModel):
    """Observed state of a job, as kubeflow's common JobStatus."""

    conditions: list[JobCondition] = Field(default_factory=list)
    """Observations, oldest first; the last one is the current state."""
    replica_statuses: dict[str, ReplicaStatus] = Field(default_factory=dict)
    """Pod counts by replica type."""
    start_time: Timestamp | None = None
    """When the controller started the job."""
    completion_time: Timestamp | None = None
    """When the job finished."""
    last_reconcile_time: Timestamp | None = None
    """When the job was last reconciled."""
    restart_count: Int32 = 0
    """Restarts of pods that no longer exist: recreations after failures (whole-job restarts
    included) plus the in-place restarts those pods had. With the in-place restarts of the live
    pods, this is what the backoff limit counts."""


class ReplicatedJob(Protocol):
    """What the generic JobController reads from any job kind."""

    @property
    def metadata(self) -> ObjectMeta:
        """The job's metadata."""
        ...

    @property
    def status(self) -> JobStatus:
        """The job's status (a job kind may extend :class:`JobStatus`)."""
        ...

    def replica_specs(self) -> Mapping[str, ReplicaSpec]:
        """The replica specs by replica type, in creation order."""
        ...

    def run_policy(self) -> RunPolicy:
        """The job's run policy, with the job kind's defaults applied."""
        ...
