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

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from etctl._version import __version__
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
from etctl.cli._embedded import Sandbox
from etctl.cli._feed import Feed
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import JobView, Snapshot
from etctl.cli._observer import Observer, StepFailed
from etctl.cli._sandbox_options import DemoOptions
from etctl.cli._timeline import Mark, Timeline, Tone
from etctl.common import SCALEINS, SCALEOUTS, PublishedFile
from etctl.errors import EtctlError
from etctl.jobs.trainingjob import TRAININGJOBS, TrainingJobPlugin
from etctl.runtime import EVENTS, Client, ClientOptions, KubeObject, Resource

__all__ = ["DEMO_STEPS", "event_groups", "run_demo"]

DEMO_STEPS = 6
_PAD = " " * 8
_OPERATOR_OBJECTS = frozenset(
    {("TrainingJob", JOB), ("ScaleOut", SCALE_OUT), ("ScaleIn", SCALE_IN)}
)
# Events that must have arrived before the summary shows them: (kind, reason).
_EXPECTED_EVENTS = frozenset(
    {
        ("TrainingJob", "TrainingJobRunning"),
        ("TrainingJob", "TrainingJobWorkerFailed"),
        ("ScaleOut", "ScalingOutSucceeded"),
        ("ScaleIn", "ScalingInSucceeded"),
    }
)


async def run_demo(
    sandbox: Sandbox, timeline: Timeline, *, options: DemoOptions | None = None
) -> int:
    """Run the demo's steps on a ready sandbox.

    Returns:
        0 when every step happened; 1 when one did not (the timeline says which and why).
    """
    options = options or DemoOptions()
    client_options = ClientOptions(request_timeout=10.0, user_agent=f"etctl-demo/{__version__}")
    async with await Client.from_kubeconfig(sandbox.kubeconfig, options=client_options) as client:
        feed = Feed(client, JobKind.of(TrainingJobPlugin()), namespace=NAMESPACE, job=JOB)
        observer = Observer(feed, timeline, poll_interval=options.poll_interval)
        demo = _Demo(sandbox, client, observer, options)
        status, error = 0, None
        async with asyncio.TaskGroup() as group:
            following = group.create_task(feed.run(), name="demo:feed")
            try:
                await demo.run()
            except StepFailed as exc:
                timeline.failed(str(exc))
                status = 1
            except Exception as exc:  # noqa: BLE001 - raised again below, outside the group
                error = exc
            finally:
                following.cancel()
        if error is not None:
            raise error
    return status


