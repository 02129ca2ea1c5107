"""The TFJob operator under test: embedded API server, simulated kubelet, Manager, JobController.

Everything runs on one :class:`FakeClock`; HTTP and watches are real, so tests wait (bounded, in
real time) for a condition on the server's storage, and move time only where time must pass
(deadlines, TTLs, containers that run for a while), each time once the operator is idle
(:func:`etctl.testing.wait_idle`). Pods run on the simulated kubelet; a test makes
a container exit with :meth:`TFCluster.exit`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.common import JobSettings, crd_manifest
from etctl.jobs.tfjob._api import TFJOB, TFJOBS
from etctl.jobs.tfjob._plugin import TFJobPlugin
from etctl.runtime import NAMESPACES, SERVICES, FakeClock, KubeObject, objects
from etctl.testing import ApiServer, ClusterTarget
from etctl.testing._kubelet import KubeletConfig
from tests.common._operator import Operator, StoredObjects, condition_of, job_operator
from tests.runtime._realtime import client_of

NAMESPACE = "default"


def replica(
    count: int = 1,
    *,
    policy: str = "Never",
    annotations: Mapping[str, str] | None = None,
    **container: Any,
) -> dict[str, Any]:
    """A replica spec whose ``tensorflow`` container the simulated kubelet runs until told."""
    template: dict[str, Any] = {
        "spec": {"containers": [{"name": "tensorflow", "image": "tf:2", **container}]}
    }
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    return {"replicas": count, "restartPolicy": policy, "template": template}


def tfjob(
    name: str,
    *,
    namespace: str = NAMESPACE,
    run_policy: Mapping[str, Any] | None = None,
    success_policy: str | None = None,
    dynamic: bool | None = None,
    **specs: dict[str, Any],
) -> KubeObject:
    """A TFJob manifest with the given replica specs."""
    spec: dict[str, Any] = {"tfReplicaSpecs": specs}
    if run_policy is not None:
        spec["runPolicy"] = dict(run_policy)
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    if dynamic is not None:
        spec["enableDynamicWorker"] = dynamic
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


@dataclass
class TFCluster(StoredObjects):
    """A cluster for TFJobs, whose pods the simulated kubelet runs."""

    # -- reading

    def live_pods(self, namespace: str = NAMESPACE) -> dict[str, KubeObject]:
        """Pods not being deleted, by name."""
        return {
            name: pod
            for name, pod in self.pods(namespace).items()
            if not objects.meta(pod).get("deletionTimestamp")
        }

    def services(self, namespace: str = NAMESPACE) -> dict[str, KubeObject]:
        """Services by name."""
        return self.objects(SERVICES, namespace)

    def phases(self, namespace: str = NAMESPACE) -> dict[str, str]:
        """Pod phases by pod name."""
        return {
            name: str((pod.get("status") or {}).get("phase"))
            for name, pod in self.pods(namespace).items()
        }

    def job(self, name: str, namespace: str = NAMESPACE) -> KubeObject | None:
        """The TFJob as stored, or None."""
        return self.objects(TFJOBS, namespace).get(name)

    def status(self, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
        """The TFJob's status (empty when none)."""
        return dict((self.job(name, namespace) or {}).get("status") or {})

    def condition(
        self, name: str, cond_type: str, namespace: str = NAMESPACE
    ) -> tuple[str, str] | None:
        """``(status, reason)`` of a job condition, or None."""
        return condition_of(self.job(name, namespace), cond_type)

    def state(self, name: str, namespace: str = NAMESPACE) -> str:
        """The type of the job's latest condition (what ``kubectl get tfjobs`` shows)."""
        conditions = self.status(name, namespace).get("conditions") or [{}]
        return str(conditions[-1].get("type", ""))

    @staticmethod
    def tf_config(pod: KubeObject) -> dict[str, Any] | None:
        """The parsed TF_CONFIG of a pod's ``tensorflow`` container, or None."""
        for container in pod["spec"]["containers"]:
            if container["name"] != "tensorflow":
                continue
            for env in container.get("env", []):
                if env["name"] == "TF_CONFIG":
                    parsed: dict[str, Any] = json.loads(env["value"])
                    return parsed
        return None

    # -- acting

    def exit(self, pod: str, code: int, namespace: str = NAMESPACE) -> None:
        """Make the pod's containers exit with ``code`` now (the simulated kubelet)."""
        assert self.server.kubelet is not None
        self.server.kubelet.exit(namespace, pod, code)

    async def create(self, body: KubeObject) -> KubeObject:
        """Create a TFJob."""
        return await self.client.create(TFJOBS, body)

    async def namespace(self, name: str) -> None:
        """Create a namespace."""
        await self.client.create(NAMESPACES, {"metadata": {"name": name}})

    def operator(self, *, settings: JobSettings | None = None, **options: Any) -> Operator:
        """A manager running the TFJob controller (not started)."""
        return job_operator(self.client, self.clock, TFJobPlugin(), settings=settings, **options)


@asynccontextmanager
async def tf_cluster(
    tmp_path: Path,
    *,
    crds: tuple[Mapping[str, Any], ...] = (),
    kubelet: KubeletConfig | None = None,
) -> AsyncIterator[TFCluster]:
    """A fresh server with the TFJob CRD and a simulated kubelet, and a client, on one clock."""
    clock = FakeClock()
    manifests = [crd_manifest(TFJOB), *crds]
    async with (
        ApiServer(clock=clock, crds=manifests, kubelet=kubelet or KubeletConfig()) as api,
        client_of(api, tmp_path) as client,
    ):
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig-tfjob")
        yield TFCluster(ClusterTarget(kubeconfig, NAMESPACE, server=api), client, clock)


__all__ = ["NAMESPACE", "TFCluster", "replica", "tf_cluster", "tfjob"]
