"""The generic JobController: what a job plugin author needs, in one namespace.

``etctl.common`` is the front door of the common layer; every module behind it is private and may
change. A plugin describes its kind with the shared job API (:class:`JobModel` for a simple kind,
or :class:`ReplicaSpec`, :class:`RunPolicy`, :class:`JobStatus` and friends), gives its CRD and
model (:class:`JobPlugin`) and implements the phases it needs, which the framework runs in one
order: validate and default, plan replicas (:class:`Replicas`), build desired objects
(:class:`DesiredObject`), judge the outcome (:class:`Verdict`), extend status. An elastic kind adds
a small protocol (:class:`ScalesElastically`). It is registered through the ``etctl.jobs`` entry
point; :func:`setup_job_controller` wires it into a runtime ``Manager``. The ScaleIn/ScaleOut API
shared by elastic kinds is here too. See ``docs/plugins.md``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from etctl.common._api import (
    MANAGED_BY_IMMUTABLE,
    MANAGED_BY_KEPT,
    REPLICA_BOUNDS,
    CleanPodPolicy,
    ConditionStatus,
    Int32,
    Int64,
    JobCondition,
    JobConditionType,
    JobStatus,
    KubeModel,
    KubeObjectModel,
    ObjectMeta,
    OmitEmptyModel,
    OwnerReference,
    PodTemplate,
    Quantity,
    ReplicaSpec,
    ReplicaStatus,
    ReplicatedJob,
    RestartPolicy,
    RunPolicy,
    SchedulingPolicy,
    Timestamp,
    ValueModel,
    canonical_keys,
    first_container_name,
    format_timestamp,
    pod_containers,
    to_timestamp,
)
from etctl.common._conditions import (
    PODS_CREATED,
    get_condition,
    is_finished,
    is_true,
    pods_created,
    set_condition,
)
from etctl.common._context import (
    ControllerContext,
)
from etctl.common._crd import (
    CRDVersion,
    CustomResource,
    PrinterColumn,
    ScaleSubresource,
    crd_manifest,
)
from etctl.common._gang import (
    SCHEDULER_PLUGINS,
    VOLCANO,
    scheduler_for,
)
from etctl.common._jobcontroller import (
    JobController,
)
from etctl.common._jobmodel import (
    JobModel,
    JobSpec,
    job_resource,
)
from etctl.common._labels import (
    JOB_NAME,
    JOB_ROLE,
    OPERATOR_NAME,
    REPLICA_INDEX,
    REPLICA_TYPE,
    job_selector,
    replica_labels,
)
from etctl.common._members import (
    WORKER_FIELDS,
    MemberFields,
)
from etctl.common._objectsize import (
    MAX_DATA_BYTES,
    MAX_OBJECT_BYTES,
    SizeLimits,
    json_size,
)
from etctl.common._openapi import (
    KnownKeys,
    openapi_schema,
)
from etctl.common._plugin import (
    BringsResources,
    BuildsExtraObjects,
    BuildsServices,
    Capabilities,
    Consumer,
    ConsumesMembers,
    DeclaresRBAC,
    DecoratesPods,
    DesiredObject,
    ElasticMembers,
    ExecTarget,
    ExtendsStatus,
    Gate,
    JobPlugin,
    JobSettings,
    JobState,
    Judges,
    LimitsMembers,
    MemberPolicy,
    PlansReplicas,
    PolicyRule,
    PublishedFile,
    PublishesFiles,
    ReplicaRef,
    Replicas,
    RestartsWholeJob,
    RunsControllers,
    ScalesElastically,
    SyncPolicy,
    Validates,
    ValidatesUpdates,
    Verdict,
    custom_resources,
)
from etctl.common._restarts import (
    FailureAction,
    failure_action,
)
from etctl.common._scaling.api import (
    SCALEIN,
    SCALEINS,
    SCALEOUT,
    SCALEOUTS,
    ElasticWorkersStatus,
    ScaleIn,
    ScaleOut,
    phase_of,
    scaler_targets,
    validate_scalein,
    validate_scaleout,
    validate_scaler_update,
)
from etctl.common._slots import (
    slot_name,
)
from etctl.common._validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    validate_job_update,
    validate_name,
    validate_pod_template,
    validate_replica_spec,
    validate_run_policy,
    validate_scaling_bounds,
)
from etctl.common._wiring import (
    DEFAULT_JOB_WORKERS,
    setup_job_controller,
)

if TYPE_CHECKING:
    from etctl.common._admission import ModelAdmission
    from etctl.common._webhooks import ScaledJobs, setup_job_webhooks

_LAZY = {
    "ModelAdmission": "etctl.common._admission",
    "ScaledJobs": "etctl.common._webhooks",
    "setup_job_webhooks": "etctl.common._webhooks",
}
"""Names loaded on first use: a kind's admission webhooks, which an operator without webhooks
never serves (they load the runtime's webhook server and its admission reviews)."""


def __getattr__(name: str) -> Any:
    """Load the admission names on first use (see :data:`_LAZY`)."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "BringsResources",
    "BuildsExtraObjects",
    "BuildsServices",
    "CRDVersion",
    "Capabilities",
    "CleanPodPolicy",
    "ConditionStatus",
    "Consumer",
    "ConsumesMembers",
    "ControllerContext",
    "CustomResource",
    "DEFAULT_JOB_WORKERS",
    "DeclaresRBAC",
    "DecoratesPods",
    "DesiredObject",
    "ElasticMembers",
    "ElasticWorkersStatus",
    "ExecTarget",
    "ExtendsStatus",
    "FailureAction",
    "Gate",
    "Int32",
    "Int64",
    "JOB_NAME",
    "JOB_ROLE",
    "JobCondition",
    "JobConditionType",
    "JobController",
    "JobModel",
    "JobPlugin",
    "JobSettings",
    "JobSpec",
    "JobState",
    "JobStatus",
    "Judges",
    "KnownKeys",
    "KubeModel",
    "KubeObjectModel",
    "LimitsMembers",
    "MANAGED_BY_IMMUTABLE",
    "MANAGED_BY_KEPT",
    "MAX_DATA_BYTES",
    "MAX_OBJECT_BYTES",
    "MemberFields",
    "MemberPolicy",
    "ModelAdmission",
    "OPERATOR_NAME",
    "ObjectMeta",
    "OmitEmptyModel",
    "OwnerReference",
    "PODS_CREATED",
    "PlansReplicas",
    "PodTemplate",
    "PolicyRule",
    "PrinterColumn",
    "PublishedFile",
    "PublishesFiles",
    "Quantity",
    "REPLICA_BOUNDS",
    "REPLICA_INDEX",
    "REPLICA_TYPE",
    "ReplicaRef",
    "ReplicaSpec",
    "ReplicaStatus",
    "Replicas",
    "ReplicatedJob",
    "RestartPolicy",
    "RestartsWholeJob",
    "RunPolicy",
    "RunsControllers",
    "SCALEIN",
    "SCALEINS",
    "SCALEOUT",
    "SCALEOUTS",
    "SCHEDULER_PLUGINS",
    "ScaleIn",
    "ScaleOut",
    "ScaleSubresource",
    "ScaledJobs",
    "ScalesElastically",
    "SchedulingPolicy",
    "SizeLimits",
    "SyncPolicy",
    "Timestamp",
    "VOLCANO",
    "Validates",
    "ValidatesUpdates",
    "ValueModel",
    "Verdict",
    "WORKER_FIELDS",
    "canonical_keys",
    "crd_manifest",
    "custom_resources",
    "failure_action",
    "first_container_name",
    "format_timestamp",
    "get_condition",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_finished",
    "is_true",
    "job_resource",
    "job_selector",
    "json_size",
    "openapi_schema",
    "phase_of",
    "pod_containers",
    "pods_created",
    "replica_labels",
    "scaler_targets",
    "scheduler_for",
    "set_condition",
    "setup_job_controller",
    "setup_job_webhooks",
    "slot_name",
    "to_timestamp",
    "validate_job_update",
    "validate_name",
    "validate_pod_template",
    "validate_replica_spec",
    "validate_run_policy",
    "validate_scalein",
    "validate_scaleout",
    "validate_scaler_update",
    "validate_scaling_bounds",
]
