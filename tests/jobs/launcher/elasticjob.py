"""ElasticJob: a second launcher/worker kind built on the shared layer alone, run end to end.

An ElasticJob (``example.etctl.io/v1``) is shaped like mpi-operator v1's elastic MPIJob, with
names of its own where TrainingJob has et-operator's, so the tests show that the layer serves a
kind it was not written for, and that no plugin needs another:

* ``spec.replicaSpecs`` ``Launcher`` (one pod) and ``Worker`` (the elastic members), and
  ``spec.slotsPerWorker``;
* ConfigMap ``<job>-config``: ``hostfile`` (``<pod> slots=<n>``, Open MPI's format), ``kubexec.sh``
  and ``discover_hosts.sh``, which *lists* the members that run and are Ready; the launcher mounts
  it at ``/etc/mpi`` with ``OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh`` and reads the script from
  a live copy at ``/etc/live/discover_hosts.sh``, which the membership pusher keeps current;
* workers mount ``kubexec.sh`` only, so the ConfigMap and the launcher's RBAC come first (as
  mpi-operator v1 orders them); the launcher's Role may exec into the current workers;
* the members are recorded in status fields of its own: ``memberPods``, ``activeMembers``,
  ``lastMemberIndex`` and ``activeScaler`` (no phase);
* ScaleIn and ScaleOut name it with ``spec.selector.kind: ElasticJob``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from etctl.common import (
    SCALEIN,
    SCALEOUT,
    Consumer,
    ControllerContext,
    CRDVersion,
    CustomResource,
    DesiredObject,
    ElasticMembers,
    Int32,
    JobState,
    JobStatus,
    KubeObjectModel,
    MemberFields,
    MemberPolicy,
    PolicyRule,
    ReplicaRef,
    Replicas,
    ReplicaSpec,
    RestartPolicy,
    RunPolicy,
    ScaleSubresource,
    ValueModel,
    Verdict,
    canonical_keys,
    first_container_name,
)
from etctl.jobs.launcher import (
    DISCOVER_KEY,
    HOSTFILE_KEY,
    KUBEXEC_KEY,
    LAUNCHER_RESOURCES,
    ConfigFile,
    LauncherJob,
    LauncherLayout,
    LauncherNames,
    LiveFile,
    decorate_launcher,
    digest,
    discover_hosts_listing,
    kubexec_script,
    launcher_gate,
    launcher_objects,
    launcher_verdict,
    live_hosts,
    mount_config,
    operator_rules,
    read_launcher,
    setup_membership_pusher,
    slots_hostfile,
)
from etctl.runtime import KubeObject, Manager, Resource

LAUNCHER = "Launcher"
WORKER = "Worker"
NAMES = LauncherNames(ssh_secret="{job}-ssh")
LAYOUT = LauncherLayout(
    config_volume="elastic-config",
    files=(
        ConfigFile(HOSTFILE_KEY, 0o444),
        ConfigFile(KUBEXEC_KEY, 0o555),
        ConfigFile(DISCOVER_KEY, 0o555),
    ),
    live=(
        LiveFile(
            key=DISCOVER_KEY,
            volume="elastic-live",
            directory="/etc/live",
            name=DISCOVER_KEY,
            mode=0o755,
        ),
    ),
    kubectl_volume="elastic-kubectl",
    digest_keys=(DISCOVER_KEY,),
)
FIELDS = MemberFields(
    targets="memberPods",
    current="activeMembers",
    last_index="lastMemberIndex",
    scaler="activeScaler",
)


class ElasticJobSpec(ValueModel):
    """Desired state of an ElasticJob."""

    replica_specs: Annotated[dict[str, ReplicaSpec], canonical_keys([LAUNCHER, WORKER])] = Field(
        default_factory=dict
    )
    """Launcher (one pod) and Worker (the elastic members)."""
    slots_per_worker: Int32 = Field(default=1, json_schema_extra={"minimum": 1})
    """Slots of each worker in the hostfile and in discover_hosts.sh."""


class ElasticJobStatus(JobStatus):
    """Kubeflow's job status plus the members, in fields of this kind's own."""

    member_pods: list[str] = Field(default_factory=list)
    """The workers the job should have."""
    active_members: list[str] = Field(default_factory=list)
    """The workers in use."""
    last_member_index: Int32 | None = None
    """The highest worker index ever used."""
    active_scaler: str | None = None
    """The scaler being executed."""


class ElasticJob(KubeObjectModel):
    """A launcher and elastic workers."""

    api_version: Literal["example.etctl.io/v1"] = "example.etctl.io/v1"
    kind: Literal["ElasticJob"] = "ElasticJob"
    spec: ElasticJobSpec = Field(default_factory=ElasticJobSpec)
    status: ElasticJobStatus = Field(default_factory=ElasticJobStatus)

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """Workers first, then the launcher; both handed over as Never (replacements are ours)."""
        specs = self.spec.replica_specs
        never = {"restart_policy": RestartPolicy.NEVER}
        return {
            rtype: specs[rtype].model_copy(update=never)
            for rtype in (WORKER, LAUNCHER)
            if rtype in specs
        }

    def run_policy(self) -> RunPolicy:
        """Kubeflow's defaults."""
        return RunPolicy()


