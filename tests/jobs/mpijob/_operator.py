"""The whole MPIJob operator on the embedded API server with the simulated kubelet.

One :class:`FakeClock` drives the server, the kubelet and the operator; HTTP, watches and execs are
real, so tests wait (bounded, in real time) for a condition read from the server's storage. The
kubelet really runs init containers and execs in per-pod sandboxes: tests run the launcher's
``discover_hosts.sh`` with an exec, as Horovod does.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.mpijob import MPIJOB, MPIJOBS, MPIJobPlugin
from etctl.runtime import PODS, KubeObject, Manager, Resource, objects
from tests.common._operator import condition_of
from tests.jobs._kubelet_cluster import NS, KubeletCluster, kubelet_server, run_operator
from tests.runtime._realtime import eventually
from tests.schema_support import EXAMPLES, load_yaml

__all__ = [
    "DISCOVER_HOSTS",
    "NS",
    "Cluster",
    "cluster",
    "eventually",
    "example",
    "horovod_hosts",
    "operator",
    "until",
]


DISCOVER_HOSTS = "/etc/mpi/discover_hosts.sh"


def example(name: str) -> dict[str, Any]:
    """An example manifest of ``examples/mpijob/``."""
    return load_yaml(EXAMPLES / "mpijob" / name)


def horovod_hosts(stdout: str, default_slots: int = 1) -> dict[str, int]:
    """Host discovery output parsed as Horovod's ``HostDiscoveryScript`` parses it.

    ``set(stdout.strip().split('\\n'))``; each line ``host:slots`` (``line.split(':')`` must give
    exactly two parts, or Horovod raises) or a bare ``host`` with the default slots.
    """
    hosts: dict[str, int] = {}
    if not stdout.strip():
        return hosts
    for line in set(stdout.strip().split("\n")):
        if ":" in line:
            host, slots = line.split(":")
            hosts[host] = int(slots)
        else:
            hosts[line] = default_slots
    return hosts


async def until(condition: Callable[[], Awaitable[bool]], *, timeout: float = 10.0) -> None:
    """Wait (real time, bounded) until the coroutine ``condition()`` returns True."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await condition():
        if loop.time() > deadline:
            msg = "condition not reached in time"
            raise AssertionError(msg)
        await asyncio.sleep(0.01)


@dataclass
class Cluster(KubeletCluster):
    """The cluster, with readers of MPIJobs, their scalers and their launchers' host discovery."""

    def job(self, name: str) -> KubeObject:
        found = self.get(MPIJOBS, name)
        assert found is not None, f"no MPIJob {name}"
        return found

    def status(self, name: str) -> dict[str, Any]:
        return dict(self.job(name).get("status") or {})

    def condition(self, name: str, cond_type: str) -> tuple[str, str] | None:
        return condition_of(self.job(name), cond_type)

    def state(self, name: str) -> str:
        """The job's phase (``kubectl get mpijob``'s State column)."""
        return str(self.status(name).get("phase") or "")

    def pod(self, name: str) -> KubeObject:
        found = self.get(PODS, name)
        assert found is not None, f"no pod {name}"
        return found

    async def run(self, pod: str, *command: str) -> str:
        """What ``command`` prints in ``pod``'s first container (through ``pods/exec``)."""
        result = await self.client.exec(NS, pod, list(command), timeout=10)
        assert result.exit_code == 0, result.stderr
        return result.stdout.decode()

    async def discover(self, job: str) -> dict[str, int]:
        """Run the launcher's discover_hosts.sh as Horovod does and parse it as Horovod does."""
        return horovod_hosts(await self.run(f"{job}-launcher", "sh", DISCOVER_HOSTS))

    async def discovers(self, job: str, hosts: dict[str, int]) -> bool:
        """True once the launcher's discover_hosts.sh prints exactly ``hosts``."""
        return await self.discover(job) == hosts

    async def scale(self, job: str, replicas: int) -> None:
        """``kubectl scale mpijob <job> --replicas=<replicas>`` (the /scale subresource)."""
        body = {"spec": {"replicas": replicas}}
        await self.client.patch(MPIJOBS, job, body, namespace=NS, subresource="scale")

    def scalers(self, res: Resource) -> dict[str, dict[str, Any]]:
        """The scalers of ``res``, by name."""
        return {
            objects.name(o): copy.deepcopy(dict(o))
            for o in self.server.storage.list(res, namespace=NS).items
        }

    def terminating(self, name: str) -> bool:
        found = self.get(PODS, name)
        return found is not None and "deletionTimestamp" in found["metadata"]

    # -- writing

    def apply(self, document: dict[str, Any]) -> KubeObject:
        """Create an object at its own version (as ``kubectl create -f`` would)."""
        kind, version = document["kind"], document["apiVersion"].rpartition("/")[2]
        res = {
            "MPIJob": MPIJOB.resource(version) if kind == "MPIJob" else MPIJOBS,
            "ScaleIn": SCALEINS,
            "ScaleOut": SCALEOUTS,
        }[kind]
        return self.create(res, document)


@asynccontextmanager
async def cluster(tmp_path: Path, *, gpus: int = 8, nodes: int = 2) -> AsyncIterator[Cluster]:
    """A fresh server with the MPIJob CRDs and a kubelet, and a client, on one FakeClock."""
    resources = MPIJobPlugin().custom_resources
    async with kubelet_server(tmp_path, resources, gpus=gpus, nodes=nodes) as parts:
        yield Cluster(*parts)


@asynccontextmanager
async def operator(
    env: Cluster, plugin: MPIJobPlugin | None = None, **options: Any
) -> AsyncIterator[Manager]:
    """The operator (one Manager process) running until the block ends; its failure is raised."""
    async with run_operator(env, plugin or MPIJobPlugin(), **options) as manager:
        yield manager
