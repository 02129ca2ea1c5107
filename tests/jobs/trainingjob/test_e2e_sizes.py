"""A TrainingJob too large for the cluster's object size limits, end to end.

The jobs attach in kubexec mode. The server runs with a lowered ConfigMap data limit (and the
operator is told the same), so that the example job's two workers fit and a third does not: the
hostfile ConfigMap of three workers would be refused by the server (422), so the operator never
writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEOUTS, SizeLimits
from etctl.errors import Invalid
from etctl.jobs.trainingjob._api import TRAININGJOBS, TrainingJob
from etctl.jobs.trainingjob._layout import config_data
from etctl.jobs.trainingjob._names import config_name, worker_prefix
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.jobs.trainingjob._sizes import MAX_WORKERS, Names, config_data_bytes
from etctl.runtime import CONFIGMAPS, PODS, objects
from etctl.testing import Limits, eventually
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, hosts, w
from tests.jobs.trainingjob._manifests import example as shared_example

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)

CONTAINER = "mnist-elastic"
# The ConfigMap of two example workers (one slot each) fits; one of three does not.
DATA = config_data_bytes(Names.sequential(worker_prefix(JOB), 2), 1, CONTAINER) + 10
SERVER = Limits(max_data_bytes=DATA)
OPERATOR = SizeLimits(max_data_bytes=DATA)


def example(name: str, **worker: Any) -> dict[str, Any]:
    document = shared_example(name)
    if document["kind"] == "TrainingJob":
        # kubexec: no generated ssh Secret, whose key alone exceeds the lowered data limit.
        document["spec"]["launcherAttachMode"] = "kubexec"
    if worker:
        document["spec"]["etReplicaSpecs"]["worker"].update(worker)
    return document


def plugin() -> TrainingJobPlugin:
    return TrainingJobPlugin(size_limits=OPERATOR)


def test_the_limit_sits_between_two_and_three_workers() -> None:
    two = config_data([w(0), w(1)], 1, CONTAINER)
    three = config_data([w(0), w(1), w(2)], 1, CONTAINER)
    assert sum(len(v.encode()) for v in two.values()) <= DATA
    assert sum(len(v.encode()) for v in three.values()) > DATA


async def test_a_job_whose_config_map_would_not_fit_fails_as_invalid(tmp_path: Path) -> None:
    async with (
        cluster(
            tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path), limits=SERVER
        ) as env,
        env.operating(plugin()),
    ):
        env.apply(example("training-job.yaml", replicas=3))
        await eventually(lambda: env.condition(JOB, "Failed") is not None)
        failed = next(c for c in env.status(JOB)["conditions"] if c["type"] == "Failed")
        assert (failed["status"], failed["reason"]) == ("True", "TrainingJobInvalid")
        message = failed["message"]
        assert "3 workers need" in message
        assert f"ConfigMap {config_name(JOB)}" in message
        assert f"over the {DATA} bytes a ConfigMap may hold" in message
        assert "at most 2 workers fit" in message
        assert env.phases() == {}
        assert env.get(CONFIGMAPS, config_name(JOB)) is None


async def scaled_out_and_refused(env: Cluster, scaler: str) -> dict[str, Any]:
    await eventually(lambda: env.scaler_done(SCALEOUTS, scaler))
    status = env.scaler(SCALEOUTS, scaler)
    last = status["conditions"][-1]
    assert (last["type"], last["reason"]) == ("ScaleFailed", "MembershipTooLarge")
    assert f"{JOB} cannot grow to 3 workers: 3 workers need" in last["message"]
    assert "at most 2 workers fit" in last["message"]
    return status


async def test_a_scale_out_past_the_limit_fails_at_its_start(tmp_path: Path) -> None:
    async with (
        cluster(
            tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path), limits=SERVER
        ) as env,
        env.operating(plugin()),
    ):
        env.apply(example("training-job.yaml"))
        await eventually(lambda: env.pods_running(LAUNCHER, w(0), w(1)))
        await eventually(lambda: env.status(JOB).get("phase") == "Running")
        env.apply(example("scale-out.yaml"))
        done = await scaled_out_and_refused(env, "elastic-training-scaleout")
        assert not done.get("addPods")
        # The job is untouched: same workers, same ConfigMap, still running.
        assert env.status(JOB)["targetWorkers"] == [w(0), w(1)]
        assert w(2) not in env.phases()
        config = env.get(CONFIGMAPS, config_name(JOB))
        assert config is not None
        assert config["data"]["hostfile"] == hosts(0, 1)
        await eventually(lambda: env.status(JOB).get("phase") == "Running")
        assert env.condition(JOB, "Failed") is None

        # kubectl scale goes the same way: the scaler made for it fails, the job keeps running.
        await env.client.patch(
            TRAININGJOBS, JOB, {"spec": {"replicas": 3}}, namespace=NS, subresource="scale"
        )
        generation = objects.generation(env.stored(JOB))
        await scaled_out_and_refused(env, f"{JOB}-replicas-{generation}")
        assert env.status(JOB)["targetWorkers"] == [w(0), w(1)]
        await eventually(lambda: env.status(JOB).get("phase") == "Running")


async def test_the_schema_refuses_more_workers_than_any_job_can_hold(tmp_path: Path) -> None:
    async with cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        refused = example("training-job.yaml", replicas=MAX_WORKERS + 1)
        del refused["spec"]["etReplicaSpecs"]["worker"]["maxReplicas"]
        with pytest.raises(Invalid) as raised:
            env.apply(refused)
        assert f"should be less than or equal to {MAX_WORKERS}" in str(raised.value)
        assert env.get(PODS, w(0)) is None


def test_the_first_membership_is_measured_even_when_its_targets_are_written_first() -> None:
    # The scaling controller may write the initial targets before the job controller's first
    # look at the job: the targets are measured then, until the job has run.
    document = example("training-job.yaml", replicas=3)
    document["status"] = {"targetWorkers": [w(0), w(1), w(2)]}
    job = TrainingJob.model_validate(document)
    (problem,) = plugin().validate(job)
    assert problem.startswith("spec.etReplicaSpecs.worker.replicas: 3 workers need")
    document["status"]["conditions"] = [
        {"type": "Running", "status": "True", "reason": "TrainingJobRunning"}
    ]
    assert plugin().validate(TrainingJob.model_validate(document)) == []
