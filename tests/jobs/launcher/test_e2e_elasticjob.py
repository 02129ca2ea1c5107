"""A second launcher/worker kind on the shared layer, end to end, beside TrainingJob.

One operator runs TrainingJob and ElasticJob (:mod:`tests.jobs.launcher.elasticjob`) on the
embedded API server and its kubelet. The ElasticJob starts when its workers are Ready; its launcher
runs ``sh /etc/live/discover_hosts.sh`` and the output parses, as Horovod parses it, into the
running workers; a ScaleOut naming ``kind: ElasticJob`` grows it; a failed worker is replaced;
the launcher's Role follows the workers; its members are in its own status fields.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEOUTS
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.runtime import PODS, ROLES, objects
from etctl.testing import eventually
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.launcher.elasticjob import ELASTICJOBS, ElasticJobPlugin

NS = "default"
JOB = "pi"
LAUNCHER = f"{JOB}-launcher"


def w(index: int) -> str:
    return f"{JOB}-worker-{index}"


def elasticjob(workers: int = 2) -> dict[str, Any]:
    def spec(replicas: int, **more: Any) -> dict[str, Any]:
        container = {"name": "mpi", "image": "mpi"}
        return {"replicas": replicas, "template": {"spec": {"containers": [container]}}, **more}

    return {
        "apiVersion": "example.etctl.io/v1",
        "kind": "ElasticJob",
        "metadata": {"name": JOB, "namespace": NS},
        "spec": {
            "slotsPerWorker": 2,
            "replicaSpecs": {
                "Launcher": spec(1),
                "Worker": spec(workers, restartPolicy="OnFailure"),
            },
        },
    }


@asynccontextmanager
async def both(tmp_path: Path) -> AsyncIterator[Cluster]:
    """A server with both kinds' CRDs and a kubelet, and one operator running both kinds."""
    kinds = (ElasticJobPlugin(), TrainingJobPlugin())
    async with (
        cluster(tmp_path, *kinds, kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        yield env


def job(env: Cluster) -> dict[str, Any]:
    found = env.get(ELASTICJOBS, JOB)
    assert found is not None
    return found


def status(env: Cluster) -> dict[str, Any]:
    return dict(job(env).get("status") or {})


async def discovered(env: Cluster) -> dict[str, int]:
    """What Horovod's driver reads from the launcher's discover_hosts.sh."""
    result = await env.client.exec(NS, LAUNCHER, ["sh", "/etc/live/discover_hosts.sh"], timeout=10)
    assert result.exit_code == 0, result.stderr
    lines = {line for line in result.stdout.decode().strip().split("\n") if line}
    return {host: int(slots) for host, _, slots in (line.rpartition(":") for line in lines)}


async def eventually_discovered(env: Cluster, expected: dict[str, int]) -> None:
    """Run discover_hosts.sh until it lists ``expected`` (bounded, real time)."""

    async def listed() -> bool:
        return await discovered(env) == expected

    await eventually(listed, what=f"discover_hosts.sh listing {expected}")


def condition(env: Cluster, cond_type: str) -> tuple[str, str] | None:
    for entry in status(env).get("conditions", []):
        if entry["type"] == cond_type:
            return entry["status"], entry.get("reason", "")
    return None


def exec_names(env: Cluster) -> list[str]:
    role = env.get(ROLES, LAUNCHER) or {}
    for rule in role.get("rules", []):
        if rule["resources"] == ["pods/exec"]:
            return list(rule["resourceNames"])
    return []


@pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)
async def test_a_second_kind_runs_scales_and_heals_on_the_shared_layer(tmp_path: Path) -> None:
    async with both(tmp_path) as env:
        env.server.storage.create(ELASTICJOBS, copy.deepcopy(elasticjob()), namespace=NS)
        await eventually(lambda: env.pods_running(LAUNCHER))
        await eventually(lambda: condition(env, "Running") == ("True", "ElasticJobRunning"))
        assert condition(env, "LauncherCreated") == ("True", "PodsCreated")
        await eventually(lambda: status(env).get("activeMembers") == [w(0), w(1)])
        # Its own fields, not et-operator's.
        assert status(env)["memberPods"] == [w(0), w(1)]
        assert status(env)["lastMemberIndex"] == 1
        assert "targetWorkers" not in status(env)
        launcher = env.get(PODS, LAUNCHER) or {}
        env_vars = {e["name"]: e["value"] for e in launcher["spec"]["containers"][0]["env"]}
        assert env_vars["OMPI_MCA_plm_rsh_agent"] == "/etc/mpi/kubexec.sh"
        await eventually_discovered(env, {w(0): 2, w(1): 2})
        assert exec_names(env) == [w(0), w(1)]

        # A scaler naming the kind grows it.
        env.server.storage.create(
            SCALEOUTS,
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "more", "namespace": NS},
                "spec": {"selector": {"name": JOB, "kind": "ElasticJob"}, "toAdd": {"count": 1}},
            },
            namespace=NS,
        )
        await eventually(lambda: env.scaler_done(SCALEOUTS, "more"))
        assert env.scaler(SCALEOUTS, "more")["conditions"][-1]["reason"] == "ScalingOutSucceeded"
        owner = objects.controller_of(env.get(SCALEOUTS, "more") or {})
        assert owner is not None
        assert owner["kind"] == "ElasticJob"
        await eventually(lambda: status(env).get("activeScaler") is None)
        assert status(env)["activeMembers"] == [w(0), w(1), w(2)]
        assert job(env)["spec"]["replicaSpecs"]["Worker"]["replicas"] == 3
        await eventually_discovered(env, {w(0): 2, w(1): 2, w(2): 2})
        await eventually(lambda: exec_names(env) == [w(0), w(1), w(2)])

        # A failed worker is replaced under a new name; the script and the Role follow.
        env.kubelet.exit(NS, w(1), 1)
        await eventually(lambda: status(env).get("activeMembers") == [w(0), w(2), w(3)])
        await eventually_discovered(env, {w(0): 2, w(2): 2, w(3): 2})
        await eventually(lambda: exec_names(env) == [w(0), w(2), w(3)])
        assert env.events("ElasticJobWorkerFailed")
        assert condition(env, "Failed") is None
