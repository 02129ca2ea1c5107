"""The whole TrainingJob operator on the embedded API server with the simulated kubelet.

One :class:`FakeClock` drives the server, the kubelet and the operator; HTTP, watches and execs are
real, so tests wait (bounded, in real time) for a condition read from the server's storage. The
kubelet really runs the launcher's init container (the hostfile copy) and the execs of the hostfile
pusher and of scalers' scripts, in per-pod sandboxes: tests read the launcher's hostfile with an
exec, as a user would.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.common import SCALEINS, SCALEOUTS, JobSettings, crd_manifest
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import EVENTS, PODS, Client, FakeClock, KubeObject, Manager, Resource, objects
from etctl.testing import ApiServer, KubeletConfig, Limits
from tests.common._operator import condition_of, job_operator
from tests.runtime._realtime import client_of, eventually, run_manager

NS = "default"
JOB = "elastic-training"
"""The name of the example TrainingJob (``examples/trainingjob/training-job.yaml``)."""
LAUNCHER = f"{JOB}-launcher"

__all__ = ["JOB", "LAUNCHER", "NS", "Cluster", "cluster", "eventually", "hosts", "operator", "w"]


def w(index: int) -> str:
    """The name of the example job's worker ``index``."""
    return f"{JOB}-worker-{index}"


def hosts(*indices: int) -> str:
    """The hostfile listing the example job's workers ``indices`` (one slot each), in order."""
    return "".join(f"{w(i)}:1\n" for i in indices)


@dataclass
class Cluster:
    """The server (with its kubelet), a client and the clock, with readers of the storage."""

    server: ApiServer
    client: Client
    clock: FakeClock

    @property
    def idle(self) -> ApiServer:
        """What :func:`etctl.testing.wait_idle` waits on."""
        return self.server

    # -- reading

    def get(self, res: Resource, name: str) -> KubeObject | None:
        for obj in self.server.storage.list(res, namespace=NS).items:
            if objects.name(obj) == name:
                return copy.deepcopy(dict(obj))
        return None

    def names(self, res: Resource) -> list[str]:
        return sorted(objects.name(o) for o in self.server.storage.list(res, namespace=NS).items)

    def job(self, name: str = JOB) -> KubeObject:
        found = self.get(TRAININGJOBS, name)
        assert found is not None, f"no TrainingJob {name}"
        return found

    def status(self, name: str = JOB) -> dict[str, Any]:
        return dict(self.job(name).get("status") or {})

    def condition(self, cond_type: str, name: str = JOB) -> tuple[str, str] | None:
        return condition_of(self.job(name), cond_type)

    def scaler(self, res: Resource, name: str) -> dict[str, Any]:
        found = self.get(res, name)
        assert found is not None, f"no {res.kind} {name}"
        return dict(found.get("status") or {})

    def scaler_done(self, res: Resource, name: str) -> bool:
        found = self.get(res, name)
        return found is not None and (found.get("status") or {}).get("step") == "Done"

    def pods(self) -> dict[str, str]:
        """Pod phases by name."""
        return {
            objects.name(p): str((p.get("status") or {}).get("phase", ""))
            for p in self.server.storage.list(PODS, namespace=NS).items
        }

    def running(self, *names: str) -> bool:
        pods = self.pods()
        return all(pods.get(name) == "Running" for name in names)

    def events(self, reason: str) -> list[KubeObject]:
        items = self.server.storage.list(EVENTS, namespace=NS).items
        return [dict(e) for e in items if e.get("reason") == reason]

    async def hostfile(self, launcher: str = LAUNCHER) -> str:
        """The launcher's live hostfile, read through pods/exec as a user would."""
        result = await self.client.exec(NS, launcher, ["cat", "/etc/edl/hostfile"], timeout=10)
        assert result.exit_code == 0, result.stderr
        return result.stdout.decode()

    # -- writing

    def apply(self, document: dict[str, Any]) -> KubeObject:
        """Create an object (as ``kubectl create -f`` would)."""
        kind = document["kind"]
        res = {"TrainingJob": TRAININGJOBS, "ScaleIn": SCALEINS, "ScaleOut": SCALEOUTS}[kind]
        body = copy.deepcopy(document)
        body.setdefault("metadata", {}).setdefault("namespace", NS)
        return dict(self.server.storage.create(res, body, namespace=NS))

    @property
    def kubelet(self) -> Any:
        return self.server.kubelet


@asynccontextmanager
async def cluster(
    tmp_path: Path, *, gpus: int = 8, nodes: int = 2, limits: Limits | None = None
) -> AsyncIterator[Cluster]:
    """A fresh server with the TrainingJob CRDs and a kubelet, and a client, on one FakeClock."""
    clock = FakeClock()
    crds = [crd_manifest(r) for r in TrainingJobPlugin().custom_resources]
    kubelet = KubeletConfig.uniform(nodes, gpus=gpus, root=tmp_path / "sandboxes")
    async with (
        ApiServer(clock=clock, crds=crds, kubelet=kubelet, limits=limits or Limits()) as api,
        client_of(api, tmp_path) as client,
    ):
        yield Cluster(api, client, clock)


@asynccontextmanager
async def operator(
    env: Cluster, plugin: TrainingJobPlugin | None = None, **options: Any
) -> AsyncIterator[Manager]:
    """The operator (one Manager process) running until the block ends; its failure is raised."""
    op = job_operator(
        env.client, env.clock, plugin or TrainingJobPlugin(), settings=JobSettings(), **options
    )
    async with run_manager(op.manager) as manager:
        yield manager
