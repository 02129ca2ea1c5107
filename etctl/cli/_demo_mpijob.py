"""``etctl sandbox --demo mpijob``: the life of an elastic MPIJob, narrated on the sandbox.

Seven steps, each shown with elapsed times and every change seen on the way, each with its own
timeout:

1. create an MPIJob as mpi-operator's users write one (``kubeflow.org/v2beta1``, a launcher running
   ``horovodrun`` and :data:`WORKERS` workers, ``elasticPolicy`` :data:`MIN_WORKERS` to
   :data:`MAX_WORKERS`) and wait until the workers, the launcher and the job run;
2. run ``sh /etc/mpi/discover_hosts.sh`` in the launcher, as Horovod does every second, and show
   the ``<host>:<slots>`` lines it prints;
3. scale out with ``kubectl scale mpijob`` (the ``/scale`` subresource an HPA uses too),
   following the scaler the operator makes of it, then show the new hosts;
4. scale in with et-operator's ScaleIn naming the MPIJob (``selector.kind: MPIJob``): the operator
   chooses the highest index, which leaves discover_hosts.sh before its pod is deleted;
5. have the simulated kubelet evict a worker and wait until a new worker under a new name replaced
   it and discover_hosts.sh says so;
6. suspend the job as Kueue does (``runPolicy.suspend``), then resume it with the node selector of
   the flavor Kueue admitted it on: the pods come back on that node;
7. summarise (the final workers, the events the operator recorded), then delete the job and wait
   until its pods, scalers, ConfigMap, Secret and Service went with it.

The demo is a user of the API like kubectl: it writes objects and reads state through its own
client, never through the operator. The eviction alone is the node's doing and goes through the
simulated kubelet. A step that does not happen in time fails the demo with a message that says
what was awaited and the state it was stuck in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from etctl.cli._demo_manifests import (
    MAX_WORKERS,
    MIN_WORKERS,
    NAMESPACE,
    WORKERS,
    launcher_template,
    scalein_manifest,
    worker_template,
)
from etctl.cli._demo_steps import PAD, DemoJob, DemoSteps, run_steps
from etctl.cli._embedded import Sandbox
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import Snapshot
from etctl.cli._observer import StepFailed
from etctl.cli._sandbox_options import DemoOptions
from etctl.cli._timeline import Timeline
from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.mpijob import MPIJOBS, MPIJobPlugin
from etctl.runtime import CONFIGMAPS, SECRETS, SERVICES

__all__ = [
    "DEMO_STEPS",
    "JOB",
    "LAUNCHER",
    "MAX_WORKERS",
    "MIN_WORKERS",
    "WORKERS",
    "mpijob_manifest",
    "run_mpijob_demo",
]

DEMO_STEPS = 7
JOB = "elastic-horovod"
LAUNCHER = f"{JOB}-launcher"
SCALED_TO, SCALE_IN_BY = 5, 1
SCALE_IN = f"{JOB}-scale-in"
DISCOVER_HOSTS = "/etc/mpi/discover_hosts.sh"
HOSTS_COMMAND = ("sh", DISCOVER_HOSTS)
_DEMO_JOB = DemoJob(
    kind=JobKind.of(MPIJobPlugin()),
    name=JOB,
    launcher=LAUNCHER,
    operator_objects=frozenset({("MPIJob", JOB), ("ScaleIn", SCALE_IN)}),
    # Events that must have arrived before the summary shows them: (kind, reason).
    expected_events=frozenset(
        {
            ("MPIJob", "MPIJobRunning"),
            ("MPIJob", "ScalerCreated"),
            ("MPIJob", "MPIJobWorkerFailed"),
            ("MPIJob", "MPIJobSuspended"),
            ("MPIJob", "MPIJobResumed"),
            ("ScaleIn", "ScalingInSucceeded"),
        }
    ),
    # The feed follows the job's ConfigMap too: discover_hosts.sh's changes are narrated.
    files=True,
)


def mpijob_manifest() -> dict[str, Any]:
    """The demo's MPIJob, as mpi-operator's users write one, plus etctl's elastic bounds."""
    return {
        "apiVersion": MPIJOBS.api_version,
        "kind": "MPIJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "slotsPerWorker": 1,
            "elasticPolicy": {"minReplicas": MIN_WORKERS, "maxReplicas": MAX_WORKERS},
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": launcher_template(DISCOVER_HOSTS)},
                "Worker": {
                    "replicas": WORKERS,
                    # Evicted or failed workers are replaced under a new name.
                    "restartPolicy": "OnFailure",
                    "template": worker_template(),
                },
            },
        },
    }


async def run_mpijob_demo(
    sandbox: Sandbox, timeline: Timeline, *, options: DemoOptions | None = None
) -> int:
    """Run the demo's steps on a ready sandbox.

    Returns:
        0 when every step happened; 1 when one did not (the timeline says which and why).
    """
    return await run_steps(sandbox, timeline, _Demo, options=options)


