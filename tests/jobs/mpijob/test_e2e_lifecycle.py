"""An MPIJob's life end to end, both versions: pods, launcher, verdict, cleanup, validation."""

from __future__ import annotations

from pathlib import Path

from tests.jobs.mpijob._operator import NS, cluster, eventually, example, operator


async def test_a_v2beta1_job_runs_and_succeeds(tmp_path: Path) -> None:
    async with cluster(tmp_path) as env, operator(env):
        env.apply(example("pi.yaml"))
        await eventually(lambda: env.running("pi-worker-0", "pi-worker-1", "pi-launcher"))
        await eventually(lambda: env.state("pi") == "Running")
        assert env.condition("pi", "Running") == ("True", "MPIJobRunning")
        launcher = env.pod("pi-launcher")
        assert launcher["spec"]["hostname"] == "pi-launcher"
        assert launcher["spec"]["subdomain"] == "pi"
        assert launcher["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"
        worker = env.pod("pi-worker-1")
        assert worker["spec"]["hostname"] == "pi-worker-1"
        assert worker["spec"]["dnsConfig"]["searches"] == ["pi.default.svc.cluster.local"]
        assert worker["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"
        env.kubelet.exit(NS, "pi-launcher", 0)
        await eventually(lambda: env.state("pi") == "Succeeded")
        assert env.condition("pi", "Succeeded") == ("True", "MPIJobSucceeded")
        # cleanPodPolicy Running: the running workers go, the completed launcher stays.
        await eventually(lambda: sorted(env.pods()) == ["pi-launcher"])


async def test_an_invalid_job_fails_with_a_message_and_an_event(tmp_path: Path) -> None:
    document = example("pi.yaml")
    document["spec"]["mpiReplicaSpecs"]["worker"] = document["spec"]["mpiReplicaSpecs"].pop(
        "Worker"
    )
    async with cluster(tmp_path) as env, operator(env):
        env.apply(document)
        await eventually(lambda: env.state("pi") == "Failed")
        assert env.condition("pi", "Failed") == ("True", "MPIJobInvalid")
        await eventually(lambda: env.events("MPIJobInvalid"))
        (event,) = env.events("MPIJobInvalid")
        assert "spec.mpiReplicaSpecs.worker: unknown replica type" in event["message"]
        assert env.pods() == {}
