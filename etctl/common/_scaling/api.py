"""ScaleIn and ScaleOut (``kai.alibabacloud.com/v1alpha1``): requests to resize an elastic job.

A scaler names its job with ``spec.selector.name`` (same namespace), may run a script on the
launcher with a timeout and environment, and records its progress in its own status, so a
restarted controller resumes instead of repeating a step. et-operator's manifests parse and apply
unchanged; the CRDs are the ones et-operator's users know, plus the progress fields below.

Which kind of job (etctl's addition): ``spec.selector.kind`` (and optionally
``spec.selector.apiGroup``) names the job's kind, so a scaler can resize any elastic kind. A
selector without a kind names the elastic kind of the scalers' own API group
(``kai.alibabacloud.com``), which is what et-operator's scalers mean (:func:`scaler_targets`).

* ScaleOut: ``spec.toAdd.count`` workers are added.
* ScaleIn: either ``spec.toDelete.count`` workers are removed (the controller picks which), or
  exactly the workers in ``spec.toDelete.podNames``; the schema accepts one of the two, never both.

Defaults: ``timeout`` 60 seconds (et-operator's ``GetTimeout``). ``backoffLimit`` is kept for
compatibility; et-operator never reads it, and neither does etctl.

Progress (etctl's additions to et-operator's status, all written by the scaling controller before
it acts on them, see :mod:`etctl.common._scaling.machine`): ``addPods`` / ``toDeletePods`` (the
workers chosen), ``step`` (the step under way, :class:`ScaleStep`) and ``stepStartTime`` (when it
began: the base of the step's timeout).

Each elastic kind records its job's members in status fields of its own choosing
(:class:`~etctl.common.MemberFields`). :class:`ElasticWorkersStatus` is et-operator's choice,
ready for a kind that wants it: ``targetWorkers`` (the pods the job should have),
``currentWorkers`` (the running members, the hostfile), ``lastWorkerIndex`` (the highest worker
index ever used, so that no name is used twice) and ``currentScaler``.

The models do not depend on any job kind, so every elastic plugin shares them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Final, Literal

from pydantic import ConfigDict, Field

from etctl.common._api import (
    ConditionStatus,
    Int32,
    JobCondition,
    JobConditionType,
    JobStatus,
    KubeObjectModel,
    Timestamp,
    ValueModel,
)
from etctl.common._conditions import get_condition, is_true
from etctl.common._crd import CRDVersion, CustomResource, PrinterColumn
from etctl.common._members import WORKER_FIELDS, Members
from etctl.runtime import ObjectView, Resource

__all__ = [
    "API_VERSION",
    "DEFAULT_TIMEOUT_SECONDS",
    "GROUP",
    "SCALEIN",
    "SCALEINS",
    "SCALEOUT",
    "SCALEOUTS",
    "VERSION",
    "ElasticJobStatus",
    "ElasticWorkersStatus",
    "EnvVar",
    "ScaleIn",
    "ScaleInSpec",
    "ScaleInStatus",
    "ScaleOut",
    "ScaleOutSpec",
    "ScaleOutStatus",
    "ScaleStep",
    "ScalerSelector",
    "ScalerSpec",
    "ScalerStatus",
    "ToAdd",
    "ToDelete",
    "latest_type",
    "phase_of",
    "scaler_targets",
    "selector_of",
    "validate_scalein",
    "validate_scaleout",
    "validate_scaler_update",
]

GROUP = "kai.alibabacloud.com"
VERSION = "v1alpha1"
API_VERSION: Final = "kai.alibabacloud.com/v1alpha1"
DEFAULT_TIMEOUT_SECONDS = 60
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class EnvVar(ValueModel):
    """An environment variable exported for the scaler's script."""

    model_config = ConfigDict(json_schema_extra={"required": ["name"]})

    # The "" default only serves lenient parsing; the schema requires a name and has no default.
    name: str = Field(default="", json_schema_extra={"pattern": _ENV_NAME, "default": None})
    """Variable name: letters, digits and '_', not starting with a digit."""
    value: str = ""
    """Variable value."""


class ScalerSelector(ValueModel):
    """Which job a scaler resizes."""

    model_config = ConfigDict(json_schema_extra={"required": ["name"]})

    name: str = Field(default="", json_schema_extra={"minLength": 1, "default": None})
    """Name of the job, in the scaler's namespace."""
    kind: str | None = Field(default=None, json_schema_extra={"minLength": 1})
    """Kind of the job (etctl extension). Unset: the elastic kind of the scalers' API group."""
    api_group: str | None = Field(default=None, json_schema_extra={"minLength": 1})
    """API group of the job's kind (etctl extension), when its kind name alone is ambiguous."""

    def names(self, jobs: Resource) -> bool:
        """True when this selects a job of the resource ``jobs`` (see :func:`scaler_targets`)."""
        if self.api_group is not None and self.api_group != jobs.group:
            return False
        if self.kind is not None:
            return self.kind == jobs.kind
        return jobs.group == GROUP