class _Demo(DemoSteps):
    job_spec = _DEMO_JOB
    members_file = "discover_hosts.sh"

    def steps(self) -> Sequence[Callable[[], Awaitable[None]]]:
        return (
            self.create_job,
            self.show_hosts,
            self.scale_out,
            self.scale_in,
            self.evict,
            self.suspend_and_resume,
            self.summary,
        )

    @property
    def read_command(self) -> str:
        return f"kubectl exec {LAUNCHER} -- sh {DISCOVER_HOSTS}"

    async def read_members(self, members: Sequence[str]) -> str:
        """Run discover_hosts.sh in the launcher until it lists exactly ``members``."""
        what = f"discover_hosts.sh to list {len(members)} workers"
        return await self.observer.listing(
            what, LAUNCHER, HOSTS_COMMAND, members, timeout=self.timeout
        )

    async def after_delete(self) -> None:
        await self.observer.poll(
            "its ConfigMap, Secret and Service to be deleted",
            self._children_gone,
            timeout=self.timeout,
        )

    # -- steps

    async def create_job(self) -> None:
        self.t.step(
            f"Create an MPIJob (kubeflow.org/v2beta1): a launcher and {WORKERS} workers "
            f"(elasticPolicy {MIN_WORKERS} to {MAX_WORKERS})"
        )
        self.t.hint(f"kubectl apply -f {JOB}.yaml && kubectl get mpijob,pods -w")
        await self.client.create(MPIJOBS, mpijob_manifest(), namespace=NAMESPACE)
        seen = await self.settled(f"the launcher and {WORKERS} workers to run", WORKERS)
        self.pods_table(seen, [LAUNCHER, *self.job(seen).targets])
        self.t.done(f"MPIJob {JOB} is Running: launcher and {WORKERS} workers")

    async def show_hosts(self) -> None:
        await self.show_first(
            "discover_hosts.sh, run in the launcher as Horovod runs it every second",
            "Running and Ready workers, one <host>:<slots> line each",
        )

    async def scale_out(self) -> None:
        self.t.step(f"Scale out to {SCALED_TO} workers through the /scale subresource")
        self.t.hint(f"kubectl scale mpijob {JOB} --replicas={SCALED_TO}")
        before = set(self.job(self.observer.last).targets)
        await self.client.patch(
            MPIJOBS,
            JOB,
            {"spec": {"replicas": SCALED_TO}},
            namespace=NAMESPACE,
            subresource="scale",
        )
        seen = await self.scaled_by(SCALEOUTS, SCALED_TO)
        await self.show_members(self.job(seen).members)
        added = [name for name in self.job(seen).targets if name not in before]
        self.t.done(f"{SCALED_TO} workers: added {', '.join(added)}")

    async def scale_in(self) -> None:
        self.t.step(f"Scale in by {SCALE_IN_BY} with et-operator's ScaleIn, naming the MPIJob")
        self.t.hint(f"kubectl apply -f scale-in.yaml   # selector: {{name: {JOB}, kind: MPIJob}}")
        size = len(self.job(self.observer.last).targets) - SCALE_IN_BY
        manifest = scalein_manifest(SCALE_IN_BY, job=JOB, kind="MPIJob")
        await self.client.create(SCALEINS, manifest, namespace=NAMESPACE)
        seen = await self.scaled_by(SCALEINS, size, name=SCALE_IN)
        await self.show_members(self.job(seen).members)
        removed = seen.scalers[f"scalein/{SCALE_IN}"].chosen
        self.t.done(
            f"{size} workers: the operator chose {', '.join(removed)} (the highest index goes "
            "first, out of discover_hosts.sh before its pod is deleted)"
        )

    async def suspend_and_resume(self) -> None:
        node = self.sandbox.node_names[0]
        self.t.step(f"Suspend the job as Kueue does, then resume it on {node}'s flavor")
        self.t.hint(f"kubectl patch mpijob {JOB} --type=merge -p '{{spec: {{runPolicy: ...}}}}'")
        await self.client.patch(
            MPIJOBS, JOB, {"spec": {"runPolicy": {"suspend": True}}}, namespace=NAMESPACE
        )

        def suspended(now: Snapshot) -> bool:
            return now.job is not None and now.job.phase == "Suspended" and not now.pods

        await self.observer.until(
            "the job to be suspended and its pods deleted", suspended, timeout=self.timeout
        )
        self.t.text(f"{PAD}suspended: no pods; the job, its ConfigMap and Service stay")
        selector = {"kubernetes.io/hostname": node}
        template = {"template": {"spec": {"nodeSelector": selector}}}
        resume = {
            "spec": {
                "runPolicy": {"suspend": False},
                "mpiReplicaSpecs": {"Launcher": template, "Worker": template},
            }
        }
        self.t.hint(f"# Kueue admits it: nodeSelector kubernetes.io/hostname={node}, suspend false")
        await self.client.patch(MPIJOBS, JOB, resume, namespace=NAMESPACE)
        size = len(self.job(self.observer.last).targets)
        seen = await self.settled("the job to run again", size)
        elsewhere = [pod.name for pod in seen.pods.values() if pod.node != node]
        if elsewhere:
            msg = f"pods {', '.join(elsewhere)} are not on {node}, the node Kueue chose"
            raise StepFailed(msg)
        self.pods_table(seen, [LAUNCHER, *self.job(seen).targets])
        self.t.done(f"resumed: the pods were built from the templates Kueue left, all on {node}")

    # -- helpers

    async def _children_gone(self) -> tuple[bool | None, str]:
        left = []
        for res in (CONFIGMAPS, SECRETS, SERVICES):
            listed = await self.client.list(res, namespace=NAMESPACE)
            left += [
                f"{res.kind} {item['metadata']['name']}"
                for item in listed.items
                if str(item["metadata"]["name"]).startswith(JOB)
            ]
        return (True, "") if not left else (None, f"{', '.join(left)} still there")
