"""Replica sync end to end: scale down, completed pods never run twice, services follow slots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etctl.common import JobSettings, JobState, ReplicaRef
from etctl.runtime import PODS, SERVICES, KubeObject
from tests.common._harness import harness, simplejob
from tests.common.simplejob import SIMPLEJOBS, SimpleJob, SimpleJobPlugin


async def test_scaling_down_deletes_the_highest_slots(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=4))
        await h.step("train")
        for name in await h.pods():
            await h.set_phase(name, "Running")
        job = await h.job("train")
        job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 2
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        assert len(await h.events("SuccessfulDeletePod")) == 2
        job = await h.job("train")
        assert job["status"]["replicaStatuses"]["Worker"]["active"] == 2


async def test_completed_pods_that_vanish_are_not_run_again(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2))
        await h.step("train")
        await h.set_phase("train-worker-0", "Succeeded", exit_code=0)
        await h.set_phase("train-worker-1", "Running")
        await h.step("train")
        status = (await h.job("train"))["status"]
        assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
        # Someone (a pod garbage collector, a person) removes the completed pod.
        await h.client.delete(PODS, "train-worker-0", namespace=h.ns)
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-1"]
        status = (await h.job("train"))["status"]
        assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
        assert status["replicaStatuses"]["Worker"]["completedIndexes"] == "0"
        await h.set_phase("train-worker-1", "Succeeded", exit_code=0)
        await h.step("train")
        status = (await h.job("train"))["status"]
        assert status["replicaStatuses"]["Worker"]["succeeded"] == 2
        assert status["replicaStatuses"]["Worker"]["completedIndexes"] == "0-1"
        assert sorted(await h.pods()) == ["train-worker-1"]
        assert (await h.conditions("train"))["Succeeded"][0] == "True"


async def test_services_follow_the_planned_slots(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, leader=True))
        await h.step("train")
        (service,) = (await h.objects_of(SERVICES)).values()
        assert service["metadata"]["name"] == "train-leader-0"
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"]["training.kubeflow.org/replica-type"] == "leader"
        job = await h.job("train")
        del job["spec"]["replicaSpecs"]["Leader"]
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        assert await h.objects_of(SERVICES) == {}
        assert len(await h.events("SuccessfulDeleteService")) == 1


class _ServiceForEverySlot(SimpleJobPlugin):
    def build_service(
        self, job: SimpleJob, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        return {"spec": {"clusterIP": "None", "ports": [{"name": "rpc", "port": 7777}]}}


async def test_one_reconcile_creates_at_most_a_burst_of_pods_and_services(tmp_path: Path) -> None:
    # A job asking for a huge number of replicas must not hold the reconcile worker (and every
    # other job of its kind) for as long as it takes to create them all: each reconcile creates a
    # bounded burst, and the next reconcile (the created pods' events requeue the job) goes on.
    plugin = _ServiceForEverySlot()
    async with harness(tmp_path, plugin=plugin, settings=JobSettings(burst=3)) as h:
        await h.submit(simplejob("train", workers=5))
        await h.step("train")
        assert len(await h.pods()) == 3
        assert len(await h.objects_of(SERVICES)) == 3
        await h.step("train")
        everyone = [f"train-worker-{i}" for i in range(5)]
        assert sorted(await h.pods()) == everyone
        assert sorted(await h.objects_of(SERVICES)) == everyone
