"""The TFJob plugin of the generic JobController: what is particular to distributed TensorFlow.

The controller creates one pod per replica slot (``<job>-<type>-<index>``), claims it, restarts it
and cleans it up; this plugin adds what kubeflow's training-operator v1 adds for a TFJob:

* **pods** (:meth:`TFJobPlugin.decorate_pod`): the ``tfjob-port`` (2222) container port on the
  ``tensorflow`` container when it declares none, ``TF_CONFIG`` on that container when the job has
  more than one replica in total (:mod:`etctl.jobs.tfjob._tfconfig`), and the
  ``training.kubeflow.org/job-role=master`` label on the Chief or Master, else on worker 0;
* **services** (:meth:`TFJobPlugin.build_service`): one headless service per pod, named after it,
  selecting it by the controller's job, replica type and index labels, exposing the ``tensorflow``
  container's ports: the names TF_CONFIG advertises resolve to exactly one pod each;
* **plan** (:meth:`TFJobPlugin.plan`): with ``enableDynamicWorker``, workers grow only as far as
  their names fit 63 characters (each has a Service of its name): the rest are not created, and a
  Warning Event ``ReplicasClamped`` says so, once per change of the job, as the elastic kinds do;
* **verdict** (:meth:`TFJobPlugin.verdict`): kubeflow's status rules, below.

Verdict rules, applied to the replica types in kubeflow's order (Chief, Evaluator, Master, PS,
Worker); a later type's condition overrides an earlier one's, except that only Failed overrides
Succeeded, and Failed is final. "Active" is kubeflow's count: Running pods, not Pending ones.

1. With a Chief or Master, it decides: Running while it is active, Succeeded once every chief pod
   succeeded. Without one, the workers decide: Succeeded once every planned worker succeeded, or,
   with the
   default success policy, once worker 0 exited 0; else Running while any worker is active.
2. A replica type with failed pods fails the job (``TFJobFailed``), unless those pods are being
   restarted (restart policy OnFailure or Always, or ExitCode with a retryable exit code, which
   gives ``TFJobRestarting``), or the job has ``enableDynamicWorker`` and the type is Worker.

Invariants: every hook is pure (no I/O, no clock but ``state.now``, no environment reads: the
cluster domain comes from :class:`~etctl.common.JobSettings`), leaves its inputs untouched
except the pod it is asked to decorate, and gives the same answer for the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from etctl.common import (
    JOB_ROLE,
    CustomResource,
    FailureAction,
    JobConditionType,
    JobState,
    ReplicaRef,
    Replicas,
    ReplicaSpec,
    RestartPolicy,
    Verdict,
    failure_action,
    replica_labels,
)
from etctl.jobs.tfjob import _tfconfig as tfconfig
from etctl.jobs.tfjob._api import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    TFJOB,
    SuccessPolicy,
    TFJob,
    TFReplicaType,
    validate_tfjob,
)
from etctl.runtime import KubeObject, ObjectView, podview

__all__ = [
    "REASON_CLAMPED",
    "REASON_FAILED",
    "REASON_RESTARTING",
    "REASON_RUNNING",
    "REASON_SUCCEEDED",
    "TFJobPlugin",
    "is_master_role",
    "service_ports",
]

REASON_RUNNING: Final = "TFJobRunning"
REASON_SUCCEEDED: Final = "TFJobSucceeded"
REASON_FAILED: Final = "TFJobFailed"
REASON_RESTARTING: Final = "TFJobRestarting"
REASON_CLAMPED: Final = "ReplicasClamped"

# A worker's Service is named after it, and a Service name is a DNS label.
_NAME_MAX_LENGTH = 63

_CHIEFS = (TFReplicaType.CHIEF.value, TFReplicaType.MASTER.value)
# kubeflow's UpdateJobStatus walks the types in this order; a later type's condition wins.
_STATUS_ORDER = (
    TFReplicaType.CHIEF.value,
    TFReplicaType.EVALUATOR.value,
    TFReplicaType.MASTER.value,
    TFReplicaType.PS.value,
    TFReplicaType.WORKER.value,
)


def is_master_role(job: TFJob, replica_type: str, index: int) -> bool:
    """Whether a replica carries ``job-role=master``: the Chief or Master, else worker 0."""
    specs = job.spec.tf_replica_specs
    if any(chief in specs for chief in _CHIEFS):
        return replica_type in _CHIEFS
    return replica_type == TFReplicaType.WORKER.value and index == 0


def _restarting(spec: ReplicaSpec, failed_pods: Sequence[ObjectView]) -> bool:
    """Whether the controller restarts every failed pod of a replica type (its own rule)."""
    return all(failure_action(pod, spec)[0] is FailureAction.RESTART for pod in failed_pods)


def _tensorflow_container(pod_spec: Mapping[str, Any]) -> dict[str, Any] | None:
    containers = pod_spec.get("containers")
    for container in containers if isinstance(containers, list) else []:
        if isinstance(container, dict) and container.get("name") == DEFAULT_CONTAINER_NAME:
            return container
    return None


def service_ports(spec: ReplicaSpec) -> list[dict[str, Any]]:
    """The ports of a replica type's headless service: the ``tensorflow`` container's ports.

    The ``tfjob-port`` is included even when the template does not declare it (the controller adds
    it to every pod). A service with several ports needs a name on each: an unnamed container
    port is then named ``port-<number>``. Ports keep the container's order and protocol.
    """
    template_spec = spec.template.get("spec")
    container = _tensorflow_container(template_spec) if isinstance(template_spec, Mapping) else None
    declared = [
        port
        for port in (container or {}).get("ports") or []
        if isinstance(port, Mapping) and isinstance(port.get("containerPort"), int)
    ]
    if not any(port.get("name") == DEFAULT_PORT_NAME for port in declared):
        declared.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})
    ports: list[dict[str, Any]] = []
    seen: set[str] = set()
    for port in declared:
        number = int(port["containerPort"])
        port_name = str(port.get("name") or "")
        if not port_name and len(declared) > 1:
            port_name = f"port-{number}"
        if port_name in seen:
            continue
        seen.add(port_name)
        entry: dict[str, Any] = {"port": number}
        if port_name:
            entry["name"] = port_name
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol:
            entry["protocol"] = protocol
        ports.append(entry)
    return ports


class TFJobPlugin:
    """The TFJob kind: its CRD and model, and the phases validate, plan, build and judge."""

    @property
    def resource(self) -> CustomResource:
        """The TFJob CRD."""
        return TFJOB

    @property
    def model(self) -> type[TFJob]:
        """Jobs parse into :class:`~etctl.jobs.tfjob._api.TFJob`."""
        return TFJob

    def validate(self, job: TFJob) -> list[str]:
        """What the CRD schema cannot reject (see :func:`~etctl.jobs.tfjob._api.validate_tfjob`)."""
        return validate_tfjob(job)

    # -- plan

    def plan(self, job: TFJob, planned: Replicas, state: JobState[TFJob]) -> Replicas:
        """Dynamic workers, as far as their names fit 63 characters (see the module docstring)."""
        if not job.spec.enable_dynamic_worker or planned.replica_type != TFReplicaType.WORKER:
            return planned
        fitting = [ref for ref in planned.slots if len(ref.name) <= _NAME_MAX_LENGTH]
        if len(fitting) == len(planned.slots):
            return planned
        last = fitting[-1].name if fitting else "the first"
        message = (
            f"replicas {len(planned.slots)} of TFJob {job.metadata.name}'s Worker is more than "
            f"its worker names allow: workers past {last} would have names over "
            f"{_NAME_MAX_LENGTH} characters (each worker has a Service of its name, and a "
            f"Service name is a DNS label; a shorter job name leaves room for more); "
            f"running {len(fitting)}"
        )
        return planned.limited(len(fitting), REASON_CLAMPED, message)

    # -- pods and services

    def decorate_pod(
        self, job: TFJob, pod: KubeObject, ref: ReplicaRef, state: JobState[TFJob]
    ) -> None:
        """Add the default port, ``TF_CONFIG`` and the master role label to a new pod."""
        if is_master_role(job, ref.replica_type, ref.index):
            metadata = pod.setdefault("metadata", {})
            metadata.setdefault("labels", {})[JOB_ROLE] = "master"
        pod_spec = pod.get("spec")
        container = _tensorflow_container(pod_spec) if isinstance(pod_spec, Mapping) else None
        if container is None:
            # validate() reports the missing container; the controller never gets this far.
            return
        ports = container.setdefault("ports", [])
        if not any(isinstance(p, Mapping) and p.get("name") == DEFAULT_PORT_NAME for p in ports):
            ports.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})
        if not tfconfig.is_distributed(job):
            return
        value = tfconfig.tf_config_json(
            job, ref.replica_type, ref.index, cluster_domain=state.settings.cluster_domain
        )
        env = [
            e
            for e in container.get("env") or []
            if not (isinstance(e, Mapping) and e.get("name") == tfconfig.ENV_NAME)
        ]
        # Replacing a TF_CONFIG the template set keeps one definitive value in the pod spec.
        env.append({"name": tfconfig.ENV_NAME, "value": value})
        container["env"] = env

    def build_service(self, job: TFJob, ref: ReplicaRef, state: JobState[Any]) -> KubeObject | None:
        """The headless service of one replica, named after its pod."""
        spec = job.spec.tf_replica_specs.get(ref.replica_type)
        if spec is None:
            return None
        selector = replica_labels(
            job.metadata.name, state.settings.operator_name, ref.replica_type, ref.index
        )
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": ref.name,
                "namespace": job.metadata.namespace,
                "labels": dict(selector),
            },
            "spec": {
                "clusterIP": "None",
                "selector": selector,
                "ports": service_ports(spec),
            },
        }

    # -- status

    def verdict(self, job: TFJob, state: JobState[TFJob]) -> Verdict | None:
        """The condition kubeflow's rules give the replica statuses (see the module docstring)."""
        who = f"TFJob {job.metadata.name}"
        result: Verdict | None = None
        for rtype in _STATUS_ORDER:
            spec = job.spec.tf_replica_specs.get(rtype)
            if spec is None:
                continue
            progress = _progress(job, rtype, spec, state, who)
            failure = _failure(job, rtype, spec, state, who)
            if failure is not None and failure.condition is JobConditionType.FAILED:
                return failure
            if result is not None and result.condition is JobConditionType.SUCCEEDED:
                continue  # only a failure undoes a success, as in kubeflow
            result = failure or progress or result
        return result