class _Demo:
    def __init__(
        self, sandbox: Sandbox, client: Client, observer: Observer, options: DemoOptions
    ) -> None:
        self.sandbox = sandbox
        self.client = client
        self.observer = observer
        self.t = observer.timeline
        self.timeout = options.step_timeout
        self.hostfile = ""
        (self.published,) = _hostfiles(observer.feed.kind)

    async def run(self) -> None:
        try:
            await self._synced()
            await self.create_job()
            await self.show_hostfile()
            await self.scale_out()
            await self.scale_in()
            await self.evict()
            await self.summary()
        except EtctlError as exc:  # a write was refused: the step cannot go on
            raise StepFailed(str(exc)) from exc

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
        self._pods_table(seen, [LAUNCHER, *_job(seen).targets])
        self.t.done(f"TrainingJob {JOB} is Running: launcher and {WORKERS} workers")

    async def show_hostfile(self) -> None:
        self.t.step("The hostfile, as the launcher sees it")
        self.t.hint(f"kubectl exec {self.published.reader} -- cat {self.published.path}")
        members = _job(self.observer.last).members
        self.hostfile = await self._read_hostfile(members)
        self.t.block([(Mark.SAME, line) for line in self.hostfile.splitlines()])
        self.t.done(f"{len(members)} workers, one <pod>:<slots> line each")

    async def scale_out(self) -> None:
        self.t.step(f"Scale out by {SCALE_OUT_BY} with a ScaleOut")
        self.t.hint(f"kubectl apply -f scale-out.yaml   # spec.toAdd.count: {SCALE_OUT_BY}")
        before = len(_job(self.observer.last).members)
        manifest = scaleout_manifest(SCALE_OUT_BY)
        added = await self._apply_scaler(SCALEOUTS, manifest, before + SCALE_OUT_BY)
        self.t.done(f"{before + SCALE_OUT_BY} workers: added {', '.join(added)}")

    async def scale_in(self) -> None:
        self.t.step(f"Scale in by {SCALE_IN_BY} with a ScaleIn")
        self.t.hint(f"kubectl apply -f scale-in.yaml   # spec.toDelete.count: {SCALE_IN_BY}")
        before = len(_job(self.observer.last).members)
        manifest = scalein_manifest(SCALE_IN_BY)
        removed = await self._apply_scaler(SCALEINS, manifest, before - SCALE_IN_BY)
        self.t.done(
            f"{before - SCALE_IN_BY} workers: the operator chose {', '.join(removed)} "
            "(the highest index goes first)"
        )

    async def evict(self) -> None:
        self.t.step("Evict a worker: its node runs low on memory")
        seen = self.observer.catch_up()
        members = _job(seen).members
        victim = members[1] if len(members) > 1 else members[0]
        node = seen.pods[victim].node if victim in seen.pods else "its node"
        self.t.hint(f"# the kubelet on {node} evicts {victim}")
        try:
            self.sandbox.kubelet.evict(NAMESPACE, victim)
        except LookupError as exc:
            msg = f"the kubelet cannot evict {victim}: {exc}"
            raise StepFailed(msg) from exc
        self.t.change(f"pod/{victim}", f"evicted by the kubelet on {node}", tone=Tone.WARN)
        targets = set(_job(seen).targets)

        def replaced(now: Snapshot) -> bool:
            job = now.job
            return (
                job is not None
                and job.phase == "Running"
                and victim not in now.pods
                and victim not in job.targets
                and len(job.targets) == len(targets)
                and set(job.members) == set(job.targets)
                and now.running(*job.targets)
            )

        now = await self.observer.until(
            f"a new worker to replace {victim}", replaced, timeout=self.timeout
        )
        newcomers = [name for name in _job(now).targets if name not in targets]
        await self._new_hostfile(_job(now).members)
        self.t.done(f"{victim} was replaced by {', '.join(newcomers)}, a new name")

    async def summary(self) -> None:
        self.t.step("Summary, then tear down")
        seen = self.observer.catch_up()
        workers = _job(seen).members
        self.t.text(f"{_PAD}{len(workers)} workers in the hostfile:")
        self._pods_table(seen, list(workers))
        events = await self.observer.poll(
            "the operator's events to arrive", self._operator_events, timeout=self.timeout
        )
        self.t.text("")
        self.t.text(f"{_PAD}Events the operator recorded (kubectl get events):")
        self.t.grouped_table(["COUNT", "REASON", "LAST MESSAGE"], event_groups(events))
        self.t.text("")
        self.t.hint(f"kubectl delete trainingjob {JOB}")
        await self.client.delete(TRAININGJOBS, JOB, namespace=NAMESPACE)

        def gone(now: Snapshot) -> bool:
            return now.job is None and not now.pods and not now.scalers

        await self.observer.until(
            "the job, its pods and its scalers to be deleted", gone, timeout=self.timeout
        )
        self.t.done("the job and everything it owned are gone")

    # -- helpers

    async def _synced(self) -> None:
        async def listed() -> tuple[bool | None, str]:
            return (True if self.observer.feed.synced else None), "the first lists are not done"

        await self.observer.poll("the watches to start", listed, timeout=self.timeout)

    async def _apply_scaler(
        self, res: Resource, manifest: KubeObject, size: int
    ) -> tuple[str, ...]:
        """Create a scaler, wait until the job has ``size`` workers and show the new hostfile.

        Returns:
            The workers the scaler added or removed.
        """
        await self.client.create(res, manifest, namespace=NAMESPACE)
        key = f"{res.kind.lower()}/{manifest['metadata']['name']}"
        seen = await self._scaled(key, size)
        await self._new_hostfile(_job(seen).members)
        return seen.scalers[key].chosen

    async def _scaled(self, key: str, size: int) -> Snapshot:
        def finished(seen: Snapshot) -> bool:
            scaler = seen.scalers.get(key)
            if scaler is None or scaler.outcome is None:
                return False
            if not scaler.succeeded:
                _, reason, message = scaler.outcome
                msg = f"{key} failed ({reason}): {message}"
                raise StepFailed(msg)
            job = seen.job
            return (
                job is not None
                and job.phase == "Running"
                and len(job.members) == size
                and set(job.members) == set(job.targets)
                and seen.running(*job.targets)
                and all(name in job.targets or name == LAUNCHER for name in seen.pods)
            )

        return await self.observer.until(f"{key} to finish", finished, timeout=self.timeout)

    async def _new_hostfile(self, members: Sequence[str]) -> None:
        self.t.hint(f"kubectl exec {self.published.reader} -- cat {self.published.path}")
        content = await self._read_hostfile(members)
        before = self.hostfile.splitlines()
        after = content.splitlines()
        lines = [(Mark.SAME if line in before else Mark.ADDED, line) for line in after]
        lines += [(Mark.REMOVED, line) for line in before if line not in after]
        self.t.block(lines)
        self.hostfile = content

    async def _read_hostfile(self, members: Sequence[str]) -> str:
        where = self.published
        return await self.observer.hostfile(where.reader, where.path, members, timeout=self.timeout)

    def _pods_table(self, seen: Snapshot, names: Sequence[str]) -> None:
        rows = []
        for name in names:
            pod = seen.pods.get(name)
            if pod is not None:
                rows.append([pod.name, pod.status, pod.node, pod.ip])
        self.t.table(["NAME", "STATUS", "NODE", "IP"], rows)

    async def _operator_events(self) -> tuple[list[KubeObject] | None, str]:
        listed = await self.client.list(EVENTS, namespace=NAMESPACE)
        events = [event for event in listed.items if _about_the_demo(event)]
        seen = {
            (str((event.get("involvedObject") or {}).get("kind")), str(event.get("reason")))
            for event in events
        }
        missing = sorted(f"{kind} {reason}" for kind, reason in _EXPECTED_EVENTS - seen)
        if missing:
            return None, f"no {', '.join(missing)} event yet"
        return events, ""