ELASTICJOB = CustomResource(
    group="example.etctl.io",
    kind="ElasticJob",
    plural="elasticjobs",
    versions=(
        CRDVersion(
            name="v1",
            model=ElasticJob,
            scale=ScaleSubresource(
                spec_replicas_path=".spec.replicaSpecs.Worker.replicas",
                status_replicas_path=".status.replicaStatuses.Worker.active",
            ),
        ),
    ),
)
ELASTICJOBS = ELASTICJOB.resource()


def _worker(job: ElasticJob) -> ReplicaSpec | None:
    return job.spec.replica_specs.get(WORKER)


def _hosts(job: ElasticJob, state: JobState[Any]) -> list[str]:
    return live_hosts(job.status.active_members, state.pods_of(WORKER))


class ElasticJobPlugin:
    """The ElasticJob kind (see the module docstring)."""

    owned_resources: Sequence[Resource] = LAUNCHER_RESOURCES
    elastic = ElasticMembers(replica_type=WORKER, fields=FIELDS)

    @property
    def resource(self) -> CustomResource:
        """The ElasticJob CRD."""
        return ELASTICJOB

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """ElasticJob, and the scalers it shares."""
        return (ELASTICJOB, SCALEIN, SCALEOUT)

    @property
    def model(self) -> type[ElasticJob]:
        """The ElasticJob model."""
        return ElasticJob

    def validate(self, job: ElasticJob) -> list[str]:
        """A launcher and workers."""
        specs = job.spec.replica_specs
        return [f"spec.replicaSpecs.{t}: missing" for t in (LAUNCHER, WORKER) if t not in specs]

    def decorate_pod(
        self, job: ElasticJob, pod: KubeObject, ref: ReplicaRef, state: JobState[ElasticJob]
    ) -> None:
        """Workers get kubexec.sh; the launcher its files, its rsh agent and its account."""
        name = job.metadata.name
        if ref.replica_type == WORKER:
            main = pod["spec"]["containers"][0]
            main.setdefault("command", ["sh", "-c", "sleep 365d"])
            mount_config(
                pod,
                volume="elastic-config",
                config_map=NAMES.config_of(name),
                files=LAYOUT.files[1:2],
            )
            return
        decorate_launcher(
            pod,
            LAYOUT,
            config_map=NAMES.config_of(name),
            init_image=state.settings.init_container_image,
            service_account=NAMES.launcher_of(name),
            env={
                "OMPI_MCA_plm_rsh_agent": LAYOUT.path(KUBEXEC_KEY),
                "OMPI_MCA_orte_default_hostfile": LAYOUT.path(HOSTFILE_KEY),
            },
        )

    def verdict(self, job: ElasticJob, state: JobState[ElasticJob]) -> Verdict | None:
        """The launcher decides."""
        return launcher_verdict(self._launcher_job(job), state)

    def extra_objects(self, job: ElasticJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The launcher's RBAC and the ConfigMap, from the start (workers mount kubexec.sh)."""
        name = job.metadata.name
        return launcher_objects(
            account=NAMES.launcher_of(name),
            config_map=NAMES.config_of(name),
            config=lambda: {"data": self._config_data(job, state)},
            workers=job.status.member_pods,
            exec_into_workers=True,
        )

    def plan(self, job: ElasticJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """The launcher under its name, once its workers are Ready; the workers as planned."""
        if planned.replica_type != LAUNCHER:
            return planned
        gate = launcher_gate(self._launcher_job(job), state, timeout=600)
        return planned.named(NAMES.launcher_of(job.metadata.name)).gated(gate)

    def rbac_rules(self) -> Sequence[PolicyRule]:
        """The layer's rules and the kind's."""
        return operator_rules(PolicyRule(("example.etctl.io",), ("elasticjobs",), ("get",)))

    def member_policy(self, job: ElasticJob) -> MemberPolicy:
        """One to eight workers, replaced following the worker's restartPolicy."""
        worker = _worker(job)
        restart = worker.restart_policy if worker is not None else RestartPolicy.NEVER
        return MemberPolicy(max_replicas=8, restart_policy=restart)

    def consumer(self, job: ElasticJob, state: JobState[Any]) -> Consumer:
        """The launcher, delivered to when it holds the script."""
        wanted = digest(self._config_data(job, state)[DISCOVER_KEY])
        launcher = read_launcher(state.pods_of(LAUNCHER), wanted)
        return launcher.consumer(job.spec.slots_per_worker)

    def setup_controllers(self, manager: Manager, context: ControllerContext) -> None:
        """The membership pusher."""
        setup_membership_pusher(manager, context, names=NAMES, layout=LAYOUT)

    def _launcher_job(self, job: ElasticJob) -> LauncherJob:
        return LauncherJob(
            kind="ElasticJob",
            name=job.metadata.name,
            status=job.status,
            targets=tuple(job.status.member_pods),
            current=tuple(job.status.active_members),
            launcher=NAMES.launcher_of(job.metadata.name),
            wait_for_ready=True,
        )

    def _config_data(self, job: ElasticJob, state: JobState[Any]) -> dict[str, str]:
        worker = _worker(job)
        slots = job.spec.slots_per_worker
        return {
            HOSTFILE_KEY: slots_hostfile(job.status.active_members, slots),
            KUBEXEC_KEY: kubexec_script(first_container_name(worker.template) if worker else ""),
            DISCOVER_KEY: discover_hosts_listing(_hosts(job, state), slots),
        }
