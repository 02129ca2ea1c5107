"""Where etctl's PyTorchJob does better than training-operator's, each shown end to end.

* the rendezvous endpoint does not die with worker-0: the job-level Service moves to a running
  member, which resolves the name to itself (training-operator: ``<job>-worker-0``, #2041);
* a worker Pending after a scale-out shows in status and does not leave the job stuck (#1751);
* ``maxRestarts`` is counted across replaced workers and survives an operator restart;
* suspension keeps the members' names, and a job managed by another controller is left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEOUTS
from etctl.jobs.pytorchjob import PYTORCHJOBS, PyTorchJobPlugin
from etctl.runtime import SERVICES
from etctl.testing import Behaviour, PodPolicy, eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.pytorchjob._manifests import ECHO, NS, echo, environment, resolves, worker

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet evicts members, keeps one Pending and answers DNS, in virtual time"
)

JOB = ECHO
RDZV = f"{JOB}-rdzv"


def w(index: int) -> str:
    return worker(JOB, index)


async def started(env: Cluster, document: dict[str, Any], count: int = 2) -> None:
    env.apply(document)
    await eventually(lambda: env.pods_running(*(w(i) for i in range(count))))
    await eventually(lambda: env.status(JOB).get("currentWorkers") == [w(i) for i in range(count)])


def ip(env: Cluster, pod: str) -> str:
    return str(env.pod(pod)["status"]["podIP"])


async def test_the_rendezvous_moves_to_a_running_member_when_its_host_is_evicted(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, echo(minReplicas=2, maxReplicas=3), count=2)
        assert await resolves(env, w(1), RDZV) == ip(env, w(0))
        env.kubelet.evict(NS, w(0))
        # The lowest running member hosts it now, without waiting for the replacement.
        await eventually(lambda: env.status(JOB).get("rendezvousHost") == w(1))
        assert await resolves(env, w(1), RDZV) == ip(env, w(1))  # the host resolves itself
        await eventually(lambda: env.pods_running(w(2)))
        assert await resolves(env, w(2), RDZV) == ip(env, w(1))  # and its replacement finds it
        service = env.get(SERVICES, RDZV)
        assert service is not None
        assert service["spec"]["selector"]["training.kubeflow.org/replica-index"] == "1"
        await eventually(lambda: w(0) not in env.phases())
        status = env.status(JOB)
        assert status["targetWorkers"] == [w(2), w(1)]
        assert status["workerReplacements"] == 1
        (event,) = env.events("PyTorchJobWorkerFailed")
        assert event["message"] == f"worker {w(0)} of PyTorchJob {JOB} failed; replaced by {w(2)}"
        assert (await environment(env, w(2)))["PET_MAX_RESTARTS"] == "99"
        # The host stays where it is while it lives: worker-2 does not take it back.
        await eventually(lambda: env.phase(JOB) == "Running")
        assert env.status(JOB)["rendezvousHost"] == w(1)


async def test_a_worker_pending_after_a_scale_out_shows_and_does_not_leave_the_job_stuck(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        env.kubelet.add_policy(PodPolicy(name=w(2), does=Behaviour(stay_pending=True)))
        await started(env, echo(minReplicas=1, maxReplicas=3))
        await env.scale(JOB, 3)
        await eventually(lambda: env.status(JOB).get("pendingWorkers") == [w(2)])
        assert env.phase(JOB) in ("Running", "Scaling")
        assert env.status(JOB)["currentWorkers"] == [w(0), w(1)]
        # The scale-out gives up after its timeout: the Pending worker goes, the job runs on.
        await wait_idle(env.server, manager)
        await env.advance_idle(61, manager)
        await eventually(lambda: w(2) not in env.phases())
        await eventually(lambda: env.status(JOB).get("pendingWorkers") == [])
        (scaler,) = env.scalers(SCALEOUTS).values()
        assert scaler["status"]["conditions"][-1]["type"] == "ScaleFailed"
        status = env.status(JOB)
        assert status["targetWorkers"] == status["currentWorkers"] == [w(0), w(1)]
        await eventually(lambda: env.phase(JOB) == "Running")
        assert env.pods_running(w(0), w(1))


async def test_max_restarts_is_counted_across_replacements_and_an_operator_restart(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        async with env.operating():
            await started(env, echo(minReplicas=1, maxReplicas=2, maxRestarts=2))
            assert (await environment(env, w(1)))["PET_MAX_RESTARTS"] == "2"
            env.kubelet.evict(NS, w(1))
            await eventually(lambda: env.pods_running(w(2)))
            assert env.status(JOB)["workerReplacements"] == 1
            assert (await environment(env, w(2)))["PET_MAX_RESTARTS"] == "1"
        # Another operator process reads the count from the job's status.
        async with env.operating():
            env.kubelet.evict(NS, w(2))
            await eventually(lambda: env.pods_running(w(3)))
            assert env.status(JOB)["workerReplacements"] == 2
            assert (await environment(env, w(3)))["PET_MAX_RESTARTS"] == "0"
            env.kubelet.evict(NS, w(3))
            await eventually(lambda: env.phase(JOB) == "Failed")
            reason = env.condition(JOB, "Failed")
            assert reason is not None
            assert reason[1] == "PyTorchJobMaxRestartsExceeded"
            await eventually(lambda: env.events("PyTorchJobMaxRestartsExceeded"))
            (event,) = env.events("PyTorchJobMaxRestartsExceeded")
            assert event["message"] == (
                f"PyTorchJob {JOB} failed: its workers were replaced 3 times, more than "
                "elasticPolicy.maxRestarts 2"
            )


async def test_suspension_keeps_the_members_names_and_resumes_them(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, echo())
        suspend = {"spec": {"runPolicy": {"suspend": True}}}
        await env.client.patch(PYTORCHJOBS, JOB, suspend, namespace=NS)
        await eventually(lambda: not [n for n in env.phases() if n.startswith(JOB)])
        await eventually(lambda: env.phase(JOB) == "Suspended")
        assert env.get(SERVICES, RDZV) is not None  # kept while suspended
        resume = {"spec": {"runPolicy": {"suspend": False}}}
        await env.client.patch(PYTORCHJOBS, JOB, resume, namespace=NS)
        await eventually(lambda: env.pods_running(w(0), w(1)))
        await eventually(lambda: env.phase(JOB) == "Running")
        status = env.status(JOB)
        assert status["targetWorkers"] == [w(0), w(1)]
        assert status.get("workerReplacements") is None
        assert env.events("PyTorchJobWorkerFailed") == []


async def test_a_job_managed_by_another_controller_is_left_alone(tmp_path: Path) -> None:
    document = echo()
    document["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        env.apply(document)
        await wait_idle(env.server, manager)
        assert env.phases() == {}
        assert env.services() == {}
        assert "status" not in env.stored(JOB) or not env.status(JOB).get("conditions")
        # training-operator's own value is etctl's to run.
        other = echo()
        other["metadata"]["name"] = "mine"
        other["spec"]["runPolicy"] = {"managedBy": "kubeflow.org/training-operator"}
        env.apply(other)
        await eventually(lambda: env.pods_running(worker("mine", 0), worker("mine", 1)))
