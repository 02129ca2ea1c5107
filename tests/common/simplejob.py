"""SimpleJob: the example job plugin of docs/plugins.md, run end to end by the tests.

A SimpleJob (``example.etctl.io/v1``) has workers and an optional leader. Every pod learns its
peers from the environment and from a ConfigMap; the leader gets a headless service and is only
created once every worker runs; the job succeeds when every pod succeeded and fails when a pod
that is never restarted fails.

Its model declares the replica types (the framework's generic checks validate them), and the
plugin implements three phases: *plan replicas* (the leader waits for the workers), *build
desired objects* (the pods' environment, the leader's Service, the peers ConfigMap); it judges
the outcome with the framework's default (:func:`~etctl.common._phases.judge_replicas`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from etctl.common import (
    DesiredObject,
    JobModel,
    JobState,
    ReplicaRef,
    Replicas,
    job_resource,
)
from etctl.runtime import CONFIGMAPS, KubeObject, Resource, podview

LEADER = "Leader"
WORKER = "Worker"


class SimpleJob(JobModel):
    """Workers and an optional leader that starts once the workers run."""

    api_version: Literal["example.etctl.io/v1"] = "example.etctl.io/v1"
    kind: Literal["SimpleJob"] = "SimpleJob"
    replica_types = (WORKER, LEADER)
    required_types = (WORKER,)
    single_types = (LEADER,)


SIMPLEJOB = job_resource(SimpleJob, plural="simplejobs")
SIMPLEJOBS = SIMPLEJOB.resource()


def peers(job: SimpleJob) -> list[str]:
    """Every pod name of the job, workers first (what each pod is told about the others)."""
    return [
        f"{job.metadata.name}-{rtype.lower()}-{index}"
        for rtype, spec in job.replica_specs().items()
        for index in range(spec.replicas)
    ]


class SimpleJobPlugin:
    """The SimpleJob kind."""

    resource = SIMPLEJOB
    model = SimpleJob
    owned_resources: Sequence[Resource] = (CONFIGMAPS,)

    def plan(self, job: SimpleJob, planned: Replicas, state: JobState[SimpleJob]) -> Replicas:
        """The leader waits until every worker runs."""
        if planned.replica_type != LEADER:
            return planned
        wanted = state.replicas(WORKER)
        running = sum(1 for pod in state.pods_of(WORKER) if podview.phase(pod) == "Running")
        if running >= wanted:
            return planned
        return planned.waiting("WaitingForWorkers", f"{running} of {wanted} workers are running")

    def decorate_pod(
        self, job: SimpleJob, pod: KubeObject, ref: ReplicaRef, state: JobState[SimpleJob]
    ) -> None:
        """Tell every container its role and peers, and mount the peers ConfigMap."""
        env = [
            {"name": "SIMPLEJOB_ROLE", "value": ref.replica_type.lower()},
            {"name": "SIMPLEJOB_INDEX", "value": str(ref.index)},
            {"name": "SIMPLEJOB_PEERS", "value": ",".join(peers(job))},
        ]
        spec = pod["spec"]
        for container in spec["containers"]:
            container["env"] = [*container.get("env", []), *env]
            mounts = container.setdefault("volumeMounts", [])
            mounts.append({"name": "peers", "mountPath": "/etc/simplejob"})
        volume = {"name": "peers", "configMap": {"name": f"{job.metadata.name}-peers"}}
        spec["volumes"] = [*spec.get("volumes", []), volume]

    def build_service(
        self, job: SimpleJob, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        """A headless service for the leader, so workers can reach it by name."""
        if ref.replica_type != LEADER:
            return None
        return {"spec": {"clusterIP": "None", "ports": [{"name": "rpc", "port": 7777}]}}

    def extra_objects(self, job: SimpleJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The peers ConfigMap, kept in line with the spec."""

        def build() -> KubeObject:
            return {"data": {"peers": "\n".join(peers(job)) + "\n"}}

        return [DesiredObject(CONFIGMAPS, f"{job.metadata.name}-peers", build)]
