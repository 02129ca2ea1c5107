"""Kueue-style admission of MPIJobs end to end: created suspended, admitted, suspended again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.jobs.mpijob import MPIJOBS, MPIJobPlugin
from etctl.runtime import CONFIGMAPS, SECRETS, SERVICES
from etctl.testing import Fault, eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.mpijob._manifests import NS, discovers, example

pytestmark = pytest.mark.etctl_hooks("the simulated kubelet and server faults, in virtual time")

NODE = "node-1"


def pods_of(env: Cluster, job: str) -> dict[str, str]:
    return {name: phase for name, phase in env.phases().items() if name.startswith(f"{job}-")}


def admission(node: str) -> dict[str, Any]:
    """What Kueue writes when it admits a job: the flavor's node selector, then resume."""
    template = {"template": {"spec": {"nodeSelector": {"kubernetes.io/hostname": node}}}}
    return {
        "spec": {
            "runPolicy": {"suspend": False},
            "mpiReplicaSpecs": {"Launcher": template, "Worker": template},
        }
    }


@pytest.mark.parametrize(
    ("manifest", "job"),
    [("pi.yaml", "pi"), ("tensorflow-mnist-elastic.yaml", "tensorflow-mnist-elastic")],
    ids=["v2beta1", "v1"],
)
async def test_a_job_created_suspended_runs_once_admitted_where_kueue_put_it(
    tmp_path: Path, manifest: str, job: str
) -> None:
    document = example(manifest)
    document["spec"].setdefault("runPolicy", {})["suspend"] = True
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path, 3)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.condition(job, "Suspended") == ("True", "MPIJobSuspended"))
        assert env.phase(job) == "Suspended"
        assert pods_of(env, job) == {}
        assert "startTime" not in env.status(job)
        await env.clock.advance(90)
        await env.client.patch(MPIJOBS, job, admission(NODE), namespace=NS)
        await eventually(lambda: env.phase(job) == "Running")
        assert env.condition(job, "Suspended") == ("False", "MPIJobResumed")
        assert env.status(job)["startTime"] == "2026-01-01T00:01:30Z"
        pods = pods_of(env, job)
        assert sorted(pods) == [f"{job}-launcher", f"{job}-worker-0", f"{job}-worker-1"]
        for name in pods:
            pod = env.pod(name)
            assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": NODE}
            assert pod["spec"]["nodeName"] == NODE
        await eventually(lambda: env.events("MPIJobResumed"))


async def test_suspending_a_running_elastic_job_keeps_it_and_its_workers_names(
    tmp_path: Path,
) -> None:
    job = "tensorflow-mnist-elastic"
    workers = {f"{job}-worker-0": 1, f"{job}-worker-1": 1}
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path, 3)) as env,
        env.operating() as manager,
    ):
        env.apply(example("tensorflow-mnist-elastic.yaml"))
        await eventually(lambda: env.phase(job) == "Running")
        # The launcher outlives its workers for a while (its first delete is refused): the
        # workers the suspension deleted must not pass for failures of a running job.
        env.server.inject(Fault(verb="delete", resource="pods", name=f"{job}-launcher", status=403))
        suspend = {"spec": {"runPolicy": {"suspend": True}}}
        await env.client.patch(MPIJOBS, job, suspend, namespace=NS)
        await eventually(lambda: sorted(pods_of(env, job)) == [f"{job}-launcher"])
        await wait_idle(env.server, manager)
        await env.clock.advance(5)  # the refused delete is retried
        await eventually(lambda: pods_of(env, job) == {})
        await eventually(lambda: env.phase(job) == "Suspended")
        assert env.condition(job, "Running") == ("False", "MPIJobSuspended")
        # The job and its ConfigMap stay; nobody was replaced while nothing ran.
        assert env.get(CONFIGMAPS, f"{job}-config") is not None
        status = env.status(job)
        assert status["targetWorkers"] == list(workers)
        assert status["lastWorkerIndex"] == 1
        await env.client.patch(MPIJOBS, job, admission(NODE), namespace=NS)
        await eventually(lambda: env.phase(job) == "Running")
        # The same workers come back, on the node Kueue chose, and Horovod finds them again.
        assert sorted(pods_of(env, job)) == [f"{job}-launcher", *workers]
        assert all(env.pod(name)["spec"]["nodeName"] == NODE for name in pods_of(env, job))
        await eventually(lambda: discovers(env, job, workers))
        assert env.status(job)["lastWorkerIndex"] == 1
        assert env.events("MPIJobWorkerFailed") == []


async def test_a_job_created_suspended_gets_its_service_configmap_and_secret_at_once(
    tmp_path: Path,
) -> None:
    # mpi-operator's syncHandler gets or creates the Service, ConfigMap and ssh Secret before it
    # looks at suspend; only the workers and the launcher wait for admission.
    document = example("pi.yaml")
    document["spec"]["runPolicy"]["suspend"] = True
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        env.apply(document)
        await eventually(lambda: env.phase("pi") == "Suspended")
        await eventually(lambda: env.get(SECRETS, "pi-ssh") is not None)
        await wait_idle(env.server, manager)
        service = env.get(SERVICES, "pi")
        config = env.get(CONFIGMAPS, "pi-config")
        secret = env.get(SECRETS, "pi-ssh")
        assert service is not None
        assert config is not None
        assert secret is not None
        for child in (service, config, secret):
            (owner,) = child["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", "pi", True)
        assert service["spec"]["clusterIP"] == "None"
        assert pods_of(env, "pi") == {}
        await env.client.patch(
            MPIJOBS, "pi", {"spec": {"runPolicy": {"suspend": False}}}, namespace=NS
        )
        await eventually(lambda: env.phase("pi") == "Running")
        # The same objects serve the resumed job: the ssh key was not made again.
        resumed = env.get(SECRETS, "pi-ssh")
        assert resumed is not None
        assert resumed["metadata"]["uid"] == secret["metadata"]["uid"]