class ToAdd(ValueModel):
    """How many workers a ScaleOut adds."""

    model_config = ConfigDict(json_schema_extra={"required": ["count"]})

    count: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1, "nullable": False})
    """Workers to add (at least 1)."""


class ToDelete(ValueModel):
    """Which workers a ScaleIn removes: a count, or the pod names."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["count"]}, {"required": ["podNames"]}]}
    )

    count: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1, "nullable": False})
    """Workers to remove (at least 1); the controller picks which."""
    pod_names: list[str] | None = Field(
        default=None,
        json_schema_extra={
            "minItems": 1,
            "items": {"type": "string", "minLength": 1},
            "nullable": False,
        },
    )
    """Worker pods to remove, by name."""


class ScalerSpec(ValueModel):
    """What every scaler has: the job it resizes and an optional script to run on the launcher."""

    model_config = ConfigDict(json_schema_extra={"required": ["selector"]})

    selector: ScalerSelector = Field(
        default_factory=ScalerSelector,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self == oldSelf",
                    "message": "the job a scaler resizes cannot change; create another scaler",
                }
            ]
        },
    )
    """The job to resize."""
    script: str | None = None
    """Script run on the launcher with the new host list, instead of rewriting the hostfile."""
    timeout: Int32 = Field(default=DEFAULT_TIMEOUT_SECONDS, json_schema_extra={"minimum": 1})
    """Seconds the scaling (pods, then script) may take before it fails. Defaults to 60."""
    env: list[EnvVar] | None = Field(default=None, json_schema_extra={"nullable": False})
    """Environment variables exported for the script."""
    backoff_limit: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Retries of the script (kept for compatibility with et-operator, which ignores it)."""

    @property
    def job_name(self) -> str:
        """Name of the job this scaler resizes."""
        return self.selector.name


class ScaleOutSpec(ScalerSpec):
    """Desired state of a ScaleOut."""

    model_config = ConfigDict(json_schema_extra={"required": ["selector", "toAdd"]})

    to_add: ToAdd | None = Field(default=None, json_schema_extra={"nullable": False})
    """How many workers to add."""


class ScaleInSpec(ScalerSpec):
    """Desired state of a ScaleIn."""

    model_config = ConfigDict(json_schema_extra={"required": ["selector", "toDelete"]})

    to_delete: ToDelete | None = Field(default=None, json_schema_extra={"nullable": False})
    """Which workers to remove."""


class ElasticJobStatus(JobStatus):
    """et-operator's JobStatus: kubeflow's (restartCount included) plus a phase and a scaler."""

    phase: str | None = None
    """The current phase (Created, Running, Scaling, Succeeded, Failed, Suspended...)."""
    current_scaler: str | None = None
    """The scaler being executed, as ``ScaleIn:<namespace>/<name>`` or ``ScaleOut:...``."""


def latest_type(conditions: Sequence[JobCondition]) -> str | None:
    """The phase a scaler's status shows: the type of its latest condition (et-operator's)."""
    return conditions[-1].type if conditions else None


def phase_of(conditions: Sequence[JobCondition]) -> str | None:
    """The phase an elastic job's status shows: the type of the latest condition that holds."""
    holding = [c for c in conditions if c.status is ConditionStatus.TRUE]
    return holding[-1].type if holding else None


class ElasticWorkersStatus(ElasticJobStatus):
    """The status of an elastic job as et-operator keeps it: a phase, a scaler and the workers."""

    target_workers: list[str] = Field(default_factory=list)
    """Worker pods the job should have, by name (the plan pods are created from)."""
    current_workers: list[str] = Field(default_factory=list)
    """Worker pods running and in the hostfile, by name, in index order."""
    last_worker_index: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """The highest worker index ever used; new workers get higher ones while their names fit."""

    def members(self) -> Members:
        """The members these fields record (:data:`WORKER_FIELDS`)."""
        return Members(
            fields=WORKER_FIELDS,
            targets=tuple(self.target_workers),
            current=tuple(self.current_workers),
            last_index=self.last_worker_index,
            scaler=self.current_scaler,
        )