def _hostfiles(kind: JobKind) -> list[PublishedFile]:
    """Where the demo job's plugin publishes its hostfile (a pod reads it at a path)."""
    return [
        published
        for published in kind.files(kind.parse(trainingjob_manifest()))
        if published.key == "hostfile" and published.reader
    ]


def _job(seen: Snapshot) -> JobView:
    # Every step after the first starts from a look that saw the job.
    if seen.job is None:
        msg = f"TrainingJob {JOB} is gone"
        raise StepFailed(msg)
    return seen.job


def _about_the_demo(event: Mapping[str, Any]) -> bool:
    """True for an event about the demo's job or one of its scalers."""
    involved = event.get("involvedObject") or {}
    return (involved.get("kind"), involved.get("name")) in _OPERATOR_OBJECTS


def event_groups(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[list[str]]]]:
    """Events by involved object, then by reason, in order of first occurrence, with counts.

    Each row is ``[count, reason, last message]``: the events of one reason are added up, and the
    latest message stands for them.
    """
    ordered = sorted(events, key=lambda e: (str(e.get("firstTimestamp") or ""), _rv(e)))
    groups: dict[str, dict[str, list[str]]] = {}
    for event in ordered:
        involved = event.get("involvedObject") or {}
        subject = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
        reason = str(event.get("reason") or "")
        count = int(event.get("count") or 1)
        message = str(event.get("message") or "")
        rows = groups.setdefault(subject, {})
        row = rows.get(reason)
        if row is None:
            rows[reason] = [str(count), reason, message]
        else:
            row[0] = str(int(row[0]) + count)
            row[2] = message
    return [(subject, list(rows.values())) for subject, rows in groups.items()]


def _rv(event: Mapping[str, Any]) -> int:
    version = str((event.get("metadata") or {}).get("resourceVersion") or "0")
    return int(version) if version.isdigit() else 0