def _status_counts(state: JobState[TFJob], rtype: str) -> tuple[int, int, int]:
    status = state.replica_statuses.get(rtype)
    return (status.active, status.succeeded, status.failed) if status else (0, 0, 0)


def _deciding(job: TFJob, rtype: str) -> bool:
    """Whether ``rtype`` decides Running and Succeeded: the chief if any, else the workers."""
    if any(chief in job.spec.tf_replica_specs for chief in _CHIEFS):
        return rtype in _CHIEFS
    return rtype == TFReplicaType.WORKER.value


def _progress(
    job: TFJob, rtype: str, spec: ReplicaSpec, state: JobState[TFJob], who: str
) -> Verdict | None:
    """Running or Succeeded, when ``rtype`` is the deciding replica type."""
    if not _deciding(job, rtype):
        return None
    active, succeeded, _ = _status_counts(state, rtype)
    done = state.replicas(rtype) - succeeded <= 0 or (
        rtype == TFReplicaType.WORKER.value
        and job.spec.success_policy is not SuccessPolicy.ALL_WORKERS
        and _worker0_completed(job, state)
    )
    if done:
        return Verdict(JobConditionType.SUCCEEDED, REASON_SUCCEEDED, f"{who} succeeded.")
    if active > 0:
        return Verdict(JobConditionType.RUNNING, REASON_RUNNING, f"{who} is running.")
    return None


