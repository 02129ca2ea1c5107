"""The ``kai.alibabacloud.com/v1alpha1`` TrainingJob API, JSON-compatible with et-operator.

A TrainingJob is an elastic Horovod job: a launcher pod runs ``horovodrun`` against a set of worker
pods whose number may change between ``minReplicas`` and ``maxReplicas``, through ScaleIn and
ScaleOut objects (:mod:`etctl.common._scaling.api`) or through the ``/scale`` subresource
(``kubectl scale trainingjob/x --replicas=N`` or an HPA). et-operator's manifests parse and apply
unchanged.

Defaults (schema and models): worker and launcher replicas 1, replica restartPolicy Never,
launcherAttachMode ssh, job restartPolicy Never, backoffLimit 6, cleanPodPolicy Running (what
et-operator does when the field is unset, whatever its comment says).

etctl extension, strictly additive: an optional ``spec.runPolicy`` with ttlSecondsAfterFinished,
activeDeadlineSeconds, suspend, schedulingPolicy and managedBy (kubeflow's meaning). Objects
without it behave as under et-operator, and the schema adds no default for it, so stored objects
are unchanged.

Worker bounds: an unset ``minReplicas`` is 1 and an unset ``maxReplicas`` is no limit. A ScaleIn or
ScaleOut that would cross a bound fails; a ``replicas`` value outside them (written through the
``/scale`` subresource) is clamped with a Warning Event, never rejected.

The status keeps et-operator's fields (phase, currentScaler, restartCount, targetWorkers,
currentWorkers) plus ``lastWorkerIndex`` (:class:`~etctl.common.ElasticWorkersStatus`),
``replicas`` and ``workerSelector``, which the scale subresource reads: the controller keeps them
current (the job's size, and a label selector matching its workers).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import ConfigDict, Field

from etctl.common import (
    MANAGED_BY_IMMUTABLE,
    MANAGED_BY_KEPT,
    REPLICA_BOUNDS,
    CleanPodPolicy,
    CRDVersion,
    CustomResource,
    ElasticWorkersStatus,
    Int32,
    Int64,
    KubeObjectModel,
    PrinterColumn,
    ReplicaSpec,
    RestartPolicy,
    RunPolicy,
    ScaleSubresource,
    SchedulingPolicy,
    ValueModel,
    validate_name,
    validate_replica_spec,
    validate_run_policy,
    validate_scaling_bounds,
)
from etctl.jobs.launcher import LauncherAttachMode
from etctl.jobs.trainingjob._sizes import MAX_WORKERS

__all__ = [
    "API_VERSION",
    "GROUP",
    "SUSPEND_ANNOTATION",
    "TRAININGJOB",
    "TRAININGJOBS",
    "VERSION",
    "ETReplicaSpecs",
    "JobRestartPolicy",
    "LauncherAttachMode",
    "LauncherSpec",
    "TrainingJob",
    "TrainingJobReplicaType",
    "TrainingJobRunPolicy",
    "TrainingJobSpec",
    "TrainingJobStatus",
    "TrainingJobStep",
    "WorkerSpec",
    "validate_trainingjob",
]

GROUP: Final = "kai.alibabacloud.com"
VERSION: Final = "v1alpha1"
API_VERSION: Final = "kai.alibabacloud.com/v1alpha1"
SUSPEND_ANNOTATION: Final = "job-supervisor.kube-ai.io/job-suspended"
"""et-operator's suspension switch (``"true"``)."""


class TrainingJobReplicaType(StrEnum):
    """Replica types of a TrainingJob, as keys of ``status.replicaStatuses``."""

    LAUNCHER = "Launcher"
    WORKER = "Worker"


class TrainingJobStep(StrEnum):
    """Condition types recording et-operator's creation steps, in order."""

    WORKERS_CREATED = "WorkersCreated"
    WORKERS_READY = "WorkersReady"
    LAUNCHER_CREATED = "LauncherCreated"


class JobRestartPolicy(StrEnum):
    """What happens to the whole job when the launcher fails."""

    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    """Restart the whole job, up to backoffLimit times."""


_NAME_FITS_LAUNCHER: dict[str, Any] = {
    "rule": "size(self.metadata.name) <= 54",
    "message": "metadata.name must be at most 54 characters: the launcher pod is named "
    "<name>-launcher, a DNS-1035 label of at most 63",
}


class LauncherSpec(ReplicaSpec):
    """The launcher: one pod that runs the training command against the workers."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 1, "maximum": 1})
    """Always 1."""


class WorkerSpec(ReplicaSpec):
    """The workers: pods the launcher runs the training processes on."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [REPLICA_BOUNDS]})

    # The schema's maximum is the most workers any job's hostfile ConfigMap can list (see
    # etctl.jobs.trainingjob._sizes): a count above it could never run, so the API server
    # refuses it (on create, update and /scale) rather than the job failing later.
    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 1, "maximum": MAX_WORKERS})
    """Desired number of workers. Defaults to 1."""
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