class ScaleStep(StrEnum):
    """The step a scaler is in; absent while it waits for its turn."""

    CREATING = "Creating"
    """ScaleOut: the added workers are in the job's targets and being created."""
    JOINING = "Joining"
    """ScaleOut: the added workers run; they enter the membership (the hostfile)."""
    DRAINING = "Draining"
    """ScaleIn: the removed workers leave the membership; their pods still run."""
    SCRIPT = "Script"
    """The scaler's script runs on the launcher (recorded before it starts: never run twice)."""
    DELETING = "Deleting"
    """ScaleIn: the removed workers left the job's targets; their pods are being deleted."""
    ROLLING_BACK = "RollingBack"
    """ScaleOut failed: the added workers left the job's targets; their pods are being deleted."""
    FINISHING = "Finishing"
    """The job's desired worker count is updated to the new size."""
    DONE = "Done"
    """Finished: ScaleSucceeded or ScaleFailed says how."""


class ScalerStatus(ElasticJobStatus):
    """Progress of a scaler (see the module docstring)."""

    step: ScaleStep | None = None
    """The step under way; absent until the scaler's turn comes."""
    step_start_time: Timestamp | None = None
    """When the step began (the base of its timeout)."""
    queued_resource_version: str | None = None
    """The scaler's resourceVersion as first read, before any write of the operator's own."""

    def finished(self) -> bool:
        """True once the scaler succeeded or failed (et-operator's ``isScaleFinished``)."""
        return (
            self.step is ScaleStep.DONE
            or is_true(self.conditions, JobConditionType.SCALE_SUCCEEDED)
            or is_true(self.conditions, JobConditionType.SCALE_FAILED)
        )

    def adopted(self) -> bool:
        """True once the scaler's job took it (its ``Created`` condition holds)."""
        created = get_condition(self.conditions, JobConditionType.CREATED)
        return created is not None and created.status is ConditionStatus.TRUE


class ScaleOutStatus(ScalerStatus):
    """Observed state of a ScaleOut."""

    add_pods: list[str] = Field(default_factory=list)
    """Worker pods this scale-out creates, chosen before any is created."""


class ScaleInStatus(ScalerStatus):
    """Observed state of a ScaleIn."""

    to_delete_pods: list[str] = Field(default_factory=list)
    """Worker pods this scale-in removes, chosen before any is removed."""


class ScaleOut(KubeObjectModel):
    """A request to add workers to an elastic job."""

    model_config = ConfigDict(json_schema_extra={"required": ["spec"]})

    api_version: Literal["kai.alibabacloud.com/v1alpha1"] = API_VERSION
    kind: Literal["ScaleOut"] = "ScaleOut"
    spec: ScaleOutSpec = Field(default_factory=ScaleOutSpec)
    """Specification of the scale-out."""
    status: ScaleOutStatus = Field(default_factory=ScaleOutStatus)
    """Progress of the scale-out (written by the controller)."""


class ScaleIn(KubeObjectModel):
    """A request to remove workers from an elastic job."""

    model_config = ConfigDict(json_schema_extra={"required": ["spec"]})

    api_version: Literal["kai.alibabacloud.com/v1alpha1"] = API_VERSION
    kind: Literal["ScaleIn"] = "ScaleIn"
    spec: ScaleInSpec = Field(default_factory=ScaleInSpec)
    """Specification of the scale-in."""
    status: ScaleInStatus = Field(default_factory=ScaleInStatus)
    """Progress of the scale-in (written by the controller)."""


def selector_of(obj: ObjectView) -> ScalerSelector | None:
    """The ``spec.selector`` of a raw scaler, or None when it names no job."""
    spec = obj.get("spec")
    selector = spec.get("selector") if isinstance(spec, dict) else None
    if not isinstance(selector, dict):
        return None
    try:
        parsed = ScalerSelector.model_validate(selector)
    except ValueError:
        return None
    return parsed if parsed.name else None


def scaler_targets(obj: ObjectView, jobs: Resource) -> bool:
    """True when the raw scaler ``obj`` names a job of the resource ``jobs``.

    ``spec.selector.kind`` (with ``spec.selector.apiGroup`` when given) names the kind; a selector
    without a kind names the kind of the scalers' own API group, ``kai.alibabacloud.com``, as
    et-operator's scalers do (and a kind in another group only when named).
    """
    selector = selector_of(obj)
    return selector is not None and selector.names(jobs)


