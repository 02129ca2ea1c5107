"""An elastic PyTorchJob end to end: training-operator's examples, /scale, scalers and HPAs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.pytorchjob import PYTORCHJOBS, PyTorchJobPlugin
from etctl.runtime import Resource, objects
from etctl.testing import eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.pytorchjob._manifests import ECHO, NS, echo, environment, example, resolves, worker

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the members and answers execs and DNS, in virtual time"
)

JOB = ECHO
HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")


def w(index: int) -> str:
    return worker(JOB, index)


def done(env: Cluster, res: Resource) -> list[dict[str, Any]]:
    return [s for s in env.scalers(res).values() if (s.get("status") or {}).get("step") == "Done"]


def uids(env: Cluster, *names: str) -> dict[str, str]:
    return {name: objects.uid(env.pod(name)) for name in names}


async def started(env: Cluster, document: dict[str, Any], count: int = 2) -> None:
    env.apply(document)
    await eventually(lambda: env.pods_running(*(w(i) for i in range(count))))
    await eventually(lambda: env.phase(JOB) == "Running")
    await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(i) for i in range(count)])


async def test_the_echo_example_runs_with_torchruns_env_and_a_rendezvous_every_member_resolves(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, example("elastic-echo.yaml"))
        for index in (0, 1):
            assert await environment(env, w(index)) == {
                "PET_RDZV_ENDPOINT": f"{JOB}-rdzv:23456",
                "PET_RDZV_BACKEND": "c10d",
                "PET_NNODES": "1:2",
                "PET_MAX_RESTARTS": "100",
                "PET_NPROC_PER_NODE": "auto",
            }
        # The host (worker-0) resolves the endpoint to its own address, so its torchrun hosts the
        # c10d store; the other member resolves it to the host's address too.
        host_ip = env.pod(w(0))["status"]["podIP"]
        assert await resolves(env, w(0), f"{JOB}-rdzv") == host_ip
        assert await resolves(env, w(1), f"{JOB}-rdzv") == host_ip
        assert await resolves(env, w(1), w(0)) == host_ip  # training-operator's per-pod Services
        status = env.status(JOB)
        assert (status["minReplicas"], status["maxReplicas"]) == (1, 2)
        assert status["rendezvousEndpoint"] == f"{JOB}-rdzv:23456"
        assert status["rendezvousHost"] == w(0)
        assert status["pendingWorkers"] == []
        assert status["phase"] == "Running"
        assert sorted(env.services()) == [f"{JOB}-rdzv", w(0), w(1)]
        assert env.pod(w(1))["spec"]["restartPolicy"] == "OnFailure"


async def test_kubectl_scale_out_and_in_keeps_the_members_that_stay(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, echo(minReplicas=2, maxReplicas=4))
        scale = await env.client.get_subresource(PYTORCHJOBS, JOB, "scale", namespace=NS)
        assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (2, 2)
        first = uids(env, w(0), w(1))
        await env.scale(JOB, 4)
        await eventually(lambda: len(done(env, SCALEOUTS)) == 1)
        (scaler,) = done(env, SCALEOUTS)
        assert scaler["spec"]["selector"] == {
            "name": JOB,
            "kind": "PyTorchJob",
            "apiGroup": "kubeflow.org",
        }
        assert scaler["status"]["addPods"] == [w(2), w(3)]
        await eventually(lambda: env.pods_running(w(2), w(3)))
        await eventually(lambda: env.status(JOB)["currentWorkers"] == [w(i) for i in range(4)])
        assert uids(env, w(0), w(1)) == first  # nobody restarted
        assert (await environment(env, w(3)))["PET_NNODES"] == "2:4"
        # In: the highest index goes, the rest keep running.
        await env.scale(JOB, 3)
        await eventually(lambda: len(done(env, SCALEINS)) == 1)
        (scaler,) = done(env, SCALEINS)
        assert scaler["status"]["toDeletePods"] == [w(3)]
        await eventually(lambda: w(3) not in env.phases())
        await eventually(lambda: w(3) not in env.services())
        assert uids(env, w(0), w(1)) == first
        status = env.status(JOB)
        assert status["targetWorkers"] == status["currentWorkers"] == [w(0), w(1), w(2)]
        assert env.stored(JOB)["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
        await eventually(lambda: env.phase(JOB) == "Running")
        assert env.condition(JOB, "Scaling") == ("False", "ScalingInSucceeded")


async def test_a_scale_past_the_elastic_bounds_is_clamped_with_an_event(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, echo(minReplicas=2, maxReplicas=3))
        await env.scale(JOB, 10)
        await eventually(lambda: env.events("ReplicasClamped"))
        (event,) = env.events("ReplicasClamped")
        assert (event["type"], event["message"]) == (
            "Warning",
            f"replicas 10 of PyTorchJob {JOB} is above maxReplicas 3; set to 3",
        )
        await eventually(lambda: env.pods_running(w(2)))
        await env.scale(JOB, 1)
        await eventually(lambda: len(env.events("ReplicasClamped")) == 2)
        await eventually(lambda: w(2) not in env.phases())
        assert env.stored(JOB)["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2


async def test_scalers_naming_a_pytorchjob_resize_it(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, echo(minReplicas=1, maxReplicas=4))
        selector = {"name": JOB, "kind": "PyTorchJob"}
        env.apply(
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "more"},
                "spec": {"selector": selector, "toAdd": {"count": 2}},
            }
        )
        await eventually(lambda: len(done(env, SCALEOUTS)) == 1)
        await eventually(lambda: env.pods_running(w(2), w(3)))
        kept = uids(env, w(0), w(2), w(3))
        env.apply(
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleIn",
                "metadata": {"name": "fewer"},
                "spec": {"selector": selector, "toDelete": {"podNames": [w(1)]}},
            }
        )
        await eventually(lambda: len(done(env, SCALEINS)) == 1)
        await eventually(lambda: w(1) not in env.phases())
        assert uids(env, w(0), w(2), w(3)) == kept
        assert env.status(JOB)["targetWorkers"] == [w(0), w(2), w(3)]
        assert env.stored(JOB)["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3


async def test_elastic_metrics_make_an_hpa_on_the_jobs_scale_and_what_it_writes_is_followed(
    tmp_path: Path,
) -> None:
    document = example("elastic-imagenet.yaml")
    job = document["metadata"]["name"]
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path, 3)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.get(HPAS, job) is not None)
        hpa = env.get(HPAS, job)
        assert hpa is not None
        policy = document["spec"]["elasticPolicy"]
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": job,
        }
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (
            policy["minReplicas"],
            policy["maxReplicas"],
        )
        assert hpa["spec"]["metrics"] == policy["metrics"]
        assert objects.controller_ref(hpa) == objects.uid(env.stored(job))
        await eventually(lambda: env.phase(job) == "Running")
        # What the HPA controller writes: the job's /scale.
        await env.scale(job, policy["maxReplicas"])
        await eventually(lambda: len(env.status(job)["targetWorkers"]) == policy["maxReplicas"])


async def test_a_static_jobs_world_is_fixed_and_its_master_is_found_by_name(
    tmp_path: Path,
) -> None:
    document = example("simple.yaml")
    job = document["metadata"]["name"]
    master = f"{job}-master-0"
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        env.apply(document)
        await eventually(lambda: env.pods_running(master, worker(job, 0)))
        await eventually(lambda: env.phase(job) == "Running")
        assert await environment(env, worker(job, 0)) == {
            "MASTER_PORT": "23456",
            "PET_MASTER_PORT": "23456",
            "MASTER_ADDR": master,
            "PET_MASTER_ADDR": master,
            "WORLD_SIZE": "2",
            "RANK": "1",
            "PET_NODE_RANK": "1",
            "PET_NPROC_PER_NODE": "auto",
            "PET_NNODES": "2",
        }
        assert await resolves(env, worker(job, 0), master) == env.pod(master)["status"]["podIP"]
        init = env.pod(worker(job, 0))["spec"]["initContainers"]
        assert [c["name"] for c in init] == ["init-pytorch"]
        # A worker evicted comes back under its name (its RANK is its index).
        env.kubelet.evict(NS, worker(job, 0))
        await eventually(lambda: env.pods_running(worker(job, 0)))
        await wait_idle(env.server, manager)
        assert sorted(n for n in env.phases() if n.startswith(job)) == [master, worker(job, 0)]
        assert "rendezvousEndpoint" not in env.status(job)
        assert sorted(env.services()) == [master, worker(job, 0)]


async def test_a_scaler_naming_a_static_job_fails_at_once_with_an_event_saying_why(
    tmp_path: Path,
) -> None:
    document = example("simple.yaml")
    job = document["metadata"]["name"]
    selector = {"name": job, "kind": "PyTorchJob"}
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        env.apply(document)
        await eventually(lambda: env.phase(job) == "Running")
        workers = uids(env, f"{job}-master-0", worker(job, 0))
        for kind, name, change in (
            ("ScaleOut", "more", {"toAdd": {"count": 1}}),
            ("ScaleIn", "fewer", {"toDelete": {"count": 1}}),
        ):
            env.apply(
                {
                    "apiVersion": "kai.alibabacloud.com/v1alpha1",
                    "kind": kind,
                    "metadata": {"name": name},
                    "spec": {"selector": selector, **change},
                }
            )
        await eventually(
            lambda: env.scaler_done(SCALEOUTS, "more") and env.scaler_done(SCALEINS, "fewer")
        )
        await wait_idle(env.server, manager)
        for res, name in ((SCALEOUTS, "more"), (SCALEINS, "fewer")):
            status = env.scaler(res, name)
            failed = status["conditions"][-1]
            assert (status["phase"], failed["type"], failed["reason"]) == (
                "ScaleFailed",
                "ScaleFailed",
                "JobNotElastic",
            )
            assert f"PyTorchJob {job} is not elastic" in failed["message"]
        events = env.events("JobNotElastic")
        assert sorted(e["involvedObject"]["name"] for e in events) == ["fewer", "more"]
        assert {e["type"] for e in events} == {"Warning"}
        assert "no spec.elasticPolicy" in events[0]["message"]
        # The job is as it was: its pods kept, its Worker replicas untouched.
        assert uids(env, f"{job}-master-0", worker(job, 0)) == workers
        assert env.stored(job)["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1
