"""The TrainingJob plugin: et-operator's TrainingJob on the generic job controller.

The generic :class:`~etctl.common.JobController` runs the reconcile; this plugin
says what is particular to a TrainingJob, each hook delegating to a module of its own:

=====================  ==========================================================================
core                   the CRD (``resource``, with ScaleIn and ScaleOut: ``custom_resources``)
                       and the model
validate               et-operator's rules, and a first membership too large to hold
plan                   the launcher is ``<job>-launcher`` and waits for its workers
                       (:func:`._lifecycle.launcher_gate`); the workers are the framework's
                       elastic plan, from ``status.targetWorkers``
build                  pods (:mod:`._layout`, :mod:`._workers`); a headless service per worker
                       (:func:`._workers.worker_service`); the ssh Secret, then, once the workers
                       run, the launcher's ServiceAccount, Role and RoleBinding and the ConfigMap
                       (:mod:`._layout`), kept in line with the membership
judge                  the launcher decides (:mod:`._lifecycle`); ``spec.restartPolicy:
                       OnFailure`` restarts every pod, up to backoffLimit
extend status          phase, replicas, workerSelector (:func:`._lifecycle.extra_status`)
elastic                the workers are an elastic membership; the launcher consumes it
                       (:mod:`._scaling`); a membership too large for the ConfigMap or the status
                       is refused (:mod:`._sizes`)
kind-level             the operator's RBAC (:func:`operator_rules`), the hostfile pusher, the
                       hostfile in ``<job>-config`` where the launcher reads it
=====================  ==========================================================================

What every launcher/worker kind does (the files, the launcher's decoration and gate, the ssh key,
the launcher's RBAC, the membership pusher, the size checks) is :mod:`etctl.jobs.launcher`'s; the
modules here say what is a TrainingJob's: et-operator's names, labels, layout and fields. Every hook
is pure: it reads the job and the state it is given and returns what it wants.

Options (keyword-only): ``workers_ready_timeout`` (seconds the launcher waits for its workers
before the job fails; 600), ``kubectl_image`` (an image with ``sh`` and ``kubectl`` whose
kubectl the launcher gets in kubexec mode; none by default, see :mod:`._layout`),
``exec_timeout`` (seconds one exec of the hostfile pusher may take; 30) and ``size_limits`` (the
cluster's object size limits, a real cluster's by default: a job whose ConfigMap or status would
not fit fails as invalid, a scale-out that would cross them fails at its start; see
:mod:`._sizes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.common import (
    SCALEIN,
    SCALEOUT,
    Consumer,
    ControllerContext,
    CustomResource,
    DesiredObject,
    JobConditionType,
    JobState,
    MemberPolicy,
    PolicyRule,
    PublishedFile,
    ReplicaRef,
    Replicas,
    ReplicaSpec,
    SizeLimits,
    SyncPolicy,
    Verdict,
    first_container_name,
    get_condition,
)
from etctl.jobs import launcher as shared
from etctl.jobs.launcher import (
    DEFAULT_EXEC_TIMEOUT,
    HOSTFILE_KEY,
    LAUNCHER_RESOURCES,
    launcher_objects,
    setup_membership_pusher,
    ssh_secret,
)
from etctl.jobs.trainingjob import _lifecycle as lifecycle
from etctl.jobs.trainingjob._api import (
    GROUP,
    TRAININGJOB,
    JobRestartPolicy,
    LauncherAttachMode,
    TrainingJob,
    TrainingJobReplicaType,
    validate_trainingjob,
)
from etctl.jobs.trainingjob._layout import LAYOUT, config_data, decorate_launcher
from etctl.jobs.trainingjob._names import (
    NAMES,
    SSH_SECRET_ANNOTATION,
    config_name,
    launcher_name,
    ssh_secret_name,
    worker_prefix,
)
from etctl.jobs.trainingjob._scaling import ELASTIC, consumer, job_slots, member_policy
from etctl.jobs.trainingjob._sizes import Names, membership_problem
from etctl.jobs.trainingjob._workers import decorate_worker, worker_service
from etctl.runtime import SECRETS, KubeObject, Manager, Resource

__all__ = ["TrainingJobPlugin", "operator_rules"]

WORKER = TrainingJobReplicaType.WORKER
LAUNCHER = TrainingJobReplicaType.LAUNCHER


def operator_rules() -> tuple[PolicyRule, ...]:
    """What the operator needs for TrainingJobs beyond pods, services and events.

    The launcher/worker layer's rules (ServiceAccounts, Secrets, ConfigMaps, Roles, RoleBindings,
    ``pods/exec``), then TrainingJobs, ScaleIns and ScaleOuts with their status.
    """
    return shared.operator_rules(
        PolicyRule((GROUP,), ("trainingjobs", "scaleins", "scaleouts"), shared.WRITE_VERBS),
        PolicyRule(
            (GROUP,),
            ("trainingjobs/status", "scaleins/status", "scaleouts/status"),
            ("get", "update", "patch"),
        ),
    )


class TrainingJobPlugin:
    """The TrainingJob job kind (see the module docstring).

    Args:
        workers_ready_timeout: seconds the launcher waits for every worker to run.
        kubectl_image: an image whose ``kubectl`` is delivered to launchers in kubexec mode.
        exec_timeout: seconds one exec of the hostfile pusher may take.
        size_limits: the cluster's object size limits (a real cluster's by default).
    """

    owned_resources: Sequence[Resource] = (SECRETS, *LAUNCHER_RESOURCES)
    elastic = ELASTIC

    def __init__(
        self,
        *,
        workers_ready_timeout: float = lifecycle.DEFAULT_WORKERS_READY_TIMEOUT,
        kubectl_image: str | None = None,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
        size_limits: SizeLimits | None = None,
    ) -> None:
        for option, value in (
            ("workers_ready_timeout", workers_ready_timeout),
            ("exec_timeout", exec_timeout),
        ):
            if value <= 0:
                msg = f"{option} must be positive, got {value}"
                raise ValueError(msg)
        self.workers_ready_timeout = workers_ready_timeout
        self.kubectl_image = kubectl_image
        self.exec_timeout = exec_timeout
        self.size_limits = size_limits or SizeLimits()

    # -- the core

    @property
    def resource(self) -> CustomResource:
        """The TrainingJob CRD."""
        return TRAININGJOB

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """TrainingJob, ScaleIn and ScaleOut."""
        return (TRAININGJOB, SCALEIN, SCALEOUT)

    @property
    def model(self) -> type[TrainingJob]:
        """The TrainingJob model."""
        return TrainingJob

    def validate(self, job: TrainingJob) -> list[str]:
        """Problems the CRD schema cannot express, and a first membership too large to hold.

        A job that ran keeps the membership its scale-outs let it have (each is measured before
        it grows the job). Until then the first membership is measured on every reconcile: the
        targets once the scaling controller wrote them (it may do so before this controller's
        first look at the job), else the initial ``replicas``.
        """
        problems = validate_trainingjob(job)
        worker = job.spec.et_replica_specs.worker
        ran = get_condition(job.status.conditions, JobConditionType.RUNNING) is not None
        if problems or worker is None or ran:
            return problems
        targets = job.status.target_workers
        names = (
            Names.of(targets)
            if targets
            else Names.sequential(worker_prefix(job.metadata.name), worker.replicas)
        )
        too_large = membership_problem(
            job,
            names,
            slots=job_slots(job),
            container=_first_container(worker),
            limits=self.size_limits,
        )
        if too_large is not None:
            problems.append(f"spec.etReplicaSpecs.worker.replicas: {too_large}")
        return problems

    # -- plan

    def plan(self, job: TrainingJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """The launcher under et-operator's name, once its workers run; the workers as planned."""
        if planned.replica_type != LAUNCHER:
            return planned
        gate = lifecycle.launcher_gate(job, state, timeout=self.workers_ready_timeout)
        return planned.named(launcher_name(job.metadata.name)).gated(gate)

    # -- build

    def decorate_pod(
        self, job: TrainingJob, pod: KubeObject, ref: ReplicaRef, state: JobState[TrainingJob]
    ) -> None:
        """Make a pod built from a template a worker or the launcher."""
        name = job.metadata.name
        secret = self._ssh_secret(job)
        if ref.replica_type == WORKER:
            decorate_worker(pod, job=name, index=ref.index, ssh_secret=secret)
            return
        decorate_launcher(
            pod,
            job=name,
            service_account=launcher_name(name),
            config_map=config_name(name),
            init_image=state.settings.init_container_image,
            kubexec=job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC,
            kubectl_image=self.kubectl_image,
            ssh_secret=secret,
        )

    def build_service(
        self, job: TrainingJob, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        """A headless service per worker; none for the launcher."""
        return worker_service() if ref.replica_type == WORKER else None

    def extra_objects(self, job: TrainingJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The ssh Secret; the launcher's RBAC and ConfigMap once it may start (or exists)."""
        name = job.metadata.name
        wanted: list[DesiredObject] = []
        if self._generates_key(job):
            comment = f"etctl:{job.metadata.namespace}/{name}"
            wanted.append(
                DesiredObject(
                    SECRETS,
                    name,
                    lambda: ssh_secret(name, comment=comment),
                    policy=SyncPolicy.CREATE,
                )
            )
        started = any(state.children.get(res) for res in LAUNCHER_RESOURCES)
        launcher = state.plans.get(LAUNCHER)
        if not (started or (launcher is not None and launcher.gate.open)):
            return wanted
        wanted += launcher_objects(
            account=launcher_name(name),
            config_map=config_name(name),
            config=lambda: self._config_map(job),
            workers=job.status.target_workers,
            exec_into_workers=job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC,
        )
        return wanted

    # -- judge

    def verdict(self, job: TrainingJob, state: JobState[TrainingJob]) -> Verdict | None:
        """The launcher decides."""
        return lifecycle.verdict(job, state)

    def restarts_on_failure(self, job: TrainingJob) -> bool:
        """``spec.restartPolicy: OnFailure`` restarts the whole job."""
        return job.spec.restart_policy is JobRestartPolicy.ON_FAILURE

    # -- extend status

    def extend_status(self, job: TrainingJob, state: JobState[Any]) -> dict[str, Any]:
        """Phase, replicas and workerSelector."""
        return lifecycle.extra_status(job, state)

    # -- elastic

    def member_policy(self, job: TrainingJob) -> MemberPolicy:
        """The worker's ``minReplicas``, ``maxReplicas`` and restartPolicy."""
        return member_policy(job)

    def consumer(self, job: TrainingJob, state: JobState[Any]) -> Consumer:
        """The launcher consumes the membership."""
        return consumer(job, state)

    def membership_problem(
        self, job: TrainingJob, names: Sequence[str], state: JobState[Any]
    ) -> str | None:
        """Why the ConfigMap or the status could not hold ``names`` (a scale-out's), or None."""
        grow = Names.firsts(names)
        return membership_problem(
            job,
            grow(len(names)),
            slots=job_slots(job),
            container=_first_container(job.spec.et_replica_specs.worker),
            limits=self.size_limits,
            grow=grow,
        )

    # -- kind-level

    def rbac_rules(self) -> Sequence[PolicyRule]:
        """What the operator needs for TrainingJobs."""
        return operator_rules()

    def setup_controllers(self, manager: Manager, context: ControllerContext) -> None:
        """Register the hostfile pusher, ``trainingjob-hostfile``.

        It keeps each running launcher's ``/etc/edl/hostfile`` and ``/job/hostfile`` equal to its
        ConfigMap.
        """
        setup_membership_pusher(
            manager, context, names=NAMES, layout=LAYOUT, exec_timeout=self.exec_timeout
        )

    def published_files(self, job: TrainingJob) -> Sequence[PublishedFile]:
        """The hostfile: ``<job>-config``'s ``hostfile``, where the launcher reads it."""
        name = job.metadata.name
        return (
            PublishedFile(
                config_map=config_name(name),
                key=HOSTFILE_KEY,
                path=LAYOUT.read_path(HOSTFILE_KEY),
                reader=launcher_name(name),
            ),
        )

    # -- helpers

    def _generates_key(self, job: TrainingJob) -> bool:
        ssh = job.spec.launcher_attach_mode is LauncherAttachMode.SSH
        return ssh and not job.metadata.annotations.get(SSH_SECRET_ANNOTATION, "").strip()

    def _ssh_secret(self, job: TrainingJob) -> str | None:
        if job.spec.launcher_attach_mode is not LauncherAttachMode.SSH:
            return None
        return ssh_secret_name(job.metadata.name, job.metadata.annotations)

    def _config_map(self, job: TrainingJob) -> KubeObject:
        worker = job.spec.et_replica_specs.worker
        container = _first_container(worker)
        data = config_data(job.status.current_workers, job_slots(job), container)
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": config_name(job.metadata.name)},
            "data": data,
        }


def _first_container(spec: ReplicaSpec | None) -> str:
    return first_container_name(spec.template) if spec else ""
