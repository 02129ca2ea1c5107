"""``etctl sandbox --demo pytorch``: the life of an elastic PyTorchJob, narrated on the sandbox.

Six steps, each shown with elapsed times and every change seen on the way, each with its own
timeout:

1. create a PyTorchJob as training-operator's users write one (``kubeflow.org/v1``, torchrun with
   the c10d rendezvous, :data:`WORKERS` workers, ``elasticPolicy`` :data:`MIN_WORKERS` to
   :data:`MAX_WORKERS`) and wait until the workers and the job run;
2. read, in each member, the ``PET_*`` environment torchrun reads and what the rendezvous endpoint
   resolves to: one address for every member, the host's own included;
3. scale out to :data:`SCALED_TO` with ``kubectl scale pytorchjob`` (the ``/scale`` subresource an
   HPA writes too), following the scaler the operator makes of it;
4. have the simulated kubelet evict the rendezvous host (``<job>-worker-0``): a new worker under a
   new name replaces it, with what is left of the restart budget as ``PET_MAX_RESTARTS``, and the
   rendezvous moves to a running member instead of dying with the pod;
5. scale in to :data:`SCALED_IN_TO` with et-operator's ScaleIn naming the PyTorchJob: the operator
   removes the highest index and leaves the other members running;
6. summarise (the final members, the events the operator recorded), then delete the job and wait
   until its pods, scalers and Services went with it.

Like the other demos, it is a user of the API: it writes objects and reads state (and runs
``env`` and ``getent hosts`` in the pods) through its own client, never through the operator.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from etctl.cli._demo_manifests import NAMESPACE, scalein_manifest
from etctl.cli._demo_steps import PAD, DemoJob, DemoSteps, run_steps
from etctl.cli._embedded import Sandbox
from etctl.cli._jobkinds import JobKind
from etctl.cli._sandbox_options import DemoOptions
from etctl.cli._timeline import Timeline
from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.pytorchjob import PYTORCHJOBS, PyTorchJobPlugin
from etctl.runtime import SERVICES

__all__ = [
    "DEMO_STEPS",
    "JOB",
    "MAX_WORKERS",
    "MIN_WORKERS",
    "RENDEZVOUS",
    "WORKERS",
    "pytorchjob_manifest",
    "run_pytorchjob_demo",
]

DEMO_STEPS = 6
JOB = "elastic-echo"
WORKERS, MIN_WORKERS, MAX_WORKERS = 2, 2, 4
SCALED_TO, SCALED_IN_TO = 4, 3
MAX_RESTARTS = 3
PORT = 29400
RENDEZVOUS = f"{JOB}-rdzv"
SCALE_IN = f"{JOB}-scale-in"
_DEMO_JOB = DemoJob(
    kind=JobKind.of(PyTorchJobPlugin()),
    name=JOB,
    launcher="",  # torchrun runs in every member; no launcher
    operator_objects=frozenset({("PyTorchJob", JOB), ("ScaleIn", SCALE_IN)}),
    # Events that must have arrived before the summary shows them: (kind, reason).
    expected_events=frozenset(
        {
            ("PyTorchJob", "ScalerCreated"),
            ("PyTorchJob", "PyTorchJobWorkerFailed"),
            ("ScaleIn", "ScalingInSucceeded"),
        }
    ),
)


def pytorchjob_manifest() -> dict[str, Any]:
    """The demo's PyTorchJob: training-operator's elastic echo example, elastic from 2 to 4."""
    container = {
        "name": "pytorch",
        "image": "kubeflow/pytorch-elastic-example-echo:latest",
        "command": ["python", "-m", "torch.distributed.run", "--rdzv_backend=c10d", "./echo.py"],
    }
    return {
        "apiVersion": PYTORCHJOBS.api_version,
        "kind": "PyTorchJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "elasticPolicy": {
                "rdzvBackend": "c10d",
                "rdzvPort": PORT,
                "minReplicas": MIN_WORKERS,
                "maxReplicas": MAX_WORKERS,
                "maxRestarts": MAX_RESTARTS,
            },
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": WORKERS,
                    # Evicted or failed workers are replaced under a new name.
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


async def run_pytorchjob_demo(
    sandbox: Sandbox, timeline: Timeline, *, options: DemoOptions | None = None
) -> int:
    """Run the demo's steps on a ready sandbox.

    Returns:
        0 when every step happened; 1 when one did not (the timeline says which and why).
    """
    return await run_steps(sandbox, timeline, _Demo, options=options)


class _Demo(DemoSteps):
    job_spec = _DEMO_JOB
    members_file = "the world"

    def steps(self) -> Sequence[Callable[[], Awaitable[None]]]:
        return (
            self.create_job,
            self.show_world,
            self.scale_out,
            self.evict,
            self.scale_in,
            self.summary,
        )

    @property
    def read_command(self) -> str:
        return (
            f"kubectl exec <worker> -- env | grep ^PET_; "
            f"kubectl exec <worker> -- getent hosts {RENDEZVOUS}   # each worker"
        )

    async def read_members(self, members: Sequence[str]) -> str:
        """Each member's ``PET_*`` environment, once every one resolves the rendezvous alike.

        One line per member, then the endpoint, the member it resolves to and its address. The
        names are read until every member resolves the endpoint to the address of one member:
        after the host went, the operator moves the Service to another one.
        """

        async def attempt() -> tuple[str | None, str]:
            pods = self.observer.catch_up().pods
            lines, addresses = [], set()
            for name in members:
                env = await self.observer.output(name, ["env"])
                pet = sorted(line for line in env.splitlines() if line.startswith("PET_"))
                lines.append(f"{name}  {' '.join(pet)}")
                found = await self.observer.output(name, ["getent", "hosts", RENDEZVOUS])
                addresses.add(found.split()[0] if found.strip() else "")
            hosts = [pod.name for pod in pods.values() if pod.ip and pod.ip in addresses]
            if len(addresses) != 1 or len(hosts) != 1 or hosts[0] not in members:
                return None, f"{RENDEZVOUS} resolves to {', '.join(sorted(addresses))} among them"
            (address,) = addresses
            lines.append(f"{RENDEZVOUS}:{PORT} -> {hosts[0]} ({address}) from every member")
            return "\n".join(lines) + "\n", ""

        what = f"{len(members)} members to resolve {RENDEZVOUS} to one of them"
        return await self.observer.poll(what, attempt, timeout=self.timeout)

    def victim(self, members: Sequence[str]) -> str:
        """The rendezvous host, whose loss training-operator does not survive."""
        return members[0]

    async def after_delete(self) -> None:
        async def gone() -> tuple[bool | None, str]:
            listed = await self.client.list(SERVICES, namespace=NAMESPACE)
            left = [
                str(item["metadata"]["name"])
                for item in listed.items
                if str(item["metadata"]["name"]).startswith(JOB)
            ]
            return (True, "") if not left else (None, f"Services {', '.join(left)} still there")

        await self.observer.poll("its Services to be deleted", gone, timeout=self.timeout)

    # -- steps

    async def create_job(self) -> None:
        self.t.step(
            f"Create a PyTorchJob (kubeflow.org/v1): torchrun on {WORKERS} workers "
            f"(elasticPolicy {MIN_WORKERS} to {MAX_WORKERS}, c10d rendezvous)"
        )
        self.t.hint(f"kubectl apply -f {JOB}.yaml && kubectl get pytorchjob,pods -w")
        await self.client.create(PYTORCHJOBS, pytorchjob_manifest(), namespace=NAMESPACE)
        seen = await self.settled(f"{WORKERS} workers to run", WORKERS)
        self.pods_table(seen, list(self.job(seen).targets))
        self.t.done(f"PyTorchJob {JOB} is Running: {WORKERS} workers")

    async def show_world(self) -> None:
        await self.show_first(
            "torchrun's environment in each member, and where the rendezvous is",
            f"members, each told PET_NNODES={MIN_WORKERS}:{MAX_WORKERS} and {RENDEZVOUS}:{PORT}",
        )

    async def scale_out(self) -> None:
        self.t.step(f"Scale out to {SCALED_TO} workers through the /scale subresource")
        self.t.hint(f"kubectl scale pytorchjob {JOB} --replicas={SCALED_TO}")
        before = set(self.job(self.observer.last).targets)
        await self.client.patch(
            PYTORCHJOBS,
            JOB,
            {"spec": {"replicas": SCALED_TO}},
            namespace=NAMESPACE,
            subresource="scale",
        )
        seen = await self.scaled_by(SCALEOUTS, SCALED_TO)
        await self.show_members(self.job(seen).members)
        added = [name for name in self.job(seen).targets if name not in before]
        self.t.done(f"{SCALED_TO} workers: added {', '.join(added)}")

    async def evict(self) -> None:
        await super().evict()
        rendezvous = self.shown.splitlines()[-1]  # read_members ends with the endpoint
        self.t.text(f"{PAD}the rendezvous did not die with its host: {rendezvous}")

    async def scale_in(self) -> None:
        self.t.step(f"Scale in to {SCALED_IN_TO} with et-operator's ScaleIn, naming the PyTorchJob")
        self.t.hint(
            "kubectl apply -f scale-in.yaml   # selector: {name: " + JOB + ", kind: PyTorchJob}"
        )
        size = len(self.job(self.observer.last).targets)
        manifest = scalein_manifest(size - SCALED_IN_TO, job=JOB, kind="PyTorchJob")
        await self.client.create(SCALEINS, manifest, namespace=NAMESPACE)
        seen = await self.scaled_by(SCALEINS, SCALED_IN_TO, name=SCALE_IN)
        await self.show_members(self.job(seen).members)
        removed = seen.scalers[f"scalein/{SCALE_IN}"].chosen
        self.t.done(
            f"{SCALED_IN_TO} workers: the operator removed {', '.join(removed)} (the highest "
            "index); the others kept running"
        )
