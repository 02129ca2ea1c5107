"""A whole job operator's test cluster: the embedded server with its kubelet, a client, one clock.

One :class:`FakeClock` drives the server, the kubelet and the operator; HTTP, watches and execs are
real, so tests wait (bounded, in real time) for a condition read from the server's storage. Each
launcher/worker kind's harness extends :class:`KubeletCluster` with readers of its own kind.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.common import CustomResource, JobPlugin, JobSettings, crd_manifest
from etctl.runtime import EVENTS, PODS, Client, FakeClock, KubeObject, Manager, Resource, objects
from etctl.testing import ApiServer, KubeletConfig, Limits
from tests.common._operator import job_operator
from tests.runtime._realtime import client_of, run_manager

__all__ = ["NS", "KubeletCluster", "kubelet_server", "run_operator"]

NS = "default"


@dataclass
class KubeletCluster:
    """The server (with its kubelet), a client and the clock, with readers of the storage."""

    server: ApiServer
    client: Client
    clock: FakeClock

    @property
    def idle(self) -> ApiServer:
        """What :func:`etctl.testing.wait_idle` waits on."""
        return self.server

    @property
    def kubelet(self) -> Any:
        return self.server.kubelet

    # -- reading

    def get(self, res: Resource, name: str) -> KubeObject | None:
        for obj in self.server.storage.list(res, namespace=NS).items:
            if objects.name(obj) == name:
                return copy.deepcopy(dict(obj))
        return None

    def names(self, res: Resource) -> list[str]:
        """The names of the test's objects of ``res`` (not the kube-root-ca.crt every namespace
        holds)."""
        listed = self.server.storage.list(res, namespace=NS).items
        return sorted(n for o in listed if (n := objects.name(o)) != "kube-root-ca.crt")

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

    # -- writing

    def create(self, res: Resource, document: Mapping[str, Any]) -> KubeObject:
        """Create an object in :data:`NS` (as ``kubectl create -f`` would)."""
        body = copy.deepcopy(dict(document))
        body.setdefault("metadata", {}).setdefault("namespace", NS)
        return dict(self.server.storage.create(res, body, namespace=NS))


@asynccontextmanager
async def kubelet_server(
    tmp_path: Path,
    resources: Sequence[CustomResource],
    *,
    gpus: int,
    nodes: int,
    limits: Limits | None = None,
) -> AsyncIterator[tuple[ApiServer, Client, FakeClock]]:
    """A fresh server serving ``resources`` (CRDs) with a kubelet, and a client, on one clock."""
    clock = FakeClock()
    crds = [crd_manifest(r) for r in resources]
    kubelet = KubeletConfig.uniform(nodes, gpus=gpus, root=tmp_path / "sandboxes")
    async with (
        ApiServer(clock=clock, crds=crds, kubelet=kubelet, limits=limits or Limits()) as api,
        client_of(api, tmp_path) as client,
    ):
        yield api, client, clock


@asynccontextmanager
async def run_operator(
    env: KubeletCluster, plugin: JobPlugin[Any], **options: Any
) -> AsyncIterator[Manager]:
    """The operator of ``plugin`` (one Manager) running until the block ends; its failure raised."""
    op = job_operator(env.client, env.clock, plugin, settings=JobSettings(), **options)
    async with run_manager(op.manager) as manager:
        yield manager