def _common_problems(spec: ScalerSpec) -> list[str]:
    problems = []
    if not spec.selector.name:
        problems.append(
            "spec.selector.name: missing; name the job to scale (in the same namespace)"
        )
    if spec.timeout < 1:
        problems.append(f"spec.timeout: {spec.timeout} is below 1 second; set 1 or more")
    if spec.backoff_limit is not None and spec.backoff_limit < 0:
        problems.append(f"spec.backoffLimit: {spec.backoff_limit} is negative; set 0 or more")
    for index, env in enumerate(spec.env or ()):
        if not re.fullmatch(_ENV_NAME, env.name):
            problems.append(
                f"spec.env[{index}].name: {env.name!r} is not a shell variable name (letters, "
                "digits and '_', not starting with a digit); the script gets it through export"
            )
    return problems


def validate_scaleout(scaler: ScaleOut) -> list[str]:
    """Problems that make ``scaler`` impossible to execute, as ``<path>: <what>`` lines."""
    problems = _common_problems(scaler.spec)
    to_add = scaler.spec.to_add
    if to_add is None or to_add.count is None:
        problems.append("spec.toAdd.count: missing; set how many workers to add (at least 1)")
    elif to_add.count < 1:
        problems.append(f"spec.toAdd.count: {to_add.count} is below 1; add at least one worker")
    return problems


def validate_scalein(scaler: ScaleIn) -> list[str]:
    """Problems that make ``scaler`` impossible to execute, as ``<path>: <what>`` lines."""
    problems = _common_problems(scaler.spec)
    to_delete = scaler.spec.to_delete
    count = to_delete.count if to_delete else None
    names = (to_delete.pod_names if to_delete else None) or []
    if count is not None and names:
        problems.append(
            "spec.toDelete: both count and podNames are set; set count to let the controller "
            "pick the workers, or podNames to name them, not both"
        )
    elif not names and (count is None or count < 1):
        shown = "missing" if count is None else f"{count} is below 1"
        problems.append(
            f"spec.toDelete: count {shown} and no podNames; set count (workers to remove, at "
            "least 1) or podNames (the workers to remove)"
        )
    for index, name in enumerate(names):
        if not name:
            problems.append(f"spec.toDelete.podNames[{index}]: empty; name a worker pod")
        elif name in names[:index]:
            problems.append(f"spec.toDelete.podNames[{index}]: {name!r} is listed twice")
    return problems


def validate_scaler_update(old: ScaleIn | ScaleOut, new: ScaleIn | ScaleOut) -> list[str]:
    """Problems with changing a scaler ``old`` into ``new``.

    A scaler names its job for good (its owner reference will, and the CRD's validation rule
    says the same); once its turn came (a step is recorded), its whole spec is what is being
    carried out: the workers it adds or removes were chosen from it and written down before any
    was touched.
    """
    if old.spec.selector != new.spec.selector:
        return [
            f"spec.selector: may not change (it names job {old.spec.selector.name!r}); create "
            "another scaler for another job"
        ]
    started = old.status.step is not None or old.status.finished()
    if started and old.spec != new.spec:
        step = old.status.step.value if old.status.step is not None else "finished"
        return [
            f"spec: may not change once the scaler started (step {step}); create another "
            "scaler for another change"
        ]
    return []


def _scaler_columns(count_path: str) -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn(
            name="Phase",
            json_path=".status.conditions[-1:].type",
            description="The latest condition of the scaler.",
        ),
        PrinterColumn(name="Job", json_path=".spec.selector.name", description="The job resized."),
        PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
        PrinterColumn(name="Count", json_path=count_path, type="integer", priority=1),
    )


SCALEOUT = CustomResource(
    group=GROUP,
    kind="ScaleOut",
    plural="scaleouts",
    # "so" would clash with KEDA's ScaledObject, a common CRD.
    short_names=("sco",),
    categories=("etctl",),
    versions=(
        CRDVersion(
            name=VERSION, model=ScaleOut, printer_columns=_scaler_columns(".spec.toAdd.count")
        ),
    ),
)
"""The ScaleOut CRD; short name ``sco``, category ``etctl``."""

SCALEIN = CustomResource(
    group=GROUP,
    kind="ScaleIn",
    plural="scaleins",
    # "si" would clash with the service catalog's ServiceInstance.
    short_names=("sci",),
    categories=("etctl",),
    versions=(
        CRDVersion(
            name=VERSION, model=ScaleIn, printer_columns=_scaler_columns(".spec.toDelete.count")
        ),
    ),
)
"""The ScaleIn CRD; short name ``sci``, category ``etctl``."""

SCALEOUTS = SCALEOUT.resource()
"""The ScaleOut resource, for clients and informers."""
SCALEINS = SCALEIN.resource()
"""The ScaleIn resource, for clients and informers."""
