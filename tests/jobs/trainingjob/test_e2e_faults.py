"""Faults end to end: failed and evicted workers, an operator restarted mid-scale, bad manifests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS
from etctl.errors import Invalid
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import PODS
from etctl.testing import Behaviour, PodPolicy, eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, hostfile, hosts, w
from tests.schema_support import EXAMPLES, load_yaml

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)


def job(**worker: Any) -> dict[str, Any]:
    document = copy.deepcopy(load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml"))
    document["spec"]["etReplicaSpecs"]["worker"].update(worker)
    return document


async def test_failed_and_evicted_workers_come_back_under_new_names(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(job(restartPolicy="OnFailure"))
        await eventually(lambda: env.pods_running(LAUNCHER))
        await eventually(lambda: env.status(JOB).get("phase") == "Running")
        env.kubelet.exit(NS, w(1), 1)
        await eventually(lambda: env.status(JOB).get("targetWorkers") == [w(0), w(2)])
        await eventually(lambda: env.pods_running(w(2)) and w(1) not in env.phases())
        await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(0), w(2)])
        await eventually(lambda: env.status(JOB).get("lastWorkerIndex") == 2)
        # The pusher rewrites the launcher's hostfile; read it through exec.
        await eventually_hostfile(env, hosts(0, 2))
        env.kubelet.evict(NS, w(0))
        await eventually(lambda: env.status(JOB).get("targetWorkers") == [w(3), w(2)])
        await eventually(lambda: env.pods_running(w(3)) and w(0) not in env.phases())
        await eventually_hostfile(env, hosts(2, 3))
        # Events are posted in the background: wait for them rather than race their writer.
        await eventually(lambda: len(env.events("TrainingJobWorkerFailed")) >= 2)
        replaced = env.events("TrainingJobWorkerFailed")
        assert {e["type"] for e in replaced} == {"Warning"}
        assert env.status(JOB)["phase"] == "Running"


async def test_under_never_a_deleted_member_is_replaced_and_a_failed_one_stays(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(job(restartPolicy="Never"))
        await eventually(lambda: env.pods_running(LAUNCHER))
        await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(0), w(1)])
        # Deleted by someone else: not a verdict of the program, replaced under a new name (the
        # old one may be blacklisted by Horovod), never recreated under its own.
        env.server.storage.delete(PODS, w(1), namespace=NS)
        await eventually(lambda: env.status(JOB).get("targetWorkers") == [w(0), w(2)])
        await eventually(lambda: env.pods_running(w(2)) and w(1) not in env.phases())
        await eventually_hostfile(env, hosts(0, 2))
        # Failed by its own exit: under Never it stays failed and leaves the hostfile.
        env.kubelet.exit(NS, w(0), 1)
        await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(2)])
        await eventually_hostfile(env, hosts(2))
        assert env.status(JOB)["targetWorkers"] == [w(0), w(2)]
        assert env.phases()[w(0)] == "Failed"
        assert env.status(JOB)["lastWorkerIndex"] == 2


async def eventually_hostfile(env: Cluster, expected: str, *, timeout: float = 10.0) -> None:
    """Read the launcher's hostfile through exec until it is ``expected`` (bounded, real time)."""

    async def written() -> bool:
        return await hostfile(env) == expected

    await eventually(written, timeout=timeout, what=f"the launcher's hostfile {expected!r}")


async def test_the_run_policy_example_restarts_the_whole_job(tmp_path: Path) -> None:
    document = load_yaml(EXAMPLES / "trainingjob" / "training-job-run-policy.yaml")
    name = document["metadata"]["name"]
    launcher = f"{name}-launcher"
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.pods_running(launcher))
        await eventually(lambda: env.status(name).get("phase") == "Running")
        first = env.status(name)["targetWorkers"]
        env.kubelet.exit(NS, launcher, 1)
        await eventually(lambda: env.condition(name, "Restarting") is not None)
        await eventually(lambda: env.status(name).get("restartCount") == 1)
        await eventually(
            lambda: env.pods_running(launcher) and env.status(name)["phase"] == "Running"
        )
        status = env.status(name)
        # No launcher ran meanwhile, so no Horovod knew any name: the workers keep theirs.
        assert status["targetWorkers"] == status["currentWorkers"] == first
        assert env.condition(name, "Restarting") is None  # Running replaced it
        assert env.condition(name, "Running") == ("True", "TrainingJobRunning")


async def test_an_operator_restart_mid_scale_repeats_nothing(tmp_path: Path) -> None:
    async with cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        async with env.operating():
            env.apply(job())
            await eventually(lambda: env.status(JOB).get("phase") == "Running")
            script = 'echo "$1" >> /scripts/runs\n'
            await env.client.exec(
                NS,
                LAUNCHER,
                ["sh", "-c", "mkdir -p /scripts && cat > /scripts/on-scale.sh"],
                stdin=script.encode(),
                timeout=10,
            )
            # The victim takes its time to stop: the scale-in waits in Deleting.
            env.kubelet.add_policy(PodPolicy(name=w(1), does=Behaviour(stop_seconds=60)))
            env.apply(
                {
                    "apiVersion": "kai.alibabacloud.com/v1alpha1",
                    "kind": "ScaleIn",
                    "metadata": {"name": "less"},
                    "spec": {
                        "selector": {"name": JOB},
                        "toDelete": {"count": 1},
                        "script": "/scripts/on-scale.sh",
                    },
                }
            )
            await eventually(lambda: env.scaler(SCALEINS, "less").get("step") == "Deleting")
        decided = env.scaler(SCALEINS, "less")
        assert decided["toDeletePods"] == [w(1)]
        # A new operator process picks up where the old one stopped.
        async with env.operating() as manager:
            await eventually(manager.cache.has_synced)  # its sync timeout runs on the clock too
            await wait_idle(env.server, manager)
            await env.clock.advance(60)
            await eventually(lambda: env.scaler_done(SCALEINS, "less"))
            await eventually(lambda: env.status(JOB).get("currentScaler") is None)
        done = env.scaler(SCALEINS, "less")
        assert done["toDeletePods"] == decided["toDeletePods"]
        assert done["conditions"][-1]["reason"] == "ScalingInSucceeded"
        assert [c["type"] for c in done["conditions"]].count("ScriptExecuted") == 1
        runs = await env.client.exec(NS, LAUNCHER, ["cat", "/scripts/runs"], timeout=10)
        assert runs.stdout.decode() == f"{w(0)}:1\n"  # the script ran exactly once
        assert env.status(JOB)["targetWorkers"] == [w(0)]
        assert w(1) not in env.phases()


async def test_a_trainingjob_without_a_launcher_is_rejected_by_the_schema(tmp_path: Path) -> None:
    async with cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        document = job()
        del document["spec"]["etReplicaSpecs"]["launcher"]
        document["metadata"]["namespace"] = NS
        with pytest.raises(Invalid) as caught:
            await env.client.create(TRAININGJOBS, document, namespace=NS)
        assert "spec.etReplicaSpecs.launcher: Required value" in str(caught.value)
        assert env.get(TRAININGJOBS, JOB) is None
        assert env.names(PODS) == []
