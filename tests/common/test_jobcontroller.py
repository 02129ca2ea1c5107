"""The JobController reconcile, driven step by step against the embedded API server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from etctl.errors import ServerError
from etctl.runtime import CONFIGMAPS, SERVICES, objects
from etctl.runtime._reconcile import STOPPING
from etctl.testing import Fault
from tests.common._harness import harness, simplejob
from tests.common._plugins import (
    PHASEDJOBS,
    DeadlineGatePlugin,
    PhasedPlugin,
    RecordedGatePlugin,
    RestartingPlugin,
)
from tests.common.simplejob import SIMPLEJOBS


async def test_first_reconcile_creates_workers_configmap_and_service(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        job = await h.submit(simplejob("train", workers=2, leader=True))
        result = await h.step("train")
        assert result.requeue_after is None
        pods = await h.pods()
        assert sorted(pods) == ["train-worker-0", "train-worker-1"]
        pod = pods["train-worker-1"]
        assert pod["metadata"]["labels"] == {
            "training.kubeflow.org/operator-name": "etctl",
            "training.kubeflow.org/job-name": "train",
            "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": "1",
        }
        (owner,) = pod["metadata"]["ownerReferences"]
        assert owner == {
            "apiVersion": "example.etctl.io/v1",
            "kind": "SimpleJob",
            "name": "train",
            "uid": objects.uid(job),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert pod["spec"]["restartPolicy"] == "Never"
        env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        assert env["SIMPLEJOB_PEERS"] == "train-worker-0,train-worker-1,train-leader-0"
        configmap = (await h.objects_of(CONFIGMAPS))["train-peers"]
        assert configmap["data"] == {"peers": "train-worker-0\ntrain-worker-1\ntrain-leader-0\n"}
        services = await h.objects_of(SERVICES)
        assert sorted(services) == ["train-leader-0"]
        conditions = await h.conditions("train")
        assert conditions["Created"] == ("True", "SimpleJobCreated")
        assert conditions["LeaderCreated"] == ("False", "WaitingForWorkers")
        status = (await h.job("train"))["status"]
        assert status["startTime"] == "2026-01-01T00:00:00Z"
        # The new pods are Pending: kubeflow counts only Running pods as active.
        assert status["replicaStatuses"]["Worker"].get("active", 0) == 0
        assert [e["reason"] for e in await h.events("SuccessfulCreatePod")] == [
            "SuccessfulCreatePod"
        ] * 2
        assert pod["metadata"]["namespace"] == h.ns


async def test_a_job_runs_to_success_leader_after_workers(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, leader=True))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running")
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        assert (await h.conditions("train"))["LeaderCreated"] == ("False", "WaitingForWorkers")
        await h.set_phase("train-worker-1", "Running")
        await h.step("train")
        assert sorted(await h.pods()) == ["train-leader-0", "train-worker-0", "train-worker-1"]
        conditions = await h.conditions("train")
        assert conditions["LeaderCreated"] == ("True", "PodsCreated")
        assert conditions["Running"] == ("True", "SimpleJobRunning")
        for name in ("train-worker-0", "train-worker-1", "train-leader-0"):
            await h.set_phase(name, "Succeeded", exit_code=0)
        await h.clock.advance(42)
        await h.step("train")
        job = await h.job("train")
        conditions = await h.conditions("train")
        assert conditions["Succeeded"] == ("True", "SimpleJobSucceeded")
        assert conditions["Running"][0] == "False"
        assert job["status"]["completionTime"] == "2026-01-01T00:00:42Z"
        assert job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 2
        assert [e["type"] for e in await h.events("SimpleJobSucceeded")] == ["Normal"]
        # Nothing changes any more: no write, no event.
        before = job["metadata"]["resourceVersion"]
        await h.step("train")
        assert (await h.job("train"))["metadata"]["resourceVersion"] == before


async def test_a_stale_cache_does_not_double_create(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=3))
        await h.step("train")
        # The cache has not seen the three pods: expectations hold the next reconciles back.
        result = await h.step("train", refresh=False)
        assert result.requeue_after is not None
        assert 0 < result.requeue_after <= 300
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1", "train-worker-2"]
        await h.step("train")
        assert len(await h.pods()) == 3
        assert len(await h.events("SuccessfulCreatePod")) == 3


async def test_an_invalid_job_fails_with_an_event_and_no_retry(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        body = simplejob("broken", workers=1)
        body["spec"]["replicaSpecs"]["Leader"] = body["spec"]["replicaSpecs"]["Worker"] | {
            "replicas": 3
        }
        await h.submit(body)
        result = await h.step("broken")
        assert result.requeue_after is None
        conditions = await h.conditions("broken")
        assert conditions["Failed"] == ("True", "SimpleJobInvalid")
        (event,) = await h.events("SimpleJobInvalid")
        assert event["type"] == "Warning"
        assert "spec.replicaSpecs.Leader.replicas: 3 is above 1" in event["message"]
        assert await h.pods() == {}
        # The controller keeps working on other jobs.
        await h.submit(simplejob("fine", workers=1))
        await h.step("fine")
        assert sorted(await h.pods()) == ["fine-worker-0"]


async def test_exit_code_restarts_a_retryable_failure_and_fails_on_a_permanent_one(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, restart="ExitCode"))
        await h.step("train")
        old_uid = objects.uid((await h.pods())["train-worker-1"])
        await h.set_phase("train-worker-0", "Running")
        await h.set_phase("train-worker-1", "Failed", exit_code=137)
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0"]
        status = (await h.job("train"))["status"]
        assert status["restartCount"] == 1
        assert (await h.conditions("train"))["Restarting"] == ("True", "SimpleJobRestarting")
        (event,) = await h.events("SimpleJobRestarting")
        assert "train-worker-1" in event["message"]
        assert "exit code 137" in event["message"]
        await h.step("train")
        pods = await h.pods()
        assert sorted(pods) == ["train-worker-0", "train-worker-1"]
        assert objects.uid(pods["train-worker-1"]) != old_uid
        await h.set_phase("train-worker-1", "Running")
        await h.step("train")
        assert (await h.conditions("train"))["Running"] == ("True", "SimpleJobRunning")
        await h.set_phase("train-worker-0", "Failed", exit_code=3)
        await h.step("train")
        conditions = await h.conditions("train")
        assert conditions["Failed"] == ("True", "SimpleJobFailed")
        (failed,) = await h.events("SimpleJobFailed")
        assert "exited with code 3" in failed["message"]
        assert (await h.job("train"))["status"]["restartCount"] == 1


async def test_backoff_limit_counts_recreations_and_fails_the_job(tmp_path: Path) -> None:
    policy = {"backoffLimit": 1, "cleanPodPolicy": "None"}
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, restart="OnFailure", run_policy=policy))
        await h.step("train")
        await h.set_phase("train-worker-0", "Failed", exit_code=1)
        await h.step("train")
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        assert (await h.job("train"))["status"]["restartCount"] == 1
        await h.set_phase("train-worker-1", "Failed", exit_code=1)
        await h.step("train")
        conditions = await h.conditions("train")
        assert conditions["Failed"] == ("True", "BackoffLimitExceeded")
        # A job failed by its limits loses every pod and service, whatever cleanPodPolicy says.
        assert await h.pods() == {}
        (event,) = await h.events("BackoffLimitExceeded")
        assert event["type"] == "Warning"


async def test_in_place_restarts_count_against_the_backoff_limit(tmp_path: Path) -> None:
    policy = {"backoffLimit": 2}
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, restart="OnFailure", run_policy=policy))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running", restarts=2)
        await h.step("train")
        assert "Failed" not in await h.conditions("train")
        await h.set_phase("train-worker-0", "Running", restarts=3)
        await h.step("train")
        assert (await h.conditions("train"))["Failed"] == ("True", "BackoffLimitExceeded")


async def test_active_deadline_fires_from_its_own_timer(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, run_policy={"activeDeadlineSeconds": 60}))
        result = await h.step("train")
        assert result.requeue_after == 60
        await h.set_phase("train-worker-0", "Running")
        await h.clock.advance(45)
        assert (await h.step("train")).requeue_after == 15
        await h.clock.advance(15)
        await h.step("train")
        assert (await h.conditions("train"))["Failed"] == ("True", "DeadlineExceeded")
        assert await h.pods() == {}


async def test_ttl_deletes_the_finished_job(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, run_policy={"ttlSecondsAfterFinished": 30}))
        await h.step("train")
        await h.set_phase("train-worker-0", "Succeeded", exit_code=0)
        await h.step("train")
        assert (await h.conditions("train"))["Succeeded"][0] == "True"
        assert (await h.step("train")).requeue_after == 30
        await h.clock.advance(30)
        assert (await h.step("train")).requeue_after is None
        assert "train" not in await h.objects_of(SIMPLEJOBS)
        await h.step("train")  # gone: forgotten quietly


async def test_whole_job_restarts_within_the_backoff_limit(tmp_path: Path) -> None:
    policy = {"backoffLimit": 2}
    async with harness(tmp_path, plugin=RestartingPlugin()) as h:
        await h.submit(simplejob("train", workers=2, run_policy=policy))
        for attempt in (1, 2):
            await h.step("train")
            assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
            await h.set_phase("train-worker-1", "Failed", exit_code=1)
            await h.step("train")
            assert await h.pods() == {}
            job = await h.job("train")
            assert job["status"]["restartCount"] == attempt
            assert (await h.conditions("train"))["Restarting"] == ("True", "SimpleJobRestarting")
            assert "Failed" not in await h.conditions("train")
        await h.step("train")
        await h.set_phase("train-worker-0", "Failed", exit_code=1)
        await h.step("train")
        assert (await h.conditions("train"))["Failed"] == ("True", "BackoffLimitExceeded")
        assert len(await h.events("SimpleJobRestarting")) == 2


@pytest.mark.etctl_hooks(
    "the server's clock: the gate's deadline counts from the creation time it stamps"
)
async def test_a_gate_past_its_deadline_fails_the_job(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=DeadlineGatePlugin()) as h:
        await h.submit(simplejob("train", workers=1, leader=True))
        assert (await h.step("train")).requeue_after == 30
        await h.clock.advance(10)
        assert (await h.step("train")).requeue_after == 20
        assert (await h.conditions("train"))["LeaderCreated"] == ("False", "LeaderNeverReady")
        await h.clock.advance(20)
        await h.step("train")
        assert (await h.conditions("train"))["Failed"] == ("True", "LeaderNeverReady")
        assert sorted(await h.pods()) == ["train-worker-0"]


async def test_a_recorded_gate_is_reported_though_it_was_never_seen_closed(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, plugin=RecordedGatePlugin()) as h:
        await h.submit(simplejob("train", workers=1, leader=True))
        await h.step("train")
        assert sorted(await h.pods()) == ["train-leader-0", "train-worker-0"]
        conditions = await h.conditions("train")
        assert conditions["LeaderCreated"] == ("True", "PodsCreated")
        assert "WorkerCreated" not in conditions  # not recorded: never gated


async def test_pods_created_before_a_lost_status_write_get_their_condition_next_round(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, leader=True))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running")
        before = (await h.job("train"))["status"]["conditions"]
        await h.step("train")
        assert "train-leader-0" in await h.pods()
        # The process died after creating the leader: its status write never happened.
        await h.client.patch_status(
            SIMPLEJOBS, "train", {"status": {"conditions": before}}, namespace=h.ns
        )
        assert (await h.conditions("train"))["LeaderCreated"] == ("False", "WaitingForWorkers")
        await h.step("train")
        assert (await h.conditions("train"))["LeaderCreated"] == ("True", "PodsCreated")


async def test_planned_replicas_and_extended_status(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=PhasedPlugin()) as h:
        body = simplejob("train", workers=2)
        body["kind"] = "PhasedJob"
        body["metadata"]["annotations"] = {"members": "3,5"}
        await h.submit(body, PHASEDJOBS)
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-3", "train-worker-5"]
        job = await h.client.get(PHASEDJOBS, "train", namespace=h.ns)
        assert job["status"]["members"] == ["train-worker-3", "train-worker-5"]
        assert job["status"]["phase"] == "Created"
        for name in await h.pods():
            await h.set_phase(name, "Running")
        await h.step("train")
        job = await h.client.get(PHASEDJOBS, "train", namespace=h.ns)
        assert job["status"]["phase"] == "Running"
        job["metadata"]["annotations"] = {"members": "5,6"}
        await h.client.replace(PHASEDJOBS, job)
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-5", "train-worker-6"]
        job = await h.client.get(PHASEDJOBS, "train", namespace=h.ns)
        assert job["status"]["members"] == ["train-worker-5", "train-worker-6"]


async def test_a_create_the_stop_cut_short_is_not_recorded_as_done(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, leader=True))
        await h.step("train")
        for name in ("train-worker-0", "train-worker-1"):
            await h.set_phase(name, "Running")
        # The workers run, so the leader's gate opens: but the controller is stopping, and no
        # further create starts. Nothing may say the leader was created.
        stopping = asyncio.Event()
        stopping.set()
        token = STOPPING.set(stopping)
        try:
            await h.step("train")
        finally:
            STOPPING.reset(token)
        assert "train-leader-0" not in await h.pods()
        assert (await h.conditions("train"))["LeaderCreated"] == ("False", "WaitingForWorkers")
        # The next run creates it, and records it from the pod the create returned.
        await h.step("train")
        assert "train-leader-0" in await h.pods()
        leader = (await h.pods())["train-leader-0"]
        created = {c["type"]: c for c in (await h.job("train"))["status"]["conditions"]}
        assert created["LeaderCreated"]["reason"] == "PodsCreated"
        assert objects.uid(leader) in created["LeaderCreated"]["message"]


@pytest.mark.etctl_hooks("fault injection: a refused leader create")
async def test_a_create_the_server_refused_is_not_recorded_as_done(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, leader=True))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running")
        refused = h.server.inject(
            Fault(
                verb="create",
                resource="pods",
                body_contains="train-leader-0",
                status=500,
                times=None,
            )
        )
        with pytest.raises(ServerError):
            await h.step("train")
        assert refused.fired >= 1
        assert "train-leader-0" not in await h.pods()
        assert (await h.conditions("train"))["LeaderCreated"] == ("False", "WaitingForWorkers")


@pytest.mark.etctl_hooks("fault injection: a status write committed and its answer dropped")
async def test_a_restart_whose_status_answer_was_lost_is_counted_once(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, restart="OnFailure"))
        await h.step("train")
        await h.set_phase("train-worker-0", "Failed", exit_code=1)
        # The status write recording the restart is committed; its answer is lost, so the
        # client's retry meets that very write as a failed guard (the conditions it tests are
        # the ones it wrote over).
        lost = h.server.inject(
            Fault(
                verb="patch",
                resource="simplejobs",
                subresource="status",
                body_contains='"/status/restartCount","value":1',
                drop_answer=True,
            )
        )
        await h.step("train")
        assert lost.fired == 1
        assert (await h.job("train"))["status"]["restartCount"] == 1
        await h.step("train")
        assert (await h.job("train"))["status"]["restartCount"] == 1
