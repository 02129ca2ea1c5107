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

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from etctl._version import __version__
from etctl.cli._demo import event_groups
from etctl.cli._embedded import Sandbox
from etctl.cli._feed import Feed
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import JobView, Snapshot
from etctl.cli._observer import Observer, StepFailed, hosts_of
from etctl.cli._sandbox_options import DemoOptions
from etctl.cli._timeline import Mark, Timeline, Tone
from etctl.common import SCALEINS, SCALEOUTS
from etctl.errors import EtctlError
from etctl.jobs.mpijob import API_VERSION, MPIJOBS, MPIJobPlugin
from etctl.runtime import (
    CONFIGMAPS,
    EVENTS,
    SECRETS,
    SERVICES,
    Client,
    ClientOptions,
    KubeObject,
    Resource,
)

__all__ = [
    "DEMO_STEPS",
    "JOB",
    "LAUNCHER",
    "MAX_WORKERS",
    "MIN_WORKERS",
    "WORKERS",
    "mpijob_manifest",
    "run_mpijob_demo",
    "scalein_manifest",
]

DEMO_STEPS = 7
NAMESPACE = "default"
JOB = "elastic-horovod"
LAUNCHER = f"{JOB}-launcher"
WORKERS, MIN_WORKERS, MAX_WORKERS = 3, 2, 6
SCALED_TO, SCALE_IN_BY = 5, 1
SCALE_IN = f"{JOB}-scale-in"
DISCOVER_HOSTS = "/etc/mpi/discover_hosts.sh"
HOSTS_COMMAND = ("sh", DISCOVER_HOSTS)
_IMAGE = "horovod/horovod:0.28.1"
_PAD = " " * 8
_EXEC_TIMEOUT = 10.0
_OPERATOR_OBJECTS = frozenset({("MPIJob", JOB), ("ScaleIn", SCALE_IN)})
# Events that must have arrived before the summary shows them: (kind, reason).
_EXPECTED_EVENTS = frozenset(
    {
        ("MPIJob", "MPIJobRunning"),
        ("MPIJob", "ScalerCreated"),
        ("MPIJob", "MPIJobWorkerFailed"),
        ("MPIJob", "MPIJobSuspended"),
        ("MPIJob", "MPIJobResumed"),
        ("ScaleIn", "ScalingInSucceeded"),
    }
)


def mpijob_manifest() -> dict[str, Any]:
    """The demo's MPIJob, as mpi-operator's users write one, plus etctl's elastic bounds."""
    command = (
        f"horovodrun -np {WORKERS} --min-np {MIN_WORKERS} --max-np {MAX_WORKERS} "
        f"--host-discovery-script {DISCOVER_HOSTS} "
        "python /horovod/examples/elastic/pytorch/pytorch_mnist_elastic.py"
    )
    return {
        "apiVersion": API_VERSION,
        "kind": "MPIJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "slotsPerWorker": 1,
            "elasticPolicy": {"minReplicas": MIN_WORKERS, "maxReplicas": MAX_WORKERS},
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "launcher",
                                    "image": _IMAGE,
                                    "command": ["sh", "-c", command],
                                }
                            ]
                        }
                    },
                },
                "Worker": {
                    "replicas": WORKERS,
                    # Evicted or failed workers are replaced under a new name.
                    "restartPolicy": "OnFailure",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "worker",
                                    "image": _IMAGE,
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                                }
                            ]
                        }
                    },
                },
            },
        },
    }


def scalein_manifest(count: int) -> dict[str, Any]:
    """et-operator's ScaleIn, naming the demo's MPIJob (``selector.kind``)."""
    return {
        "apiVersion": SCALEINS.api_version,
        "kind": "ScaleIn",
        "metadata": {"name": SCALE_IN, "namespace": NAMESPACE},
        "spec": {"selector": {"name": JOB, "kind": "MPIJob"}, "toDelete": {"count": count}},
    }


