"""``etctl sandbox --demo``: the life of an elastic TrainingJob, narrated on the sandbox.

Six steps, each shown with elapsed times and every change seen on the way, each with its own
timeout:

1. create a TrainingJob in et-operator's shape (a launcher, 3 workers, ``minReplicas`` 2,
   ``maxReplicas`` 6) and wait until the workers, the launcher and the job run;
2. read the hostfile as the launcher sees it (``cat /etc/edl/hostfile`` through ``pods/exec``);
3. scale out by 2 with a ScaleOut, following the scaler's steps, then read the new hostfile;
4. scale in by 1 with a ScaleIn: the operator chooses the worker (the highest index goes);
5. have the simulated kubelet evict a worker, as node-pressure eviction does, and wait until a
   new worker under a new name replaced it and the hostfile says so;
6. summarise (the final workers, the events the operator recorded), then delete the job and wait
   until its pods and scalers went with it.

The demo is a user of the API like kubectl: it writes objects and reads state through its own
:class:`~etctl.runtime.Client` from the sandbox's kubeconfig, never through the operator.
The one exception is the eviction, which is the node's doing and so goes through the simulated
kubelet. A step that does not happen in time fails the demo with a message that says what was
awaited and the state it was stuck in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from etctl.cli._demo_manifests import (
    JOB,
    LAUNCHER,
    MAX_WORKERS,
    MIN_WORKERS,
    NAMESPACE,
    SCALE_IN,
    SCALE_IN_BY,
    SCALE_OUT,
    SCALE_OUT_BY,
    WORKERS,
    scalein_manifest,
    scaleout_manifest,
    trainingjob_manifest,
)
from etctl.cli._demo_steps import DemoJob, DemoSteps, run_steps
from etctl.cli._embedded import Sandbox
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import Snapshot
from etctl.cli._observer import Observer
from etctl.cli._sandbox_options import DemoOptions
from etctl.cli._timeline import Timeline
from etctl.common import SCALEINS, SCALEOUTS, PublishedFile
from etctl.jobs.trainingjob import TRAININGJOBS, TrainingJobPlugin
from etctl.runtime import Client, KubeObject, Resource

__all__ = ["DEMO_STEPS", "run_demo"]

DEMO_STEPS = 6
_DEMO_JOB = DemoJob(
    kind=JobKind.of(TrainingJobPlugin()),
    name=JOB,
    launcher=LAUNCHER,
    operator_objects=frozenset(
        {("TrainingJob", JOB), ("ScaleOut", SCALE_OUT), ("ScaleIn", SCALE_IN)}
    ),
    # Events that must have arrived before the summary shows them: (kind, reason).
    expected_events=frozenset(
        {
            ("TrainingJob", "TrainingJobRunning"),
            ("TrainingJob", "TrainingJobWorkerFailed"),
            ("ScaleOut", "ScalingOutSucceeded"),
            ("ScaleIn", "ScalingInSucceeded"),
        }
    ),
)


async def run_demo(
    sandbox: Sandbox, timeline: Timeline, *, options: DemoOptions | None = None
) -> int:
    """Run the demo's steps on a ready sandbox.

    Returns:
        0 when every step happened; 1 when one did not (the timeline says which and why).
    """
    return await run_steps(sandbox, timeline, _Demo, options=options)


class _Demo(DemoSteps):
    job_spec = _DEMO_JOB

    def __init__(
        self, sandbox: Sandbox, client: Client, observer: Observer, options: DemoOptions
    ) -> None:
        super().__init__(sandbox, client, observer, options)
        (self.published,) = _hostfiles(observer.feed.kind)

    def steps(self) -> Sequence[Callable[[], Awaitable[None]]]:
        return (
            self.create_job,
            self.show_hostfile,
            self.scale_out,
            self.scale_in,
            self.evict,
            self.summary,
        )

    @property
    def read_command(self) -> str:
        return f"kubectl exec {self.published.reader} -- cat {self.published.path}"

    async def read_members(self, members: Sequence[str]) -> str:
        where = self.published
        return await self.observer.hostfile(where.reader, where.path, members, timeout=self.timeout)

    # -- steps

    async def create_job(self) -> None:
        self.t.step(
            f"Create a TrainingJob: a launcher and {WORKERS} workers "
            f"(minReplicas {MIN_WORKERS}, maxReplicas {MAX_WORKERS})"
        )
        self.t.hint(f"kubectl apply -f {JOB}.yaml && kubectl get trainingjob,pods -w")
        await self.client.create(TRAININGJOBS, trainingjob_manifest(), namespace=NAMESPACE)

        def running(seen: Snapshot) -> bool:
            job = seen.job
            return (
                job is not None
                and job.phase == "Running"
                and len(job.targets) == WORKERS
                and seen.running(LAUNCHER, *job.targets)
            )

        seen = await self.observer.until(
            f"the launcher and {WORKERS} workers to run", running, timeout=self.timeout
        )
        self.pods_table(seen, [LAUNCHER, *self.job(seen).targets])
        self.t.done(f"TrainingJob {JOB} is Running: launcher and {WORKERS} workers")

    async def show_hostfile(self) -> None:
        await self.show_first(
            "The hostfile, as the launcher sees it", "workers, one <pod>:<slots> line each"
        )

    async def scale_out(self) -> None:
        self.t.step(f"Scale out by {SCALE_OUT_BY} with a ScaleOut")
        self.t.hint(f"kubectl apply -f scale-out.yaml   # spec.toAdd.count: {SCALE_OUT_BY}")
        before = len(self.job(self.observer.last).members)
        manifest = scaleout_manifest(SCALE_OUT_BY)
        added = await self._apply_scaler(SCALEOUTS, manifest, before + SCALE_OUT_BY)
        self.t.done(f"{before + SCALE_OUT_BY} workers: added {', '.join(added)}")

    async def scale_in(self) -> None:
        self.t.step(f"Scale in by {SCALE_IN_BY} with a ScaleIn")
        self.t.hint(f"kubectl apply -f scale-in.yaml   # spec.toDelete.count: {SCALE_IN_BY}")
        before = len(self.job(self.observer.last).members)
        manifest = scalein_manifest(SCALE_IN_BY)
        removed = await self._apply_scaler(SCALEINS, manifest, before - SCALE_IN_BY)
        self.t.done(
            f"{before - SCALE_IN_BY} workers: the operator chose {', '.join(removed)} "
            "(the highest index goes first)"
        )

    # -- helpers

    async def _apply_scaler(
        self, res: Resource, manifest: KubeObject, size: int
    ) -> tuple[str, ...]:
        """Create a scaler, wait until the job has ``size`` workers and show the new hostfile.

        Returns:
            The workers the scaler added or removed.
        """
        await self.client.create(res, manifest, namespace=NAMESPACE)
        key = f"{res.kind.lower()}/{manifest['metadata']['name']}"
        seen = await self.scaled(f"{key} to finish", size, key.__eq__)
        await self.show_members(self.job(seen).members)
        return seen.scalers[key].chosen


def _hostfiles(kind: JobKind) -> list[PublishedFile]:
    """Where the demo job's plugin publishes its hostfile (a pod reads it at a path)."""
    return [
        published
        for published in kind.files(kind.parse(trainingjob_manifest()))
        if published.key == "hostfile" and published.reader
    ]
