"""The scaling controllers on the cluster under test, with the job's pods played by the test.

The job controller and the kubelet are not part of these tests: :meth:`Env.follow_targets` does
what they would (pods for the targets, running; pods outside them deleted) and
:meth:`Env.deliver` does what the membership pusher would (the launcher's recorded digest of the
hostfile of ``status.currentWorkers``), so each test decides when the world moves. Everything runs
on one FakeClock; HTTP is real, so tests wait for conditions with :func:`eventually`. The cluster
is a namespace of the embedded server or of a real one (:mod:`tests._cluster`), and the
operator's cache covers that namespace.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etctl.common import SCALEIN, SCALEOUT, JobSettings, crd_manifest
from etctl.common._scaling.wiring import setup_scaling
from etctl.errors import NotFound
from etctl.jobs.launcher import PUSHED_ANNOTATION, digest, hostfile
from etctl.jobs.trainingjob._api import TRAININGJOB, TRAININGJOBS
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import (
    EVENTS,
    PODS,
    CacheOptions,
    KubeObject,
    Manager,
    ManagerOptions,
    Resource,
    objects,
)
from etctl.testing import wait_idle
from etctl.testing._target import StorageVerbs
from tests._cluster import Cluster, cluster
from tests.common._harness import NO_SCHEDULER
from tests.runtime._realtime import run_manager

LABELS = {
    "training.kubeflow.org/operator-name": "etctl",
    "training.kubeflow.org/job-name": "tj",
}


@dataclass
class Env:
    """The server and the clock, plus the test's hands."""

    cluster: Cluster
    managers: list[Manager] = field(default_factory=list)

    async def idle(self) -> None:
        """Wait until the cluster and the running controllers are idle (before moving time)."""
        await wait_idle(self.cluster.target.idle, *self.managers)

    @property
    def storage(self) -> StorageVerbs:
        return self.cluster.target.storage

    @property
    def ns(self) -> str:
        """The test's namespace."""
        return self.cluster.ns

    @property
    def clock(self) -> Any:
        return self.cluster.clock

    def job(self, name: str = "tj") -> KubeObject:
        return copy.deepcopy(dict(self.storage.get(TRAININGJOBS, name, namespace=self.ns)))

    def status(self, name: str = "tj") -> dict[str, Any]:
        return dict(self.job(name).get("status") or {})

    def scaler(self, res: Resource, name: str) -> KubeObject:
        return copy.deepcopy(dict(self.storage.get(res, name, namespace=self.ns)))

    def scaler_status(self, res: Resource, name: str) -> dict[str, Any]:
        return dict(self.scaler(res, name).get("status") or {})

    def create_job(self, *, replicas: int = 2, name: str = "tj", **worker: Any) -> KubeObject:
        body = {
            "apiVersion": "kai.alibabacloud.com/v1alpha1",
            "kind": "TrainingJob",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {
                "launcherAttachMode": "kubexec",
                "etReplicaSpecs": {
                    "launcher": {"template": {"spec": {"containers": [{"name": "main"}]}}},
                    "worker": {
                        "replicas": replicas,
                        "template": {"spec": {"containers": [{"name": "w"}]}},
                        **worker,
                    },
                },
            },
        }
        return dict(self.storage.create(TRAININGJOBS, body, namespace=self.ns))

    def create_scaler(self, res: Resource, name: str, spec: dict[str, Any]) -> KubeObject:
        body = {
            "apiVersion": "kai.alibabacloud.com/v1alpha1",
            "kind": res.kind,
            "metadata": {"name": name, "namespace": self.ns},
            "spec": spec,
        }
        return dict(self.storage.create(res, body, namespace=self.ns))

    def pod(self, name: str, rtype: str, phase: str = "Running", job: str = "tj") -> None:
        owner = self.job(job)
        ref = objects.make_controller_ref(owner, TRAININGJOBS)
        body = {
            "metadata": {
                "name": name,
                "namespace": self.ns,
                "labels": {**LABELS, "training.kubeflow.org/replica-type": rtype},
                "ownerReferences": [ref],
            },
            # The test plays the kubelet: on a real cluster no scheduler may bind the pod.
            "spec": {
                "schedulerName": NO_SCHEDULER,
                "containers": [{"name": "main" if rtype == "launcher" else "w", "image": "x"}],
            },
        }
        try:
            self.storage.get(PODS, name, namespace=self.ns)
        except NotFound:
            self.storage.create(PODS, body, namespace=self.ns)
        self.set_phase(name, phase)

    def set_phase(self, name: str, phase: str, **extra: Any) -> None:
        pod = dict(self.storage.get(PODS, name, namespace=self.ns))
        pod["status"] = {"phase": phase, **extra}
        self.storage.update(PODS, pod, namespace=self.ns, subresource="status")

    def delete_pod(self, name: str) -> None:
        self.storage.delete(PODS, name, namespace=self.ns)

    def pods(self) -> dict[str, str]:
        listed = self.storage.list(PODS, namespace=self.ns).items
        return {objects.name(p): str((p.get("status") or {}).get("phase", "")) for p in listed}

    def follow_targets(self, phase: str = "Running", job: str = "tj") -> None:
        """Act as the job controller and the kubelet: pods for the targets, none outside."""
        targets = self.status(job).get("targetWorkers") or []
        for name in self.pods():
            if name.startswith(f"{job}-worker-") and name not in targets:
                self.delete_pod(name)
        have = self.pods()
        for name in targets:
            if name not in have:
                self.pod(name, "worker", phase, job=job)

    def launcher(self, phase: str = "Running", job: str = "tj") -> None:
        self.pod(f"{job}-launcher", "launcher", phase, job=job)

    def deliver(self, job: str = "tj") -> None:
        """Act as the membership pusher: record the hostfile of currentWorkers as delivered."""
        members = self.status(job).get("currentWorkers") or []
        pod = dict(self.storage.get(PODS, f"{job}-launcher", namespace=self.ns))
        metadata = dict(pod["metadata"])
        metadata["annotations"] = {PUSHED_ANNOTATION: digest(hostfile(members, 1))}
        pod["metadata"] = metadata
        self.storage.update(PODS, pod, namespace=self.ns)

    def events(self, reason: str) -> list[KubeObject]:
        listed = self.storage.list(EVENTS, namespace=self.ns).items
        return [dict(e) for e in listed if e.get("reason") == reason]