async def run_mpijob_demo(
    sandbox: Sandbox, timeline: Timeline, *, options: DemoOptions | None = None
) -> int:
    """Run the demo's steps on a ready sandbox.

    Returns:
        0 when every step happened; 1 when one did not (the timeline says which and why).
    """
    options = options or DemoOptions()
    client_options = ClientOptions(request_timeout=10.0, user_agent=f"etctl-demo/{__version__}")
    async with await Client.from_kubeconfig(sandbox.kubeconfig, options=client_options) as client:
        # The feed follows the job's ConfigMap too: discover_hosts.sh's changes are narrated.
        kind = JobKind.of(MPIJobPlugin())
        feed = Feed(client, kind, namespace=NAMESPACE, job=JOB, files=True)
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
        self.hosts = ""

    async def run(self) -> None:
        try:
            await self._synced()
            await self.create_job()
            await self.show_hosts()
            await self.scale_out()
            await self.scale_in()
            await self.evict()
            await self.suspend_and_resume()
            await self.summary()
        except EtctlError as exc:  # a write was refused: the step cannot go on
            raise StepFailed(str(exc)) from exc

    # -- steps

    async def create_job(self) -> None:
        self.t.step(
            f"Create an MPIJob (kubeflow.org/v2beta1): a launcher and {WORKERS} workers "
            f"(elasticPolicy {MIN_WORKERS} to {MAX_WORKERS})"
        )
        self.t.hint(f"kubectl apply -f {JOB}.yaml && kubectl get mpijob,pods -w")
        await self.client.create(MPIJOBS, mpijob_manifest(), namespace=NAMESPACE)
        seen = await self._settled(f"the launcher and {WORKERS} workers to run", WORKERS)
        self._pods_table(seen, [LAUNCHER, *_job(seen).targets])
        self.t.done(f"MPIJob {JOB} is Running: launcher and {WORKERS} workers")

    async def show_hosts(self) -> None:
        self.t.step("discover_hosts.sh, run in the launcher as Horovod runs it every second")
        self.t.hint(f"kubectl exec {LAUNCHER} -- sh {DISCOVER_HOSTS}")
        members = _job(self.observer.last).members
        self.hosts = await self._discover(members)
        self.t.block([(Mark.SAME, line) for line in self.hosts.splitlines()])
        self.t.done(f"{len(members)} Running and Ready workers, one <host>:<slots> line each")

    async def scale_out(self) -> None:
        self.t.step(f"Scale out to {SCALED_TO} workers through the /scale subresource")
        self.t.hint(f"kubectl scale mpijob {JOB} --replicas={SCALED_TO}")
        before = set(_job(self.observer.last).targets)
        await self.client.patch(
            MPIJOBS,
            JOB,
            {"spec": {"replicas": SCALED_TO}},
            namespace=NAMESPACE,
            subresource="scale",
        )
        seen = await self._scaled(SCALEOUTS, SCALED_TO)
        await self._new_hosts(_job(seen).members)
        added = [name for name in _job(seen).targets if name not in before]
        self.t.done(f"{SCALED_TO} workers: added {', '.join(added)}")

    async def scale_in(self) -> None:
        self.t.step(f"Scale in by {SCALE_IN_BY} with et-operator's ScaleIn, naming the MPIJob")
        self.t.hint(f"kubectl apply -f scale-in.yaml   # selector: {{name: {JOB}, kind: MPIJob}}")
        size = len(_job(self.observer.last).targets) - SCALE_IN_BY
        await self.client.create(SCALEINS, scalein_manifest(SCALE_IN_BY), namespace=NAMESPACE)
        seen = await self._scaled(SCALEINS, size, name=SCALE_IN)
        await self._new_hosts(_job(seen).members)
        removed = seen.scalers[f"scalein/{SCALE_IN}"].chosen
        self.t.done(
            f"{size} workers: the operator chose {', '.join(removed)} (the highest index goes "
            "first, out of discover_hosts.sh before its pod is deleted)"
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
        await self._new_hosts(_job(now).members)
        self.t.done(f"{victim} was replaced by {', '.join(newcomers)}, a new name")

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
        self.t.text(f"{_PAD}suspended: no pods; the job, its ConfigMap and Service stay")
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
        size = len(_job(self.observer.last).targets)
        seen = await self._settled("the job to run again", size)
        elsewhere = [pod.name for pod in seen.pods.values() if pod.node != node]
        if elsewhere:
            msg = f"pods {', '.join(elsewhere)} are not on {node}, the node Kueue chose"
            raise StepFailed(msg)
        self._pods_table(seen, [LAUNCHER, *_job(seen).targets])
        self.t.done(f"resumed: the pods were built from the templates Kueue left, all on {node}")

    async def summary(self) -> None:
        self.t.step("Summary, then tear down")
        seen = self.observer.catch_up()
        workers = _job(seen).members
        self.t.text(f"{_PAD}{len(workers)} workers in discover_hosts.sh:")
        self._pods_table(seen, list(workers))
        events = await self.observer.poll(
            "the operator's events to arrive", self._operator_events, timeout=self.timeout
        )
        self.t.text("")
        self.t.text(f"{_PAD}Events the operator recorded (kubectl get events):")
        self.t.grouped_table(["COUNT", "REASON", "LAST MESSAGE"], event_groups(events))
        self.t.text("")
        self.t.hint(f"kubectl delete mpijob {JOB}")
        await self.client.delete(MPIJOBS, JOB, namespace=NAMESPACE)

        def gone(now: Snapshot) -> bool:
            return now.job is None and not now.pods and not now.scalers

        await self.observer.until(
            "the job, its pods and its scalers to be deleted", gone, timeout=self.timeout
        )
        await self.observer.poll(
            "its ConfigMap, Secret and Service to be deleted",
            self._children_gone,
            timeout=self.timeout,
        )
        self.t.done("the job and everything it owned are gone")

    # -- helpers

    async def _synced(self) -> None:
        async def listed() -> tuple[bool | None, str]:
            return (True if self.observer.feed.synced else None), "the first lists are not done"

        await self.observer.poll("the watches to start", listed, timeout=self.timeout)

    async def _settled(self, what: str, size: int) -> Snapshot:
        def running(seen: Snapshot) -> bool:
            job = seen.job
            return (
                job is not None
                and job.phase == "Running"
                and len(job.targets) == size
                and set(job.members) == set(job.targets)
                and seen.running(LAUNCHER, *job.targets)
            )

        return await self.observer.until(what, running, timeout=self.timeout)

    async def _scaled(self, res: Resource, size: int, name: str | None = None) -> Snapshot:
        """Wait until a scaler of ``res`` (``name``, or any) succeeded and the job has ``size``."""

        def finished(seen: Snapshot) -> bool:
            found = [
                scaler
                for key, scaler in seen.scalers.items()
                if key.startswith(f"{res.kind.lower()}/")
                and (name is None or scaler.name == name)
                and scaler.outcome is not None
            ]
            for scaler in found:
                if not scaler.succeeded:
                    assert scaler.outcome is not None
                    _, reason, message = scaler.outcome
                    msg = f"{scaler.subject} failed ({reason}): {message}"
                    raise StepFailed(msg)
            job = seen.job
            return (
                bool(found)
                and job is not None
                and job.phase == "Running"
                and len(job.members) == size
                and set(job.members) == set(job.targets)
                and seen.running(*job.targets)
                and all(pod in job.targets or pod == LAUNCHER for pod in seen.pods)
            )

        what = f"{res.kind} to finish with {size} workers"
        return await self.observer.until(what, finished, timeout=self.timeout)

    async def _discover(self, members: Sequence[str]) -> str:
        """Run discover_hosts.sh in the launcher until it lists exactly ``members``.

        The membership pusher rewrites it after the membership changed, so a run may briefly
        print the previous hosts; runs are repeated until they match or the step times out.
        """
        wanted = sorted(members)

        async def attempt() -> tuple[str | None, str]:
            command = list(HOSTS_COMMAND)
            result = await self.client.exec(NAMESPACE, LAUNCHER, command, timeout=_EXEC_TIMEOUT)
            if result.exit_code != 0:
                detail = result.stderr.decode(errors="replace").strip()
                msg = f"{' '.join(command)} in {LAUNCHER} exited {result.exit_code}: {detail}"
                raise StepFailed(msg)
            content = result.stdout.decode(errors="replace")
            listed = hosts_of(content)
            if sorted(listed) == wanted:
                return content, ""
            return None, f"it lists {', '.join(listed) or 'nothing'}"

        what = f"discover_hosts.sh to list {len(wanted)} workers"
        return await self.observer.poll(what, attempt, timeout=self.timeout)

    async def _new_hosts(self, members: Sequence[str]) -> None:
        self.t.hint(f"kubectl exec {LAUNCHER} -- sh {DISCOVER_HOSTS}")
        content = await self._discover(members)
        before = self.hosts.splitlines()
        after = content.splitlines()
        lines = [(Mark.SAME if line in before else Mark.ADDED, line) for line in after]
        lines += [(Mark.REMOVED, line) for line in before if line not in after]
        self.t.block(lines)
        self.hosts = content

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


def _job(seen: Snapshot) -> JobView:
    # Every step after the first starts from a look that saw the job.
    if seen.job is None:
        msg = f"MPIJob {JOB} is gone"
        raise StepFailed(msg)
    return seen.job


def _about_the_demo(event: Mapping[str, Any]) -> bool:
    """True for an event about the demo's job or its ScaleIn."""
    involved = event.get("involvedObject") or {}
    return (involved.get("kind"), involved.get("name")) in _OPERATOR_OBJECTS