class ETReplicaSpecs(ValueModel):
    """The launcher and worker replica specs."""

    model_config = ConfigDict(json_schema_extra={"required": ["launcher", "worker"]})

    launcher: LauncherSpec | None = Field(default=None, json_schema_extra={"nullable": False})
    """The launcher pod. Required."""
    worker: WorkerSpec | None = Field(default=None, json_schema_extra={"nullable": False})
    """The worker pods. Required."""


class TrainingJobRunPolicy(ValueModel):
    """etctl extension: run policies of kubeflow's RunPolicy that et-operator lacks."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [MANAGED_BY_KEPT]})

    ttl_seconds_after_finished: Int32 | None = Field(default=None, json_schema_extra={"minimum": 0})
    """Seconds after the job finishes before it is deleted. Unset keeps it forever."""
    active_deadline_seconds: Int64 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Seconds after the start time before a running job is failed."""
    scheduling_policy: SchedulingPolicy | None = None
    """Gang-scheduling settings."""
    suspend: bool = False
    """True stops the job: its pods are deleted until it is resumed."""
    managed_by: str | None = Field(
        default=None, json_schema_extra={"x-kubernetes-validations": [MANAGED_BY_IMMUTABLE]}
    )
    """The controller that manages the job: unset is this operator; any other value hands the job
    to that controller (Kueue's MultiKueue, say), and etctl leaves it alone."""


class TrainingJobSpec(ValueModel):
    """Desired state of a TrainingJob."""

    model_config = ConfigDict(json_schema_extra={"required": ["etReplicaSpecs"]})

    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.RUNNING
    """Pods deleted when the job finishes: All, Running or None. Defaults to Running."""
    et_replica_specs: ETReplicaSpecs = Field(default_factory=ETReplicaSpecs)
    """The launcher and worker replica specs."""
    launcher_attach_mode: LauncherAttachMode = LauncherAttachMode.SSH
    """How the launcher reaches the workers: ssh or kubexec. Defaults to ssh."""
    slots_per_worker: Int32 | None = Field(default=None, json_schema_extra={"minimum": 1})
    """Slots per worker in the hostfile; defaults to the worker's GPU limit, else 1."""
    restart_policy: JobRestartPolicy = JobRestartPolicy.NEVER
    """What happens when the launcher fails: Never, or OnFailure to restart the whole job."""
    backoff_limit: Int32 = Field(default=6, json_schema_extra={"minimum": 0})
    """Whole-job restarts allowed under restartPolicy OnFailure. Defaults to 6."""
    run_policy: TrainingJobRunPolicy | None = None
    """etctl extension: TTL after finishing, active deadline, suspension, gang scheduling."""


class TrainingJobStatus(ElasticWorkersStatus):
    """Observed state of a TrainingJob."""

    replicas: Int32 = 0
    """Workers the job has now (its target size), read by the scale subresource."""
    worker_selector: str | None = None
    """Label selector of the workers in string form (read by the scale subresource)."""


class TrainingJob(KubeObjectModel):
    """An elastic Horovod training job: a launcher and a scalable set of workers."""

    model_config = ConfigDict(
        json_schema_extra={
            "required": ["spec"],
            "x-kubernetes-validations": [_NAME_FITS_LAUNCHER],
        }
    )

    api_version: Literal["kai.alibabacloud.com/v1alpha1"] = API_VERSION
    kind: Literal["TrainingJob"] = "TrainingJob"
    spec: TrainingJobSpec = Field(default_factory=TrainingJobSpec)
    """Specification of the desired state of the TrainingJob."""
    status: TrainingJobStatus = Field(default_factory=TrainingJobStatus)
    """Most recently observed state of the TrainingJob (written by the controller)."""

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """The replica specs the generic controller manages: workers first, then the launcher.

        Both are handed over with restartPolicy Never, so their pods run with restartPolicy
        Never as et-operator's do and the generic same-name restart never touches them: a
        TrainingJob replaces a failed worker under a *new* name (Horovod blacklists the old
        host) and recreates a missing launcher only under restartPolicy Always, both decided
        from the policies in :attr:`spec` (:mod:`etctl.jobs.trainingjob._workers`).
        """
        specs = self.spec.et_replica_specs
        out: dict[str, ReplicaSpec] = {}
        never = {"restart_policy": RestartPolicy.NEVER}
        if specs.worker is not None:
            out[TrainingJobReplicaType.WORKER] = specs.worker.model_copy(update=never)
        if specs.launcher is not None:
            out[TrainingJobReplicaType.LAUNCHER] = specs.launcher.model_copy(update=never)
        return out

    def run_policy(self) -> RunPolicy:
        """The job's policies as a kubeflow RunPolicy (top-level fields plus the extension).

        et-operator's annotation ``job-supervisor.kube-ai.io/job-suspended: "true"`` suspends the
        job like ``spec.runPolicy.suspend`` does; removing it resumes the job (et-operator had no
        way back from Suspended).
        """
        extension = self.spec.run_policy or TrainingJobRunPolicy()
        suspended = self.metadata.annotations.get(SUSPEND_ANNOTATION, "").lower() == "true"
        return RunPolicy(
            clean_pod_policy=self.spec.clean_pod_policy,
            backoff_limit=self.spec.backoff_limit,
            ttl_seconds_after_finished=extension.ttl_seconds_after_finished,
            active_deadline_seconds=extension.active_deadline_seconds,
            scheduling_policy=extension.scheduling_policy,
            suspend=extension.suspend or suspended,
            managed_by=extension.managed_by or None,
        )