@asynccontextmanager
async def controllers(
    env: Env, *, settings: JobSettings | None = None, **plugin_options: Any
) -> AsyncIterator[Manager]:
    """Run the scaling machinery in a Manager (an operator process, with its own cache)."""
    options = ManagerOptions(
        metrics_bind_address="0",
        health_probe_bind_address="0",
        cache_sync_timeout=5.0,
        cache=CacheOptions(namespaces=[env.ns]),
    )
    manager = Manager(env.cluster.client, options=options, clock=env.cluster.clock)
    setup_scaling(manager, TrainingJobPlugin(**plugin_options), settings=settings)
    async with run_manager(manager):
        env.managers.append(manager)
        try:
            yield manager
        finally:
            env.managers.remove(manager)


@asynccontextmanager
async def scaling_env(
    tmp_path: Path,
    *,
    run: bool = True,
    settings: JobSettings | None = None,
    **plugin_options: Any,
) -> AsyncIterator[Env]:
    """An embedded server with the CRDs and, unless ``run`` is False, the controllers running."""
    crds = [crd_manifest(r) for r in (TRAININGJOB, SCALEIN, SCALEOUT)]
    async with cluster(tmp_path, raw=True, crds=crds) as env:
        found = Env(env)
        if not run:
            yield found
            return
        async with controllers(found, settings=settings, **plugin_options):
            yield found
