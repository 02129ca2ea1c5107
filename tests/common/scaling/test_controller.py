"""The scaling controller on the embedded API server; the test plays the job's pods.

Scripts need the simulated kubelet's exec and are tested end to end with the TrainingJob plugin
(tests/jobs/trainingjob).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS, JobSettings
from etctl.common._scaling.adoption import SELECTOR_INDEX, selector_index
from etctl.common._scaling.controller import ScalingController
from etctl.common._scaling.metrics import SCALE_OPERATIONS
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import PODS, Request
from etctl.runtime._reconcile import STOPPING
from etctl.runtime._recorder import ClientEventSink, EventRecorder
from etctl.testing import Fault, eventually
from tests._logs import captured_logs
from tests.common._snapshot import SnapshotCache
from tests.common.scaling._env import Env, controllers, scaling_env

W = "tj-worker-"


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in status.get("conditions", [])}


def finished(env: Env, res: Any, name: str) -> bool:
    """The scaler is done and its job no longer names it (the job is written last)."""
    done = env.scaler_status(res, name).get("step") == "Done"
    return done and env.status().get("currentScaler") != f"{res.kind}:{env.ns}/{name}"


async def running_job(env: Env, replicas: int = 2, **worker: Any) -> None:
    """A job whose workers and launcher run, with the hostfile delivered."""
    env.create_job(replicas=replicas, **worker)
    await eventually(lambda: len(env.status().get("targetWorkers", [])) == replicas)
    env.follow_targets()
    await eventually(lambda: len(env.status().get("currentWorkers", [])) == replicas)
    env.launcher()
    env.deliver()


async def test_a_new_job_gets_its_membership(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job(replicas=3, maxReplicas=2)
        await eventually(lambda: "targetWorkers" in env.status())
        status = env.status()
        assert status["targetWorkers"] == [f"{W}0", f"{W}1"]  # clamped to maxReplicas
        assert status["lastWorkerIndex"] == 1
        assert status.get("currentWorkers", []) == []
        env.follow_targets(phase="Pending")
        env.set_phase(f"{W}1", "Running")
        await eventually(lambda: env.status().get("currentWorkers") == [f"{W}1"])


def _member_writes(env: Env) -> int:
    """The job status writes the server answered 2xx (one per change of the members here)."""
    server = env.cluster.target.server
    assert server is not None
    found = server.requests.find(verb="patch", resource=TRAININGJOBS.plural, subresource="status")
    return sum(1 for record in found if record.code < 300)


@pytest.mark.etctl_hooks("the server's request log, which counts the status writes")
async def test_workers_that_start_together_join_the_members_together(tmp_path: Path) -> None:
    async with scaling_env(tmp_path, settings=JobSettings(member_batch=2.0)) as env:
        env.create_job(replicas=4)
        await eventually(lambda: len(env.status().get("targetWorkers", [])) == 4)
        env.follow_targets(phase="Pending")
        await env.idle()
        before = _member_writes(env)
        for index in range(3):  # three workers start one by one, within the batch period
            env.set_phase(f"{W}{index}", "Running")
            await env.idle()
            await env.clock.advance(0.5)
        await env.idle()
        assert env.status().get("currentWorkers", []) == []  # the changes still gather
        await env.clock.advance(0.5)  # the first change's period ends
        three = [f"{W}0", f"{W}1", f"{W}2"]
        await eventually(lambda: env.status().get("currentWorkers") == three)
        await env.idle()
        assert _member_writes(env) == before + 1
        # A later start is a batch of its own: looked at once its period ends.
        env.set_phase(f"{W}3", "Running")
        await env.idle()
        await env.clock.advance(1.9)
        await env.idle()
        assert env.status()["currentWorkers"] == three
        await env.clock.advance(0.1)
        await eventually(lambda: env.status()["currentWorkers"] == [*three, f"{W}3"])
        await env.idle()
        assert _member_writes(env) == before + 2


async def test_without_a_batch_each_start_changes_the_members(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job(replicas=3)
        await eventually(lambda: len(env.status().get("targetWorkers", [])) == 3)
        env.follow_targets(phase="Pending")
        for index in range(3):
            env.set_phase(f"{W}{index}", "Running")
            expected = [f"{W}{i}" for i in range(index + 1)]

            def joined(expected: list[str] = expected) -> bool:
                return bool(env.status().get("currentWorkers") == expected)

            await eventually(joined)


async def test_scale_out_runs_step_by_step(tmp_path: Path) -> None:
    before = SCALE_OPERATIONS.labels(
        kind="TrainingJob", direction="out", result="succeeded"
    )._value.get()
    async with scaling_env(tmp_path) as env:
        await running_job(env)
        env.create_scaler(SCALEOUTS, "more", {"selector": {"name": "tj"}, "toAdd": {"count": 2}})
        await eventually(lambda: env.scaler_status(SCALEOUTS, "more").get("step") == "Creating")
        assert env.scaler_status(SCALEOUTS, "more")["addPods"] == [f"{W}2", f"{W}3"]
        # The decision is written first, then the job's targets.
        await eventually(lambda: len(env.status()["targetWorkers"]) == 4)
        status = env.status()
        assert status["currentScaler"] == f"ScaleOut:{env.ns}/more"
        # The job's conditions and phase are the job controller's (it renders Scaling from the
        # scaler field): the scaling controller writes none of them.
        assert "conditions" not in status
        assert "phase" not in status
        assert env.events("ScalingStart")
        assert status["targetWorkers"] == [f"{W}0", f"{W}1", f"{W}2", f"{W}3"]
        assert status["lastWorkerIndex"] == 3
        # Running but not admitted: the hostfile waits for the whole scale-out.
        env.follow_targets(phase="Pending")
        env.set_phase(f"{W}2", "Running")
        await eventually(lambda: env.pods().get(f"{W}2") == "Running")
        assert env.status()["currentWorkers"] == [f"{W}0", f"{W}1"]
        env.set_phase(f"{W}3", "Running")
        await eventually(lambda: env.scaler_status(SCALEOUTS, "more").get("step") == "Joining")
        await eventually(lambda: len(env.status()["currentWorkers"]) == 4)
        env.deliver()
        await eventually(lambda: finished(env, SCALEOUTS, "more"))
        scaler = env.scaler_status(SCALEOUTS, "more")
        assert conditions(scaler)["ScaleSucceeded"] == ("True", "ScalingOutSucceeded")
        assert scaler["phase"] == "ScaleSucceeded"
        job = env.job()
        assert job["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 4
        status = job["status"]
        assert status.get("currentScaler") is None
        assert "conditions" not in status
        await eventually(lambda: bool(env.events("ScalingOutSucceeded")))
    after = SCALE_OPERATIONS.labels(
        kind="TrainingJob", direction="out", result="succeeded"
    )._value.get()
    assert after == before + 1


async def test_scale_out_times_out_and_rolls_back(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env)
        spec = {"selector": {"name": "tj"}, "toAdd": {"count": 1}, "timeout": 30}
        env.create_scaler(SCALEOUTS, "slow", spec)
        await eventually(lambda: len(env.status()["targetWorkers"]) == 3)
        env.follow_targets(phase="Pending")
        await env.idle()
        await env.clock.advance(29)
        await env.idle()
        assert env.scaler_status(SCALEOUTS, "slow")["step"] == "Creating"
        await env.clock.advance(1)
        await eventually(lambda: env.scaler_status(SCALEOUTS, "slow").get("step") == "RollingBack")
        await eventually(lambda: env.status()["targetWorkers"] == [f"{W}0", f"{W}1"])
        env.follow_targets()  # the job controller deletes the rolled back worker
        await eventually(lambda: finished(env, SCALEOUTS, "slow"))
        failed = env.scaler_status(SCALEOUTS, "slow")
        assert conditions(failed)["ScaleFailed"] == ("True", "ScaleOutTimeout")
        await eventually(lambda: bool(env.events("ScalingOutFailed")))
        # The index is never used again.
        assert env.status()["lastWorkerIndex"] == 2


async def test_scale_in_by_count_drains_before_deleting(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env, replicas=3)
        env.set_phase(f"{W}0", "Failed")
        await eventually(lambda: env.status()["currentWorkers"] == [f"{W}1", f"{W}2"])
        env.deliver()
        env.create_scaler(SCALEINS, "less", {"selector": {"name": "tj"}, "toDelete": {"count": 2}})
        await eventually(lambda: env.scaler_status(SCALEINS, "less").get("step") == "Draining")
        # Failed first, then the highest index.
        assert env.scaler_status(SCALEINS, "less")["toDeletePods"] == [f"{W}0", f"{W}2"]
        await eventually(lambda: env.status()["currentWorkers"] == [f"{W}1"])
        assert f"{W}2" in env.status()["targetWorkers"]  # still a target: not delivered yet
        env.deliver()
        await eventually(lambda: env.scaler_status(SCALEINS, "less").get("step") == "Deleting")
        await eventually(lambda: env.status()["targetWorkers"] == [f"{W}1"])
        env.follow_targets()
        await eventually(lambda: finished(env, SCALEINS, "less"))
        assert conditions(env.scaler_status(SCALEINS, "less"))["ScaleSucceeded"][1] == (
            "ScalingInSucceeded"
        )
        assert env.job()["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 1


async def test_scale_in_naming_another_jobs_pod_is_rejected(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env)
        spec = {"selector": {"name": "tj"}, "toDelete": {"podNames": ["other-worker-0"]}}
        env.create_scaler(SCALEINS, "wrong", spec)
        await eventually(lambda: finished(env, SCALEINS, "wrong"))
        status = env.scaler_status(SCALEINS, "wrong")
        failed = next(c for c in status["conditions"] if c["type"] == "ScaleFailed")
        assert failed["reason"] == "UnknownWorkers"
        assert failed["message"].startswith("other-worker-0 is not a worker of TrainingJob tj")
        assert env.status()["targetWorkers"] == [f"{W}0", f"{W}1"]


async def test_bounds_are_enforced(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env, minReplicas=2, maxReplicas=3)
        env.create_scaler(SCALEOUTS, "big", {"selector": {"name": "tj"}, "toAdd": {"count": 2}})
        await eventually(lambda: finished(env, SCALEOUTS, "big"))
        env.create_scaler(SCALEINS, "small", {"selector": {"name": "tj"}, "toDelete": {"count": 1}})
        await eventually(lambda: finished(env, SCALEINS, "small"))
        big = conditions(env.scaler_status(SCALEOUTS, "big"))["ScaleFailed"]
        small = conditions(env.scaler_status(SCALEINS, "small"))["ScaleFailed"]
        assert (big, small) == (("True", "MaxReplicasExceeded"), ("True", "MinReplicasExceeded"))
        assert env.status()["targetWorkers"] == [f"{W}0", f"{W}1"]


@pytest.mark.etctl_hooks("the server's clock, which stamps the scalers' creation times")
async def test_scalers_run_one_at_a_time_oldest_first(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job(replicas=2)
        # Both arrive before the job can scale: the older one must run first (et-operator ran
        # the newest).
        env.create_scaler(SCALEOUTS, "older", {"selector": {"name": "tj"}, "toAdd": {"count": 1}})
        await env.idle()
        await env.clock.advance(1)
        env.create_scaler(SCALEINS, "newer", {"selector": {"name": "tj"}, "toDelete": {"count": 1}})
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEINS, "newer")))
        await eventually(lambda: len(env.status().get("targetWorkers", [])) == 2)
        env.follow_targets()
        await eventually(lambda: len(env.status().get("currentWorkers", [])) == 2)
        env.launcher()
        env.deliver()
        await eventually(lambda: len(env.status()["targetWorkers"]) == 3)
        assert env.scaler_status(SCALEOUTS, "older")["step"] == "Creating"
        assert "step" not in env.scaler_status(SCALEINS, "newer")  # waits its turn
        env.follow_targets()
        await eventually(lambda: len(env.status()["currentWorkers"]) == 3)
        env.deliver()
        await eventually(lambda: finished(env, SCALEOUTS, "older"))
        await eventually(lambda: env.status().get("currentScaler") == f"ScaleIn:{env.ns}/newer")
        await eventually(lambda: len(env.status()["currentWorkers"]) == 2)
        env.deliver()
        await eventually(lambda: len(env.status()["targetWorkers"]) == 2)
        env.follow_targets()
        await eventually(lambda: finished(env, SCALEINS, "newer"))
        assert env.status()["targetWorkers"] == [f"{W}0", f"{W}1"]
        assert env.scaler_status(SCALEINS, "newer")["toDeletePods"] == [f"{W}2"]


@pytest.mark.etctl_hooks("the server's clock, which stamps the creation times compared")
async def test_scalers_of_one_second_run_in_the_order_they_were_created(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job(replicas=2)
        # Same second, names against the order of creation: "zz-first" was created first.
        env.create_scaler(
            SCALEOUTS, "zz-first", {"selector": {"name": "tj"}, "toAdd": {"count": 1}}
        )
        env.create_scaler(
            SCALEINS, "aa-second", {"selector": {"name": "tj"}, "toDelete": {"count": 1}}
        )
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEINS, "aa-second")))
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEOUTS, "zz-first")))
        first = env.scaler(SCALEOUTS, "zz-first")
        second = env.scaler(SCALEINS, "aa-second")
        assert first["metadata"]["creationTimestamp"] == second["metadata"]["creationTimestamp"]
        assert int(first["status"]["queuedResourceVersion"]) < int(
            second["status"]["queuedResourceVersion"]
        )
        await eventually(lambda: len(env.status().get("targetWorkers", [])) == 2)
        env.follow_targets()
        await eventually(lambda: len(env.status().get("currentWorkers", [])) == 2)
        env.launcher()
        env.deliver()
        await eventually(lambda: env.status().get("currentScaler") is not None)
        assert env.status()["currentScaler"] == f"ScaleOut:{env.ns}/zz-first"
        assert "step" not in env.scaler_status(SCALEINS, "aa-second")  # waits its turn


async def test_an_operator_restart_does_not_repeat_a_step(tmp_path: Path) -> None:
    async with scaling_env(tmp_path, run=False) as env:
        async with controllers(env):
            await running_job(env)
            env.create_scaler(
                SCALEOUTS, "more", {"selector": {"name": "tj"}, "toAdd": {"count": 1}}
            )
            await eventually(lambda: env.scaler_status(SCALEOUTS, "more").get("step") == "Creating")
        decided = env.scaler_status(SCALEOUTS, "more")
        async with controllers(env):
            # The decision was written first; whether the targets were too when the operator
            # stopped, the new one finds them, and nothing is chosen again.
            await eventually(lambda: len(env.status()["targetWorkers"]) == 3)
            job = env.status()
            env.follow_targets()
            await eventually(lambda: len(env.status()["currentWorkers"]) == 3)
            resumed = env.scaler_status(SCALEOUTS, "more")
            assert resumed["step"] == "Joining"
            assert resumed["addPods"] == decided["addPods"] == [f"{W}2"]
            assert env.status()["lastWorkerIndex"] == job["lastWorkerIndex"] == 2
            assert env.status()["targetWorkers"] == job["targetWorkers"]
            env.deliver()
            await eventually(lambda: finished(env, SCALEOUTS, "more"))
        starts = [
            c for c in env.scaler_status(SCALEOUTS, "more")["conditions"] if c["type"] == "Scaling"
        ]
        assert len(starts) == 1


async def test_replicas_drive_scalers_through_the_scale_subresource(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env, maxReplicas=4)
        scale = await env.cluster.client.get_subresource(
            TRAININGJOBS, "tj", "scale", namespace=env.ns
        )
        assert scale["spec"]["replicas"] == 2
        job = env.job()
        job["spec"]["etReplicaSpecs"]["worker"]["replicas"] = 3
        env.storage.update(TRAININGJOBS, job, namespace=env.ns)
        generation = env.job()["metadata"]["generation"]
        name = f"tj-replicas-{generation}"
        await eventually(lambda: _exists(env, SCALEOUTS, name))
        await eventually(lambda: len(env.status()["targetWorkers"]) == 3)
        env.follow_targets()
        await eventually(lambda: len(env.status()["currentWorkers"]) == 3)
        env.deliver()
        await eventually(lambda: finished(env, SCALEOUTS, name))
        assert env.job()["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 3
        # Above maxReplicas: written back clamped, with a warning; then scaled to the bound.
        job = env.job()
        job["spec"]["etReplicaSpecs"]["worker"]["replicas"] = 9
        env.storage.update(TRAININGJOBS, job, namespace=env.ns)
        await eventually(lambda: env.job()["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 4)
        await eventually(lambda: bool(env.events("ReplicasClamped")))
        (warning,) = env.events("ReplicasClamped")
        assert warning["type"] == "Warning"
        assert "replicas 9 of TrainingJob tj is above maxReplicas 4; set to 4" in warning["message"]
        name = f"tj-replicas-{env.job()['metadata']['generation']}"
        await eventually(lambda: _exists(env, SCALEOUTS, name))


async def test_failed_workers_are_replaced_under_new_names(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env, restartPolicy="OnFailure")
        env.set_phase(f"{W}1", "Failed", reason="Evicted")
        await eventually(lambda: env.status()["targetWorkers"] == [f"{W}0", f"{W}2"])
        status = env.status()
        assert status["lastWorkerIndex"] == 2
        assert status["currentWorkers"] == [f"{W}0"]
        await eventually(lambda: bool(env.events("TrainingJobWorkerFailed")))
        (event,) = env.events("TrainingJobWorkerFailed")
        assert (
            event["message"]
            == "worker tj-worker-1 of TrainingJob tj failed; replaced by tj-worker-2"
        )
        env.follow_targets()
        await eventually(lambda: env.status()["currentWorkers"] == [f"{W}0", f"{W}2"])
        # A member that vanishes is replaced too, never recreated under its name.
        env.delete_pod(f"{W}0")
        await eventually(lambda: env.status()["targetWorkers"] == [f"{W}3", f"{W}2"])


async def test_a_finished_job_fails_its_pending_scalers(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job()
        env.create_scaler(SCALEOUTS, "late", {"selector": {"name": "tj"}, "toAdd": {"count": 1}})
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEOUTS, "late")))
        job = env.job()
        job["status"] = {
            **job.get("status", {}),
            "conditions": [{"type": "Succeeded", "status": "True"}],
        }
        env.storage.update(TRAININGJOBS, job, namespace=env.ns, subresource="status")
        await eventually(lambda: finished(env, SCALEOUTS, "late"))
        assert conditions(env.scaler_status(SCALEOUTS, "late"))["ScaleFailed"] == (
            "True",
            "JobFinished",
        )


def _exists(env: Env, res: Any, name: str) -> bool:
    return any(o["metadata"]["name"] == name for o in env.storage.list(res, namespace=env.ns).items)


@pytest.mark.etctl_hooks("fault injection: a held exec")
async def test_a_script_outcome_survives_a_change_of_its_scaler(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        await running_job(env)
        # The script's exec is held for 10 s of the clock, then refused for good (a 403): the
        # script never ran, which is an outcome too.
        env.cluster.server.inject(Fault(resource="pods", subresource="exec", delay=10, status=403))
        spec = {"selector": {"name": "tj"}, "toAdd": {"count": 1}, "script": "/scale.sh"}
        env.create_scaler(SCALEOUTS, "more", spec)
        await eventually(lambda: len(env.status()["targetWorkers"]) == 3)
        env.follow_targets()
        await eventually(lambda: len(env.status()["currentWorkers"]) == 3)
        env.deliver()
        requests = env.cluster.server.requests
        await eventually(lambda: bool(requests.find(subresource="exec")))
        # While the script runs, someone else writes the scaler: its outcome write conflicts.
        env.storage.patch(
            SCALEOUTS,
            "more",
            {"metadata": {"labels": {"team": "a"}}},
            patch_type="application/merge-patch+json",
            namespace=env.ns,
        )
        await env.clock.advance(10)  # not idle: the script's exec is held on purpose
        await eventually(lambda: env.status()["targetWorkers"] == [f"{W}0", f"{W}1"])
        env.follow_targets()  # the failed scale-out rolls its worker back
        await eventually(lambda: finished(env, SCALEOUTS, "more"))
        done = env.scaler_status(SCALEOUTS, "more")
        # Its outcome (it never started) is recorded, not taken for an interruption.
        assert conditions(done)["ScriptExecuted"] == ("False", "ScriptNotStarted")
        assert conditions(done)["ScaleFailed"] == ("True", "ScriptNotStarted")
        assert env.scaler(SCALEOUTS, "more")["metadata"]["labels"] == {"team": "a"}


async def test_a_stopping_controller_writes_no_new_decision(tmp_path: Path) -> None:
    async with scaling_env(tmp_path, run=False) as env:
        env.create_job(replicas=2)
        client = env.cluster.client
        cache = SnapshotCache(client, (TRAININGJOBS, PODS, SCALEOUTS, SCALEINS))
        for res in (SCALEOUTS, SCALEINS):
            cache.add_indexers(res, {SELECTOR_INDEX: selector_index})
        await cache.refresh()
        recorder = EventRecorder(ClientEventSink(client), component="test", clock=env.clock)
        controller = ScalingController(
            TrainingJobPlugin(), client=client, cache=cache, recorder=recorder, clock=env.clock
        )
        request = Request(env.ns, "tj")
        stopping = asyncio.Event()
        stopping.set()
        token = STOPPING.set(stopping)
        try:
            with captured_logs() as logs:
                await controller.reconcile(request)
        finally:
            STOPPING.reset(token)
        # The job's first membership is a decision: not written once the stop began, and said.
        assert "targetWorkers" not in env.status()
        assert any(e["event"].startswith("stopping: no new scaling decision") for e in logs)
        await controller.reconcile(request)
        assert env.status()["targetWorkers"] == [f"{W}0", f"{W}1"]