def validate_trainingjob(job: TrainingJob) -> list[str]:
    """Problems that make ``job`` impossible to run, as ``<path>: <what>; <why>`` lines."""
    spec = job.spec
    specs = spec.et_replica_specs
    path = "spec.etReplicaSpecs"
    worker_suffix = "-launcher"
    targets = job.status.target_workers
    if targets:
        # A started job keeps the names it has; a scale-out refuses names that would not fit
        # (NameTooLong) and a replacement chooses only names that fit, so neither a later
        # spec.replicas nor a worker failure fails a job that runs.
        longest = max(targets, key=len)
        worker_suffix = max(worker_suffix, longest[len(job.metadata.name) :], key=len)
    elif specs.worker is not None:
        highest = max(specs.worker.max_replicas or 0, specs.worker.replicas)
        worker_suffix = max(worker_suffix, f"-worker-{max(highest - 1, 0)}", key=len)
    problems = validate_name(job.metadata.name, longest_suffix=worker_suffix)
    if specs.launcher is None:
        problems.append(
            f"{path}.launcher: missing; a TrainingJob needs a launcher whose template runs the "
            "training command (horovodrun) against the workers"
        )
    else:
        problems.extend(
            validate_replica_spec(specs.launcher, path=f"{path}.launcher", minimum=1, maximum=1)
        )
    if specs.worker is None:
        problems.append(f"{path}.worker: missing; a TrainingJob needs a worker template")
    else:
        problems.extend(_worker_problems(specs.worker, f"{path}.worker"))
    if spec.slots_per_worker is not None and spec.slots_per_worker < 1:
        problems.append(f"spec.slotsPerWorker: {spec.slots_per_worker} is below 1; set 1 or more")
    if spec.backoff_limit < 0:
        problems.append(f"spec.backoffLimit: {spec.backoff_limit} is negative; set 0 or more")
    if spec.run_policy is not None:
        extension = spec.run_policy
        as_run_policy = RunPolicy(
            ttl_seconds_after_finished=extension.ttl_seconds_after_finished,
            active_deadline_seconds=extension.active_deadline_seconds,
            scheduling_policy=extension.scheduling_policy,
        )
        problems.extend(validate_run_policy(as_run_policy, path="spec.runPolicy"))
    return problems


def _worker_problems(worker: WorkerSpec, path: str) -> list[str]:
    problems = validate_replica_spec(worker, path=path, minimum=1)
    problems += validate_scaling_bounds(worker.min_replicas, worker.max_replicas, path=path)
    return problems


TRAININGJOB = CustomResource(
    group=GROUP,
    kind="TrainingJob",
    plural="trainingjobs",
    short_names=("tj",),
    categories=("etctl",),
    versions=(
        CRDVersion(
            name=VERSION,
            model=TrainingJob,
            printer_columns=(
                PrinterColumn(name="Phase", json_path=".status.phase"),
                PrinterColumn(
                    name="Workers",
                    json_path=".status.replicaStatuses.Worker.active",
                    type="integer",
                    description="Running worker pods.",
                ),
                PrinterColumn(
                    name="Desired",
                    json_path=".spec.etReplicaSpecs.worker.replicas",
                    type="integer",
                    description="Desired worker pods.",
                ),
                PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
                PrinterColumn(
                    name="Min",
                    json_path=".spec.etReplicaSpecs.worker.minReplicas",
                    type="integer",
                    priority=1,
                ),
                PrinterColumn(
                    name="Max",
                    json_path=".spec.etReplicaSpecs.worker.maxReplicas",
                    type="integer",
                    priority=1,
                ),
                PrinterColumn(name="Scaler", json_path=".status.currentScaler", priority=1),
            ),
            scale=ScaleSubresource(
                spec_replicas_path=".spec.etReplicaSpecs.worker.replicas",
                status_replicas_path=".status.replicas",
                label_selector_path=".status.workerSelector",
            ),
        ),
    ),
)
"""The TrainingJob CRD; short name ``tj``, category ``etctl``, ``/scale`` on the workers."""

TRAININGJOBS = TRAININGJOB.resource()
"""The TrainingJob resource, for clients and informers."""
