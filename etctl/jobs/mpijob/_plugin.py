"""The MPIJob plugin: kubeflow's MPIJob (v2beta1 and v1), elastic, on the generic job controller.

The generic :class:`~etctl.common.JobController` runs the reconcile and the scaling machinery
keeps the elastic workers; this plugin says what is particular to an MPIJob, each hook delegating
to a module of its own:

=====================  ==========================================================================
core                   the CRD (``resource``, with ScaleIn and ScaleOut: ``custom_resources``)
                       and the model
validate               mpi-operator's rules (:mod:`._validation`), and a first membership too
                       large to hold (:mod:`._scaling`'s size check)
plan                   the launcher is ``<job>-launcher`` and may wait for ready workers
                       (:mod:`._lifecycle`); the workers are the framework's elastic plan, from
                       ``status.targetWorkers``
build                  pods (:mod:`._pods`); the headless Service ``<job>`` and ssh Secret
                       ``<job>-ssh`` (ssh mode), the ConfigMap ``<job>-config`` (:mod:`._config`)
                       and, in kubexec mode, the launcher's ServiceAccount, Role and RoleBinding,
                       kept in line with the membership
judge                  the launcher decides (:mod:`._lifecycle`)
extend status          the phase (:func:`._lifecycle.extra_status`)
elastic                the workers are an elastic membership; the launcher consumes it
                       (:mod:`._scaling`)
kind-level             the operator's RBAC (:func:`operator_rules`); the membership pusher (the
                       launcher's ``/etc/mpi`` files follow the ConfigMap); discover_hosts.sh and
                       the hostfile, for ``etctl status``, ``etctl watch`` and the sandbox's demo
=====================  ==========================================================================

What every launcher/worker kind does (rendering hostfiles and scripts, the launcher's files and
their pusher, the ssh key, the launcher's RBAC, the worker plan and replacements, the size checks)
is :mod:`etctl.jobs.launcher`'s; the modules here say what is an MPIJob's: mpi-operator's API,
names, layout, environment and verdict. Every hook is pure.

Options (keyword-only): ``kubectl_image`` (an image with ``sh`` and ``kubectl`` whose kubectl the
launcher gets in kubexec mode; none by default: the launcher image then needs ``kubectl`` on its
PATH), ``exec_timeout`` (seconds one exec of the membership pusher may take; 30) and
``size_limits`` (the cluster's object size limits, a real cluster's by default).
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
    SizeLimits,
    SyncPolicy,
    Verdict,
    get_condition,
    job_selector,
)
from etctl.jobs import launcher as shared
from etctl.jobs.launcher import (
    DEFAULT_EXEC_TIMEOUT,
    DISCOVER_KEY,
    HOSTFILE_KEY,
    LAUNCHER_RESOURCES,
    KeyAlgorithm,
    launcher_objects,
    setup_membership_pusher,
    ssh_secret,
)
from etctl.jobs.mpijob import _lifecycle as lifecycle
from etctl.jobs.mpijob._api import (
    GROUP,
    MPIJOB,
    LauncherAttachMode,
    MPIJob,
    MPIReplicaType,
)
from etctl.jobs.mpijob._config import DISCOVER_HOSTS, HOSTFILE, SSH_LAYOUT, config_map
from etctl.jobs.mpijob._names import (
    NAMES,
    config_name,
    launcher_name,
    service_name,
    ssh_secret_name,
)
from etctl.jobs.mpijob._pods import decorate_launcher, decorate_worker
from etctl.jobs.mpijob._scaling import ELASTIC, consumer, member_policy, size_problem
from etctl.jobs.mpijob._validation import validate_mpijob
from etctl.runtime import SECRETS, SERVICES, KubeObject, Manager, Resource

__all__ = ["MPIJobPlugin", "operator_rules"]

WORKER = MPIReplicaType.WORKER
LAUNCHER = MPIReplicaType.LAUNCHER


def operator_rules() -> tuple[PolicyRule, ...]:
    """What the operator needs for MPIJobs beyond pods, services, events and the CRD's basics.

    The launcher/worker layer's rules (ServiceAccounts, Secrets, ConfigMaps, Roles, RoleBindings,
    ``pods/exec``); ``mpijobs`` patch (the scaling machinery writes ``Worker.replicas``: a clamped
    ``/scale`` value, the size a finished scaler leaves); ScaleIns and ScaleOuts (adopted, created
    for ``/scale``, their progress written).
    """
    scalers = (SCALEIN.group,)
    return shared.operator_rules(
        PolicyRule((GROUP,), ("mpijobs",), ("get", "list", "watch", "patch")),
        PolicyRule(scalers, (SCALEIN.plural, SCALEOUT.plural), shared.WRITE_VERBS),
        PolicyRule(
            scalers,
            (f"{SCALEIN.plural}/status", f"{SCALEOUT.plural}/status"),
            ("get", "update", "patch"),
        ),
    )


class MPIJobPlugin:
    """The MPIJob job kind (see the module docstring).

    Args:
        kubectl_image: an image whose ``kubectl`` is delivered to launchers in kubexec mode.
        exec_timeout: seconds one exec of the membership pusher may take.
        size_limits: the cluster's object size limits (a real cluster's by default).
    """

    owned_resources: Sequence[Resource] = (SERVICES, SECRETS, *LAUNCHER_RESOURCES)
    elastic = ELASTIC

    def __init__(
        self,
        *,
        kubectl_image: str | None = None,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
        size_limits: SizeLimits | None = None,
    ) -> None:
        if exec_timeout <= 0:
            msg = f"exec_timeout must be positive, got {exec_timeout}"
            raise ValueError(msg)
        self.kubectl_image = kubectl_image
        self.exec_timeout = exec_timeout
        self.size_limits = size_limits or SizeLimits()

    # -- the core

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
        """mpi-operator's rules (:mod:`._validation`), and a first membership too large to hold.

        A job that ran keeps the membership its scale-outs let it have (each is measured before
        it grows the job); until then the first one is measured: the targets once the scaling
        controller wrote them, else the initial ``replicas``. The cluster domain is not known
        here: the hosts are measured without it (the CRD's bound on replicas has the margin).
        """
        problems = validate_mpijob(job)
        ran = get_condition(job.status.conditions, JobConditionType.RUNNING) is not None
        if problems or ran:
            return problems
        targets = job.status.target_workers or None
        too_large = size_problem(job, targets, cluster_domain="", limits=self.size_limits)
        if too_large is not None:
            problems.append(f"spec.mpiReplicaSpecs.Worker.replicas: {too_large}")
        return problems

    # -- plan

    def plan(self, job: MPIJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """The launcher under mpi-operator's name, maybe waiting for ready workers."""
        if planned.replica_type != LAUNCHER:
            return planned
        gate = lifecycle.launcher_gate(job, state)
        return planned.named(launcher_name(job.metadata.name)).gated(gate)

    # -- build

    def decorate_pod(
        self, job: MPIJob, pod: KubeObject, ref: ReplicaRef, state: JobState[MPIJob]
    ) -> None:
        """Make a pod built from a template a worker or the launcher."""
        domain = state.settings.cluster_domain
        if ref.replica_type == WORKER:
            decorate_worker(pod, job=job, cluster_domain=domain)
            return
        decorate_launcher(
            pod,
            job=job,
            cluster_domain=domain,
            init_image=state.settings.init_container_image,
            kubectl_image=self.kubectl_image,
        )

    def extra_objects(self, job: MPIJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        """Service and ssh Secret (ssh mode), ConfigMap, launcher RBAC (kubexec mode)."""
        name = job.metadata.name
        kubexec = job.spec.launcher_attach_mode is LauncherAttachMode.KUBEXEC
        wanted: list[DesiredObject] = []
        if not kubexec:
            selector = job_selector(name, state.settings.operator_name)
            headless = _service(selector, publish_not_ready=job.spec.run_launcher_as_worker)
            comment = f"etctl:{job.metadata.namespace}/{name}"
            secret = ssh_secret_name(name)
            wanted += [
                DesiredObject(SERVICES, service_name(name), lambda: headless),
                DesiredObject(
                    SECRETS,
                    secret,
                    lambda: ssh_secret(secret, comment=comment, algorithm=KeyAlgorithm.ECDSA_P521),
                    policy=SyncPolicy.CREATE,
                ),
            ]
        workers = state.pods_of(WORKER)
        domain = state.settings.cluster_domain
        wanted += launcher_objects(
            account=launcher_name(name),
            config_map=config_name(name),
            config=lambda: config_map(job, workers, domain),
            workers=job.status.target_workers,
            exec_into_workers=kubexec,
            rbac=kubexec,
        )
        return wanted

    # -- judge

    def verdict(self, job: MPIJob, state: JobState[MPIJob]) -> Verdict | None:
        """The launcher decides."""
        return lifecycle.verdict(job, state)

    # -- extend status

    def extend_status(self, job: MPIJob, state: JobState[Any]) -> dict[str, Any]:
        """The phase."""
        return lifecycle.extra_status(job, state)

    # -- elastic

    def member_policy(self, job: MPIJob) -> MemberPolicy:
        """``spec.elasticPolicy``'s bounds and the Worker replica's restartPolicy."""
        return member_policy(job)

    def consumer(self, job: MPIJob, state: JobState[Any]) -> Consumer:
        """The launcher consumes the membership."""
        return consumer(job, state)

    def membership_problem(
        self, job: MPIJob, names: Sequence[str], state: JobState[Any]
    ) -> str | None:
        """Why the ConfigMap or the status could not hold ``names`` (a scale-out's), or None."""
        domain = state.settings.cluster_domain
        return size_problem(job, names, cluster_domain=domain, limits=self.size_limits)

    # -- kind-level

    def rbac_rules(self) -> Sequence[PolicyRule]:
        """What the operator needs for MPIJobs."""
        return operator_rules()

    def published_files(self, job: MPIJob) -> Sequence[PublishedFile]:
        """discover_hosts.sh and the hostfile, as the launcher reads them at ``/etc/mpi``."""
        name = job.metadata.name
        config, launcher = config_name(name), launcher_name(name)
        return [
            PublishedFile(
                config_map=config, key=DISCOVER_KEY, path=DISCOVER_HOSTS, reader=launcher
            ),
            PublishedFile(config_map=config, key=HOSTFILE_KEY, path=HOSTFILE, reader=launcher),
        ]

    def setup_controllers(self, manager: Manager, context: ControllerContext) -> None:
        """Register the membership pusher (both attach modes push the same two files)."""
        setup_membership_pusher(
            manager, context, names=NAMES, layout=SSH_LAYOUT, exec_timeout=self.exec_timeout
        )


def _service(selector: dict[str, str], *, publish_not_ready: bool) -> KubeObject:
    """The job's headless Service: every pod of the job gets ``<pod>.<job>`` as its name."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            "publishNotReadyAddresses": publish_not_ready,
        },
    }
