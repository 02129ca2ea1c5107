"""The whole operator: Manager, informers and the JobController wired by setup_job_controller."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from etctl.common import JobSettings, crd_manifest, setup_job_controller
from etctl.errors import CacheSyncError, ShutdownIncomplete
from etctl.runtime import CONFIGMAPS, EVENTS, PODS, SERVICES, objects
from etctl.testing import Fault, eventually, wait_idle
from etctl.testing._kubelet import KubeletConfig
from tests._cluster import Cluster, cluster
from tests.common._harness import simplejob
from tests.common._plugins import PHASEDJOB, PHASEDJOBS, PhasedPlugin
from tests.common.simplejob import SIMPLEJOBS, SimpleJobPlugin
from tests.runtime._realtime import running


async def test_a_job_runs_to_success(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator()
        async with running(op):
            job = await c.submit(simplejob("train", workers=2, leader=True))
            await eventually(lambda: len(c.pods()) == 2)
            for name in ("train-worker-0", "train-worker-1"):
                c.set_phase(name, "Running")
            await eventually(lambda: "train-leader-0" in c.pods())
            await wait_idle(c.idle, op.manager)  # its service comes after the pod
            pods = c.pods()
            for pod in pods.values():
                assert objects.controller_ref(pod) == objects.uid(job)
            assert sorted(c.objects(SERVICES)) == ["train-leader-0"]
            assert "train-peers" in c.objects(CONFIGMAPS)
            for name in pods:
                c.set_phase(name, "Succeeded", exit_code=0)
            await eventually(
                lambda: c.condition("train", "Succeeded") == ("True", "SimpleJobSucceeded")
            )
            stored = c.job("train")
            assert stored is not None
            assert stored["status"]["replicaStatuses"]["Leader"]["succeeded"] == 1
            await wait_idle(c.idle, op.manager)  # the transition's event is recorded
            await op.manager.recorder("simplejob-controller").flush()
            reasons = {e["reason"] for e in c.objects(EVENTS).values()}
            assert {"SimpleJobCreated", "SuccessfulCreatePod", "SimpleJobSucceeded"} <= reasons
        assert op.error is None


async def test_the_deadline_fires_with_no_other_event(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator()
        async with running(op):
            body = simplejob("train", workers=1, run_policy={"activeDeadlineSeconds": 120})
            await c.submit(body)
            await eventually(lambda: len(c.pods()) == 1)
            c.set_phase("train-worker-0", "Running")
            await eventually(lambda: c.condition("train", "Running") is not None)
            await c.advance_idle(119, op.manager)
            assert c.condition("train", "Failed") is None
            await c.clock.advance(1)
            await eventually(lambda: c.condition("train", "Failed") == ("True", "DeadlineExceeded"))
            await eventually(lambda: c.pods() == {})


async def test_the_ttl_deletes_a_finished_job(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator()
        async with running(op):
            body = simplejob("train", workers=1, run_policy={"ttlSecondsAfterFinished": 60})
            await c.submit(body)
            await eventually(lambda: len(c.pods()) == 1)
            c.set_phase("train-worker-0", "Succeeded", exit_code=0)
            await eventually(lambda: c.condition("train", "Succeeded") is not None)
            await c.advance_idle(59, op.manager)
            assert c.job("train") is not None
            await c.clock.advance(1)
            await eventually(lambda: c.job("train") is None)


@pytest.mark.etctl_hooks("fault injection: a status write that stalls")
async def test_an_operator_restarted_mid_reconcile_converges(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        # The first operator creates the pods, then stops in the middle of its reconcile: its
        # status write stalls on the server and is never answered.
        stall = c.server.inject(
            Fault(
                verb="patch",
                resource="simplejobs.example.etctl.io",
                subresource="status",
                delay=1e6,
                times=None,
            )
        )
        first = c.operator(graceful_shutdown_timeout=0)
        async with running(first):
            job = await c.submit(simplejob("train", workers=6))
            await eventually(lambda: stall.fired >= 1)
            first.manager.stop()
        # Without a grace period the reconcile was cut short: an incomplete shutdown, reported.
        assert isinstance(first.error, ShutdownIncomplete)
        assert len(c.pods()) == 6
        assert c.condition("train", "Created") is None
        c.server.faults.remove(stall)
        # One pod is gone meanwhile; the second operator starts with no memory of the first.
        c.server.storage.delete(PODS, "train-worker-2", namespace=c.ns)
        second = c.operator()
        async with running(second):
            await eventually(lambda: c.condition("train", "Created") is not None)
            await eventually(lambda: len(c.pods()) == 6)
            for name in c.pods():
                c.set_phase(name, "Running")
            await eventually(
                lambda: (
                    (c.job("train") or {})
                    .get("status", {})
                    .get("replicaStatuses", {})
                    .get("Worker", {})
                    .get("active")
                    == 6
                )
            )
        pods = c.pods()
        assert sorted(pods) == [f"train-worker-{i}" for i in range(6)]
        assert all(objects.controller_ref(pod) == objects.uid(job) for pod in pods.values())
        assert second.error is None


@pytest.mark.etctl_hooks("the request log paces the failed list")
async def test_a_missing_podgroup_crd_fails_the_start_with_the_reason(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator(settings=JobSettings(gang_scheduler="volcano"))
        async with running(op):
            await eventually(lambda: c.server.requests.find(verb="list", resource="podgroups"))
            await c.clock.advance(5)
            await eventually(lambda: op.task is not None and op.task.done())
        assert isinstance(op.error, CacheSyncError)
        assert "podgroups.scheduling.volcano.sh" in str(op.error)


async def test_two_job_kinds_share_one_cache(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), crds=(crd_manifest(PHASEDJOB),)) as c:
        op = c.operator()
        setup_job_controller(op.manager, PhasedPlugin())
        async with running(op):
            await c.submit(simplejob("one", workers=1))
            other = simplejob("two", workers=1)
            other["kind"] = "PhasedJob"
            await c.submit(other, PHASEDJOBS)
            await eventually(lambda: sorted(c.pods()) == ["one-worker-0", "two-worker-0"])
            await eventually(
                lambda: (c.job("two", PHASEDJOBS) or {}).get("status", {}).get("phase")
            )
        assert op.error is None


def annotated(**knobs: str) -> dict[str, Any]:
    """A pod template whose container behaves as the simulated kubelet's knobs say."""
    return {
        "metadata": {
            "annotations": {f"sim.etctl.io/{k.replace('_', '-')}": v for k, v in knobs.items()}
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


@pytest.mark.etctl_hooks("the simulated kubelet's behaviours in virtual time")
async def test_a_job_runs_to_success_on_the_simulated_kubelet(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            body = simplejob("train", workers=2, leader=True, template=annotated(run_seconds="30"))
            await c.submit(body)
            await eventually(
                lambda: phases(c) == {"train-worker-0": "Running", "train-worker-1": "Running"}
            )
            await eventually(lambda: phases(c).get("train-leader-0") == "Running")
            await wait_idle(c.idle, op.manager)
            await c.clock.advance(30)
            await eventually(
                lambda: c.condition("train", "Succeeded") == ("True", "SimpleJobSucceeded")
            )
            stored = c.job("train")
            assert stored is not None
            assert stored["status"]["replicaStatuses"]["Worker"]["succeeded"] == 2
            assert stored["status"]["replicaStatuses"]["Leader"]["succeeded"] == 1
        assert op.error is None


@pytest.mark.etctl_hooks("the simulated kubelet's OOM kills in virtual time")
async def test_oom_kills_are_restarted_until_the_backoff_limit(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            body = simplejob(
                "train",
                workers=1,
                restart="ExitCode",
                template=annotated(oom_after="10"),
                run_policy={"backoffLimit": 2},
            )
            await c.submit(body)
            for restarts in (1, 2):
                await eventually(lambda: phases(c).get("train-worker-0") == "Running")
                await wait_idle(c.idle, op.manager)
                await c.clock.advance(10)
                await eventually(partial(restarted, c, restarts))
            await eventually(lambda: phases(c).get("train-worker-0") == "Running")
            await wait_idle(c.idle, op.manager)
            await c.clock.advance(10)
            await eventually(
                lambda: c.condition("train", "Failed") == ("True", "BackoffLimitExceeded")
            )
        assert restart_count(c) == 2


@pytest.mark.etctl_kubelet("runs busybox pods (sleep 3600) and stops them when they are deleted")
async def test_a_job_deleted_while_running_leaves_nothing_behind(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(simplejob("train", workers=2, leader=True, template=SLEEPING))
            await eventually(lambda: phases(c).get("train-leader-0") == "Running")
            assert c.objects(SERVICES)
            await c.client.delete(SIMPLEJOBS, "train", namespace=c.ns)
            await eventually(lambda: c.job("train") is None)
            await eventually(lambda: not c.pods(), timeout=10)
            await eventually(lambda: not c.objects(SERVICES))
            await eventually(lambda: "train-peers" not in c.objects(CONFIGMAPS))
            assert c.pods() == {}
        assert op.error is None


SLEEPING = {
    "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]}
}
"""Pods a kubelet runs until they are deleted (the simulated one's default behaviour)."""


def phases(c: Cluster) -> dict[str, str]:
    return {name: str((pod.get("status") or {}).get("phase")) for name, pod in c.pods().items()}


def restarted(c: Cluster, times: int) -> bool:
    return restart_count(c) == times


def restart_count(c: Cluster) -> int:
    return int(((c.job("train") or {}).get("status") or {}).get("restartCount", 0))


async def test_an_invalid_job_fails_and_the_operator_keeps_running(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator()
        async with running(op):
            broken = simplejob("broken", workers=1)
            broken["spec"]["replicaSpecs"]["Other"] = broken["spec"]["replicaSpecs"]["Worker"]
            await c.submit(broken)
            await c.submit(simplejob("fine", workers=1))
            await eventually(
                lambda: c.condition("broken", "Failed") == ("True", "SimpleJobInvalid")
            )
            await eventually(lambda: sorted(c.pods()) == ["fine-worker-0"])
            await wait_idle(c.idle, op.manager)
            await op.manager.recorder("simplejob-controller").flush()
            (event,) = [e for e in c.objects(EVENTS).values() if e["reason"] == "SimpleJobInvalid"]
            assert "spec.replicaSpecs.Other: unknown replica type" in event["message"]
        assert op.error is None


@pytest.mark.etctl_hooks("the request log shows the orphan's claim")
async def test_a_hand_made_orphan_wakes_the_job_it_could_belong_to(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator()
        async with running(op):
            job = await c.submit(simplejob("train", workers=2))
            await eventually(lambda: len(c.pods()) == 2)
            for name in ("train-worker-0", "train-worker-1"):
                c.set_phase(name, "Running")
            await wait_idle(c.server, op.manager)
            # A pod made by hand, named and labelled like a child of the job, owned by nobody.
            # Nothing about the job changes: only the orphan's own event can wake it.
            labels = {
                "training.kubeflow.org/operator-name": "etctl",
                "training.kubeflow.org/job-name": "train",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            }
            await c.client.create(
                PODS,
                {
                    "metadata": {"name": "train-worker-1-debug", "labels": labels},
                    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                },
                namespace=c.ns,
            )
            await wait_idle(c.server, op.manager)
            adopted = c.pods().get("train-worker-1-debug")
            # Claimed at once: adopted (and then deleted as a pod the job does not plan).
            assert adopted is None or objects.controller_ref(adopted) == objects.uid(job)
            patches = [
                r
                for r in c.server.requests.find(resource="pods", name="train-worker-1-debug")
                if r.verb in ("patch", "delete")
            ]
            assert patches, "the orphan was never claimed"