def _failure(
    job: TFJob, rtype: str, spec: ReplicaSpec, state: JobState[TFJob], who: str
) -> Verdict | None:
    """Restarting or Failed, when ``rtype`` has failed pods."""
    _, _, failed = _status_counts(state, rtype)
    if failed <= 0:
        return None
    failed_pods = [pod for pod in state.pods_of(rtype) if podview.phase(pod) == "Failed"]
    if failed_pods and _restarting(spec, failed_pods):
        return Verdict(
            JobConditionType.RESTARTING,
            REASON_RESTARTING,
            f"{who} is restarting: {_replicas(len(failed_pods), rtype)} failed.",
        )
    if not failed_pods and _recreates(spec):
        # Counted failures whose pods are gone were restarted already: nothing to judge now.
        return None
    if job.spec.enable_dynamic_worker and rtype == TFReplicaType.WORKER.value:
        return None
    return Verdict(
        JobConditionType.FAILED,
        REASON_FAILED,
        f"{who} failed: {_replicas(failed, rtype)} failed.",
    )


def _replicas(count: int, rtype: str) -> str:
    """``1 Worker replica``, ``2 Worker replicas``."""
    return f"{count} {rtype} replica{'' if count == 1 else 's'}"


def _worker0_completed(job: TFJob, state: JobState[TFJob]) -> bool:
    """Whether worker 0's pod succeeded and exited 0 (the default success policy's test)."""
    name = tfconfig.replica_name(job.metadata.name, TFReplicaType.WORKER.value, 0)
    return any(
        pod.get("metadata", {}).get("name") == name
        and podview.phase(pod) == "Succeeded"
        and podview.exit_code(pod) is None
        for pod in state.pods_of(TFReplicaType.WORKER.value)
    )


def _recreates(spec: ReplicaSpec) -> bool:
    """Whether the controller recreates failed pods of this replica type (never with Never)."""
    return spec.restart_policy is not RestartPolicy.NEVER
