"""Scaling an MPIJob end to end: /scale, ScaleIn/ScaleOut naming it, bounds, failed workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.mpijob import MPIJOBS, MPIJobPlugin
from etctl.runtime import PODS, ROLES
from etctl.testing import Behaviour, PodPolicy, eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.mpijob._manifests import NS, discover, discovers, example

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet fails and evicts workers and runs execs, in virtual time"
)

JOB = "tensorflow-mnist-elastic"
LAUNCHER = f"{JOB}-launcher"


def w(index: int) -> str:
    return f"{JOB}-worker-{index}"


def hosts(*indices: int) -> dict[str, int]:
    """What Horovod makes of discover_hosts.sh listing workers ``indices`` (v1: pod names)."""
    return {w(i): 1 for i in indices}


def elastic(**worker: Any) -> dict[str, Any]:
    document = example("tensorflow-mnist-elastic.yaml")
    document["spec"]["mpiReplicaSpecs"]["Worker"].update(worker)
    return document


async def started(env: Cluster, document: dict[str, Any] | None = None) -> None:
    document = document or example("tensorflow-mnist-elastic.yaml")
    env.apply(document)
    await eventually(lambda: env.phase(JOB) == "Running")
    count = document["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"]
    await eventually(lambda: discovers(env, JOB, hosts(*range(count))))


def role_workers(env: Cluster) -> list[str]:
    role = env.get(ROLES, LAUNCHER)
    assert role is not None
    for rule in role["rules"]:
        if rule["resources"] == ["pods/exec"]:
            return list(rule["resourceNames"])
    return []


def done(env: Cluster, res: Any) -> list[dict[str, Any]]:
    """The finished scalers of ``res``."""
    return [s for s in env.scalers(res).values() if (s.get("status") or {}).get("step") == "Done"]


def outcome(scaler: dict[str, Any]) -> tuple[str, str]:
    last = scaler["status"]["conditions"][-1]
    return last["type"], last.get("reason", "")


async def test_kubectl_scale_out_and_in_through_the_scale_subresource(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        assert env.stored(JOB)["status"]["replicaStatuses"]["Worker"]["selector"] == (
            "training.kubeflow.org/job-name=tensorflow-mnist-elastic,"
            "training.kubeflow.org/operator-name=etctl,training.kubeflow.org/replica-type=worker"
        )
        scale = await env.client.get_subresource(MPIJOBS, JOB, "scale", namespace=NS)
        assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (2, 2)
        await env.scale(JOB, 3)
        await eventually(lambda: len(done(env, SCALEOUTS)) == 1)
        (scaler,) = done(env, SCALEOUTS)
        assert scaler["metadata"]["name"].startswith(f"{JOB}-mpijob-replicas-")
        assert scaler["spec"]["selector"] == {
            "name": JOB,
            "kind": "MPIJob",
            "apiGroup": "kubeflow.org",
        }
        assert outcome(scaler) == ("ScaleSucceeded", "ScalingOutSucceeded")
        assert scaler["status"]["addPods"] == [w(2)]
        await eventually(lambda: discovers(env, JOB, hosts(0, 1, 2)))
        assert role_workers(env) == [w(0), w(1), w(2)]
        assert env.stored(JOB)["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
        # Down: the highest index goes.
        await env.scale(JOB, 2)
        await eventually(lambda: len(done(env, SCALEINS)) == 1)
        (scaler,) = done(env, SCALEINS)
        assert outcome(scaler) == ("ScaleSucceeded", "ScalingInSucceeded")
        assert scaler["status"]["toDeletePods"] == [w(2)]
        await eventually(lambda: w(2) not in env.phases())
        await eventually(lambda: discovers(env, JOB, hosts(0, 1)))
        await eventually(lambda: role_workers(env) == [w(0), w(1)])
        status = env.status(JOB)
        assert status["targetWorkers"] == status["currentWorkers"] == [w(0), w(1)]
        await eventually(lambda: env.phase(JOB) == "Running")
        assert env.condition(JOB, "Scaling") == ("False", "ScalingInSucceeded")


async def test_a_leaving_worker_leaves_discover_hosts_before_its_pod_is_deleted(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        # The leaving worker takes its time to stop, so it is seen Terminating.
        env.kubelet.add_policy(PodPolicy(name=w(2), does=Behaviour(stop_seconds=20)))
        await started(env, elastic(replicas=3))
        await env.scale(JOB, 2)
        await eventually(lambda: env.terminating(w(2)))
        # Its pod is only now being deleted: Horovod already stopped seeing it.
        assert await discover(env, JOB) == hosts(0, 1)
        await env.clock.advance(20)
        await eventually(lambda: w(2) not in env.phases())
        await eventually(lambda: len(done(env, SCALEINS)) == 1)


async def test_a_new_worker_joins_discover_hosts_once_ready(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.kubelet.add_policy(PodPolicy(name=w(2), does=Behaviour(ready_delay=30)))
        await started(env)
        await env.scale(JOB, 3)
        await eventually(lambda: env.pods_running(w(2)))
        await eventually(lambda: w(2) in env.status(JOB).get("currentWorkers", []))
        # Running, a member, but not Ready: not published to Horovod yet.
        assert await discover(env, JOB) == hosts(0, 1)
        await env.clock.advance(30)
        await eventually(lambda: discovers(env, JOB, hosts(0, 1, 2)))


async def test_et_operators_scalers_resize_an_mpijob_they_name(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        await started(env)
        selector = {"name": JOB, "kind": "MPIJob"}
        env.apply(
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "more"},
                "spec": {"selector": selector, "toAdd": {"count": 2}},
            }
        )
        await eventually(lambda: len(done(env, SCALEOUTS)) == 1)
        assert env.scalers(SCALEOUTS)["more"]["status"]["addPods"] == [w(2), w(3)]
        await eventually(lambda: discovers(env, JOB, hosts(0, 1, 2, 3)))
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
        await eventually(lambda: discovers(env, JOB, hosts(0, 2, 3)))
        assert env.stored(JOB)["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
        # et-operator's scalers name no kind: they are TrainingJobs', not this MPIJob's.
        env.apply(
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "for-a-trainingjob"},
                "spec": {"selector": {"name": JOB}, "toAdd": {"count": 1}},
            }
        )
        await wait_idle(env.server, manager)
        assert "status" not in env.scalers(SCALEOUTS)["for-a-trainingjob"]
        assert "ownerReferences" not in env.scalers(SCALEOUTS)["for-a-trainingjob"]["metadata"]


async def test_bounds_clamp_a_scale_request_with_an_event(tmp_path: Path) -> None:
    document = example("tensorflow-mnist-elastic.yaml")
    document["spec"]["elasticPolicy"] = {"minReplicas": 2, "maxReplicas": 3}
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, document)
        await env.scale(JOB, 10)
        await eventually(lambda: env.events("ReplicasClamped"))
        (event,) = env.events("ReplicasClamped")
        assert event["type"] == "Warning"
        assert event["message"] == (f"replicas 10 of MPIJob {JOB} is above maxReplicas 3; set to 3")
        await eventually(lambda: len(done(env, SCALEOUTS)) == 1)
        await eventually(lambda: discovers(env, JOB, hosts(0, 1, 2)))
        await env.scale(JOB, 1)
        await eventually(lambda: len(env.events("ReplicasClamped")) == 2)
        assert env.stored(JOB)["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
        await eventually(lambda: len(done(env, SCALEINS)) == 1)
        await eventually(lambda: discovers(env, JOB, hosts(0, 1)))


async def test_a_failed_worker_is_replaced_under_a_new_name(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, elastic(restartPolicy="OnFailure"))
        env.kubelet.evict(NS, w(1))
        await eventually(lambda: env.pods_running(w(2)))
        await eventually(lambda: discovers(env, JOB, hosts(0, 2)))
        await eventually(lambda: w(1) not in env.phases())
        status = env.status(JOB)
        assert status["targetWorkers"] == [w(0), w(2)]
        assert status["lastWorkerIndex"] == 2
        await eventually(lambda: role_workers(env) == [w(0), w(2)])
        await eventually(lambda: env.events("MPIJobWorkerFailed"))
        (event,) = env.events("MPIJobWorkerFailed")
        assert event["message"] == f"worker {w(1)} of MPIJob {JOB} failed; replaced by {w(2)}"
        assert env.phase(JOB) == "Running"


async def test_a_failed_worker_under_never_leaves_discover_hosts(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)  # the example's workers run restartPolicy Never
        env.kubelet.exit(NS, w(1), 1)
        await eventually(lambda: discovers(env, JOB, hosts(0)))
        assert env.phases()[w(1)] == "Failed"
        assert env.status(JOB)["targetWorkers"] == [w(0), w(1)]
        assert env.phase(JOB) == "Running"  # the launcher's program decides


async def test_a_vanished_worker_is_replaced_whatever_the_policy(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        await env.client.delete(PODS, w(0), namespace=NS)
        await eventually(lambda: env.pods_running(w(2)))
        await eventually(lambda: discovers(env, JOB, hosts(1, 2)))
        assert env.status(JOB)["targetWorkers"] == [w(2), w(1)]


async def test_a_v2beta1_job_publishes_dns_names(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example("horovod-elastic.yaml"))
        job = "horovod-elastic"
        await eventually(lambda: env.phase(job) == "Running")

        def fqdn(i: int) -> str:
            return f"{job}-worker-{i}.{job}.{NS}.svc"

        await eventually(lambda: discovers(env, job, {fqdn(i): 1 for i in range(3)}))
        await env.scale(job, 4)
        await eventually(lambda: discovers(env, job, {fqdn(i): 1 for i in range(4)}))


async def test_an_operator_restarted_mid_scale_in_finishes_it_without_repeating_a_step(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        env.kubelet.add_policy(PodPolicy(name=w(2), does=Behaviour(stop_seconds=20)))
        async with env.operating():
            await started(env, elastic(replicas=3))
            await env.scale(JOB, 2)
            await eventually(lambda: env.terminating(w(2)))
            (scaler,) = env.scalers(SCALEINS).values()
            assert scaler["status"]["step"] == "Deleting"
        # A new operator process: the decision it finds (w(2), Deleting) is carried on.
        async with env.operating():
            await env.clock.advance(20)
            await eventually(lambda: len(done(env, SCALEINS)) == 1)
            await eventually(lambda: discovers(env, JOB, hosts(0, 1)))
        (scaler,) = env.scalers(SCALEINS).values()
        assert scaler["status"]["toDeletePods"] == [w(2)]
        assert outcome(scaler) == ("ScaleSucceeded", "ScalingInSucceeded")
        assert env.status(JOB)["targetWorkers"] == [w(0), w(1)]
        assert len(env.events("ScalerCreated")) == 1


async def test_a_long_named_job_grows_as_far_as_its_worker_names_fit(tmp_path: Path) -> None:
    # 54 characters, the longest accepted: <job>-worker-9 is 63 long, <job>-worker-10 would be 64.
    # /scale to 11 grows the job to the ten workers whose names fit and says so; an explicit
    # scale-out past them fails (NameTooLong), in the MPIJob's own terms (it has no per-worker
    # Services).
    name = "a" * 54
    document = example("pi.yaml")
    document["metadata"]["name"] = name
    for spec in document["spec"]["mpiReplicaSpecs"].values():
        del spec["template"]["spec"]["containers"][0]["resources"]
    workers = [f"{name}-worker-{i}" for i in range(10)]
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path, 3)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.phase(name) == "Running")
        await env.scale(name, 11)
        await eventually(lambda: env.events("ReplicasClamped"))
        (event,) = env.events("ReplicasClamped")
        assert event["type"] == "Warning"
        assert event["message"] == (
            f"replicas 11 of MPIJob {name} is more than its worker names allow: workers past "
            f"{name}-worker-9 would have names over 63 characters (a worker's hostname is its "
            "name, and a hostname is a DNS label; a shorter job name leaves room for more); set "
            "to 10"
        )
        await eventually(lambda: len(done(env, SCALEOUTS)) == 1)
        (grown,) = done(env, SCALEOUTS)
        assert outcome(grown) == ("ScaleSucceeded", "ScalingOutSucceeded")
        assert grown["status"]["addPods"] == workers[2:]
        assert env.stored(name)["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 10
        await eventually(lambda: env.pods_running(*workers))
        assert env.status(name)["targetWorkers"] == workers
        env.apply(
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "one-more"},
                "spec": {"selector": {"name": name, "kind": "MPIJob"}, "toAdd": {"count": 1}},
            }
        )
        await eventually(lambda: len(done(env, SCALEOUTS)) == 2)
        refused = env.scalers(SCALEOUTS)["one-more"]
        assert outcome(refused) == ("ScaleFailed", "NameTooLong")
        message = refused["status"]["conditions"][-1]["message"]
        assert message == (
            f"MPIJob {name} cannot get worker {name}-worker-10: the name would exceed 63 "
            "characters (a worker's hostname is its name, and a hostname is a DNS label); a "
            "shorter job name leaves room for more workers"
        )
        assert "Service" not in message
        assert env.status(name)["targetWorkers"] == workers
        assert len(env.events("ReplicasClamped")) == 1
