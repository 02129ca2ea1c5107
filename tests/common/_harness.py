"""A JobController driven reconcile by reconcile against the cluster under test.

The harness runs no informer and no workqueue: a test submits a job, calls :meth:`Harness.step`
(refresh the snapshot cache, deliver its events, reconcile once) and plays the kubelet itself by
writing pod statuses. Every timestamp the controller writes comes from one :class:`FakeClock`.
Events are really sent (the recorder runs), so tests read them back from the cluster.

The cluster is a fresh embedded server, or a namespace of the real cluster named by
``ETCTL_TEST_KUBECONFIG`` (:func:`etctl.testing.cluster_target`); either way the test's objects
live in :attr:`Harness.ns`. Pods name a scheduler no cluster runs (:data:`NO_SCHEDULER`), so no
kubelet ever runs them and the test alone writes their status.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.common import JobController, JobPlugin, JobSettings
from etctl.runtime import (
    CONFIGMAPS,
    EVENTS,
    PODS,
    SERVICES,
    Client,
    FakeClock,
    KubeObject,
    Request,
    Resource,
    Result,
    objects,
)
from etctl.runtime._recorder import ClientEventSink, EventRecorder
from etctl.testing import ApiServer
from etctl.testing._target import TARGET_NAMESPACE
from tests._cluster import PRESET_CONFIGMAP, Cluster, cluster
from tests.common._snapshot import SnapshotCache
from tests.common.simplejob import SIMPLEJOB, SIMPLEJOBS, SimpleJobPlugin

PRESET = frozenset({PRESET_CONFIGMAP})
"""Objects a real cluster puts in every namespace, which tests do not count as theirs."""

NO_SCHEDULER = "etctl-tests-unscheduled"
"""A scheduler name no cluster runs: pods naming it stay unbound, so the test plays the kubelet."""


def simplejob(
    name: str,
    *,
    workers: int = 2,
    leader: bool = False,
    restart: str = "Never",
    run_policy: Mapping[str, Any] | None = None,
    template: Mapping[str, Any] | None = None,
) -> KubeObject:
    """A SimpleJob manifest (its namespace is the harness's, set on submission)."""
    pod_template = dict(
        template
        or {
            "spec": {
                "schedulerName": NO_SCHEDULER,
                "containers": [{"name": "main", "image": "busybox"}],
            }
        }
    )
    specs: dict[str, Any] = {
        "Worker": {"replicas": workers, "restartPolicy": restart, "template": pod_template}
    }
    if leader:
        specs["Leader"] = {"replicas": 1, "restartPolicy": restart, "template": pod_template}
    return {
        "apiVersion": "example.etctl.io/v1",
        "kind": "SimpleJob",
        "metadata": {"name": name},
        "spec": {"replicaSpecs": specs, "runPolicy": dict(run_policy or {})},
    }


def pod_status(phase: str, *, exit_code: int | None = None, restarts: int = 0) -> dict[str, Any]:
    """The status a kubelet reports for a pod of one ``main`` container in ``phase``.

    The container runs, or has terminated with ``exit_code`` when one is given.
    """
    state: dict[str, Any] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Error"}}
    return {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": phase == "Running",
                "restartCount": restarts,
                "state": state,
            }
        ],
    }


@dataclass
class Harness:
    """A job controller reconciled one step at a time on the cluster under test, and its cache.

    The cluster, its client and the clock are those of :func:`tests._cluster.cluster`.
    """

    env: Cluster
    cache: SnapshotCache
    controller: JobController[Any]
    recorder: EventRecorder

    @property
    def client(self) -> Client:
        """The test's client (retries whose sleeps return at once)."""
        return self.env.client

    @property
    def clock(self) -> FakeClock:
        """The test's clock (the embedded server runs on it too)."""
        return self.env.clock

    @property
    def ns(self) -> str:
        """The test's namespace."""
        return self.env.ns

    @property
    def server(self) -> ApiServer:
        """The embedded server's hooks (tests using them are marked etctl_hooks)."""
        return self.env.server

    async def submit(self, body: KubeObject, res: Resource = SIMPLEJOBS) -> KubeObject:
        """Create a job in the test's namespace."""
        metadata = {**body.get("metadata", {}), "namespace": self.ns}
        return await self.client.create(res, {**body, "metadata": metadata})

    async def step(self, name: str, *, refresh: bool = True) -> Result:
        """Refresh the cache (delivering its events) and reconcile ``name`` once."""
        if refresh:
            await self.cache.refresh()
        return await self.controller.reconcile(Request(self.ns, name))

    async def job(self, name: str) -> KubeObject:
        """The job as stored."""
        return await self.client.get(SIMPLEJOBS, name, namespace=self.ns)

    async def conditions(self, name: str) -> dict[str, tuple[str, str]]:
        """``type -> (status, reason)`` of the job's conditions."""
        status = (await self.job(name)).get("status") or {}
        return {c["type"]: (c["status"], c.get("reason", "")) for c in status.get("conditions", [])}

    async def objects_of(self, res: Resource) -> dict[str, KubeObject]:
        """Objects of ``res`` in the namespace, by name."""
        listed = await self.client.list(res, namespace=self.ns)
        return {objects.name(obj): obj for obj in listed.items if objects.name(obj) not in PRESET}

    async def pods(self) -> dict[str, KubeObject]:
        """Pods by name."""
        return await self.objects_of(PODS)

    async def set_phase(
        self, name: str, phase: str, *, exit_code: int | None = None, restarts: int = 0
    ) -> None:
        """Play the kubelet: give pod ``name`` a phase (and a terminated container)."""
        status = pod_status(phase, exit_code=exit_code, restarts=restarts)
        await self.client.patch_status(PODS, name, {"status": status}, namespace=self.ns)

    async def events(self, reason: str | None = None) -> list[KubeObject]:
        """Events recorded so far (optionally of one reason), oldest first."""
        await self.recorder.flush()
        listed = await self.client.list(EVENTS, namespace=self.ns)
        found = [e for e in listed.items if reason is None or e.get("reason") == reason]
        return sorted(found, key=objects.name)


@asynccontextmanager
async def harness(
    tmp_path: Path,
    *,
    plugin: JobPlugin[Any] | None = None,
    settings: JobSettings | None = None,
    crds: tuple[Mapping[str, Any], ...] = (),
    extra_resources: tuple[Resource, ...] = (),
    kubernetes_version: str = "1.32",
) -> AsyncIterator[Harness]:
    """A harness around ``plugin`` (SimpleJob by default) on the cluster under test.

    ``kubernetes_version`` is the release the embedded server models (a real cluster is its own).
    """
    chosen = plugin or SimpleJobPlugin()
    async with cluster(
        tmp_path,
        chosen,
        namespace=TARGET_NAMESPACE,
        crds=crds,
        client_options={"request_timeout": 10},
        kubernetes_version=kubernetes_version,
    ) as env:
        client, clock = env.client, env.clock
        recorder = EventRecorder(ClientEventSink(client), component="test", clock=clock)
        resources = (chosen.resource.resource(), PODS, SERVICES, CONFIGMAPS, *extra_resources)
        cache = SnapshotCache(client, resources)
        controller = JobController(
            chosen,
            client=client,
            cache=cache,
            recorder=recorder,
            clock=clock,
            settings=settings,
        )
        cache.handlers = {res: controller.child_handler(res) for res in controller.child_resources}
        sender = asyncio.create_task(recorder.run(), name="test-recorder")
        try:
            yield Harness(env, cache, controller, recorder)
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)


__all__ = ["NO_SCHEDULER", "SIMPLEJOB", "Harness", "harness", "pod_status", "simplejob"]
