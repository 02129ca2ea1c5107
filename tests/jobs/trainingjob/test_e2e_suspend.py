"""Suspending and resuming a TrainingJob end to end, as Kueue does it.

Suspending deletes every pod and keeps the job; while it is suspended Kueue writes the templates
(a node selector here); resuming builds the pods from the templates as they are then, resets the
start time, and writes Suspended/Resumed as kubeflow does. The launcher deleted by the suspension
did not vanish: the job must not fail for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import SUSPEND_ANNOTATION, TRAININGJOBS
from etctl.runtime import PODS
from etctl.testing import eventually
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, example, hostfile

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)

NODE = "node-1"


def node_of(env: Cluster, name: str) -> str:
    pod = env.get(PODS, name)
    assert pod is not None, f"no pod {name}"
    return str(pod["spec"].get("nodeName", ""))


def selector_of(env: Cluster, name: str) -> dict[str, str]:
    pod = env.get(PODS, name)
    assert pod is not None, f"no pod {name}"
    return dict(pod["spec"].get("nodeSelector") or {})


def suspended(env: Cluster) -> bool:
    return env.condition(JOB, "Suspended") == ("True", "TrainingJobSuspended") and not any(
        name.startswith(JOB) for name in env.phases()
    )


@pytest.mark.parametrize("switch", ["runPolicy", "annotation"])
async def test_a_resumed_job_runs_again_from_its_templates_as_they_are(
    tmp_path: Path, switch: str
) -> None:
    async def set_suspended(value: bool) -> None:
        if switch == "runPolicy":
            patch: dict[str, Any] = {"spec": {"runPolicy": {"suspend": value}}}
        else:
            patch = {"metadata": {"annotations": {SUSPEND_ANNOTATION: "true" if value else None}}}
        await env.client.patch(TRAININGJOBS, JOB, patch, namespace=NS)

    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example())
        await eventually(lambda: env.status(JOB).get("phase") == "Running")
        started = env.status(JOB)["startTime"]
        first = env.status(JOB)["targetWorkers"]

        await set_suspended(True)
        await eventually(lambda: suspended(env))
        status = env.status(JOB)
        assert status["phase"] == "Suspended"
        assert env.condition(JOB, "Running") == ("False", "TrainingJobSuspended")
        assert env.condition(JOB, "Failed") is None
        # Kueue admits the job onto chosen nodes while it is suspended.
        selector = {"kubernetes.io/hostname": NODE}
        document = env.stored(JOB)
        specs = document["spec"]["etReplicaSpecs"]
        for replica in ("launcher", "worker"):
            specs[replica]["template"]["spec"]["nodeSelector"] = selector
        await env.client.patch(TRAININGJOBS, JOB, {"spec": {"etReplicaSpecs": specs}}, namespace=NS)
        await env.clock.advance(30)

        await set_suspended(False)
        await eventually(lambda: env.pods_running(LAUNCHER, *first))
        await eventually(lambda: env.status(JOB).get("phase") == "Running")
        assert env.condition(JOB, "Failed") is None
        assert env.condition(JOB, "Suspended") == ("False", "TrainingJobResumed")
        assert env.condition(JOB, "Running") == ("True", "TrainingJobRunning")
        status = env.status(JOB)
        assert status["startTime"] > started  # reset on resume
        # No launcher ran meanwhile, so no Horovod knew any name: the workers keep theirs.
        assert status["targetWorkers"] == status["currentWorkers"] == first
        for name in (LAUNCHER, *first):
            assert selector_of(env, name) == selector
            assert node_of(env, name) == NODE
        assert await hostfile(env) == "".join(f"{name}:1\n" for name in first)

        # The new launcher is the job's own again: its vanishing fails the job as documented.
        env.server.storage.delete(PODS, LAUNCHER, namespace=NS)
        await eventually(lambda: env.condition(JOB, "Failed") is not None)
        assert env.condition(JOB, "Failed") == ("True", "TrainingJobFailed")
        failed = next(c for c in env.status(JOB)["conditions"] if c["type"] == "Failed")
        assert f"launcher pod {LAUNCHER} of TrainingJob {JOB} vanished" in failed["message"]
