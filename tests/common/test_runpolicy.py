"""Run policy: cleanup selection and timers, and end to end: cleanup, suspend and resume."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from etctl.common import CleanPodPolicy
from etctl.common._runpolicy import deadline_remaining, pods_to_clean, ttl_remaining
from etctl.errors import Forbidden
from etctl.runtime import PODS as POD_RESOURCE
from etctl.runtime import SERVICES, Client
from etctl.testing import Fault
from tests.common._harness import harness, simplejob
from tests.common.simplejob import SIMPLEJOBS

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
PODS = [{"metadata": {"name": phase.lower()}, "status": {"phase": phase}} for phase in PHASES]


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        (CleanPodPolicy.ALL, {"pending", "running", "succeeded", "failed", "unknown"}),
        (CleanPodPolicy.RUNNING, {"pending", "running"}),
        (CleanPodPolicy.NONE, set()),
    ],
)
def test_clean_pod_policy_selection(policy: CleanPodPolicy, deleted: set[str]) -> None:
    assert {pod["metadata"]["name"] for pod in pods_to_clean(PODS, policy)} == deleted


def test_timers() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    now = datetime(2026, 1, 1, 0, 0, 40, tzinfo=UTC)
    assert deadline_remaining(start, 60, now) == 20
    assert deadline_remaining(start, 30, now) == -10
    assert deadline_remaining(None, 30, now) is None
    assert deadline_remaining(start, None, now) is None
    assert ttl_remaining(start, 0, now) == -40
    assert ttl_remaining(start, 100, now) == 60
    assert ttl_remaining(None, 100, now) is None


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        ("All", []),
        ("Running", ["train-worker-1", "train-worker-2"]),
        ("None", ["train-worker-0", "train-worker-1", "train-worker-2", "train-worker-3"]),
    ],
)
async def test_clean_pod_policy(tmp_path: Path, policy: str, left: list[str]) -> None:
    async with harness(tmp_path) as h:
        run_policy = {"cleanPodPolicy": policy}
        await h.submit(simplejob("train", workers=4, run_policy=run_policy))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running")
        await h.set_phase("train-worker-1", "Succeeded", exit_code=0)
        await h.set_phase("train-worker-2", "Failed", exit_code=1)
        # worker-3 stays Pending.
        await h.step("train")
        assert (await h.conditions("train"))["Failed"][0] == "True"
        await h.step("train")
        assert sorted(await h.pods()) == left


async def test_suspend_and_resume(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, leader=True))
        await h.step("train")
        for name in ("train-worker-0", "train-worker-1"):
            await h.set_phase(name, "Running")
        await h.step("train")
        assert (await h.conditions("train"))["Running"][0] == "True"
        assert sorted(await h.objects_of(SERVICES)) == ["train-leader-0"]
        job = await h.job("train")
        job["spec"]["runPolicy"]["suspend"] = True
        await h.client.replace(SIMPLEJOBS, job)
        await h.clock.advance(100)
        await h.step("train")
        assert await h.pods() == {}
        assert await h.objects_of(SERVICES) == {}
        conditions = await h.conditions("train")
        assert conditions["Suspended"] == ("True", "SimpleJobSuspended")
        assert conditions["Running"] == ("False", "SimpleJobSuspended")
        assert (await h.job("train"))["status"]["startTime"] == "2026-01-01T00:00:00Z"
        await h.step("train")  # stays suspended, writes nothing new
        assert await h.pods() == {}
        job = await h.job("train")
        job["spec"]["runPolicy"]["suspend"] = False
        await h.client.replace(SIMPLEJOBS, job)
        await h.clock.advance(50)
        await h.step("train")
        conditions = await h.conditions("train")
        assert conditions["Suspended"] == ("False", "SimpleJobResumed")
        assert (await h.job("train"))["status"]["startTime"] == "2026-01-01T00:02:30Z"
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        assert [e["reason"] for e in await h.events("SimpleJobResumed")] == ["SimpleJobResumed"]
        assert len(await h.events("SimpleJobSuspended")) == 1


@pytest.mark.etctl_hooks("fault injection: a refused pod delete")
async def test_a_job_is_said_suspended_only_once_its_pods_are_deleted(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2))
        await h.step("train")
        for name in ("train-worker-0", "train-worker-1"):
            await h.set_phase(name, "Running")
        await h.step("train")
        job = await h.job("train")
        job["spec"]["runPolicy"]["suspend"] = True
        await h.client.replace(SIMPLEJOBS, job)
        h.server.inject(Fault(verb="delete", resource="pods", status=403, times=1))
        with pytest.raises(Forbidden):
            await h.step("train")
        assert len(await h.pods()) == 1  # the delete that was refused: that pod still runs
        conditions = await h.conditions("train")
        assert "Suspended" not in conditions
        assert conditions["Running"] == ("True", "SimpleJobRunning")
        # The retry deletes what is left, then says so.
        await h.step("train")
        assert await h.pods() == {}
        assert (await h.conditions("train"))["Suspended"] == ("True", "SimpleJobSuspended")


@pytest.mark.etctl_hooks("fault injection: a refused pod delete")
async def test_a_job_failed_by_its_limits_loses_the_pods_a_refused_delete_left(
    tmp_path: Path,
) -> None:
    policy = {"activeDeadlineSeconds": 60, "cleanPodPolicy": "None"}
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, run_policy=policy))
        await h.step("train")
        for name in ("train-worker-0", "train-worker-1"):
            await h.set_phase(name, "Running")
        h.server.inject(Fault(verb="delete", resource="pods", status=403, times=1))
        await h.clock.advance(60)
        with pytest.raises(Forbidden):
            await h.step("train")
        assert (await h.conditions("train"))["Failed"] == ("True", "DeadlineExceeded")
        assert len(await h.pods()) == 1  # the delete that was refused
        # The retry finds a finished job: its failure, not cleanPodPolicy, says what goes.
        await h.step("train")
        assert await h.pods() == {}


@pytest.mark.etctl_hooks("fault injection: a refused service delete")
async def test_a_cleaned_pod_whose_service_delete_failed_leaves_no_service(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        policy = {"cleanPodPolicy": "Running"}
        await h.submit(simplejob("train", workers=1, leader=True, run_policy=policy))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running")
        await h.step("train")
        await h.set_phase("train-leader-0", "Running")
        assert sorted(await h.objects_of(SERVICES)) == ["train-leader-0"]
        await h.set_phase("train-worker-0", "Failed", exit_code=1)
        await h.step("train")
        assert (await h.conditions("train"))["Failed"][0] == "True"
        h.server.inject(Fault(verb="delete", resource="services", status=403, times=1))
        with pytest.raises(Forbidden):
            await h.step("train")
        # The leader still runs, so the retry finds it and deletes what is left.
        await h.step("train")
        assert await h.objects_of(SERVICES) == {}
        assert sorted(await h.pods()) == ["train-worker-0"]


@pytest.mark.parametrize("release", ["1.32", "1.24"])
async def test_a_job_created_suspended_gets_no_pods_until_admitted(
    tmp_path: Path, release: str
) -> None:
    """Kueue's admission: suspended at creation, resumed with injected scheduling directives."""
    async with harness(tmp_path, kubernetes_version=release) as h:
        await h.submit(simplejob("train", workers=2, leader=True, run_policy={"suspend": True}))
        await h.step("train")
        await h.step("train")
        assert await h.pods() == {}
        assert await h.objects_of(SERVICES) == {}
        conditions = await h.conditions("train")
        assert conditions["Created"] == ("True", "SimpleJobCreated")
        assert conditions["Suspended"] == ("True", "SimpleJobSuspended")
        assert "Running" not in conditions
        assert "startTime" not in (await h.job("train"))["status"]
        # Kueue admits the job: it injects the flavor's node selector, a toleration and a
        # scheduling gate into the templates and unsuspends it, in one update.
        job = await h.job("train")
        for replica in job["spec"]["replicaSpecs"].values():
            pod_spec = replica["template"]["spec"]
            pod_spec["nodeSelector"] = {"cloud.provider.com/accelerator": "a100"}
            pod_spec["tolerations"] = [{"key": "spot", "operator": "Exists"}]
            pod_spec["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
        job["spec"]["runPolicy"]["suspend"] = False
        await h.client.replace(SIMPLEJOBS, job)
        await h.clock.advance(30)
        await h.step("train")
        pods = await h.pods()
        assert sorted(pods) == ["train-worker-0", "train-worker-1"]
        # Pod scheduling gates came with Kubernetes 1.27: detected on the server, not assumed.
        gated = await keeps_scheduling_gates(h.client, h.ns)
        for pod in pods.values():
            assert pod["spec"]["nodeSelector"] == {"cloud.provider.com/accelerator": "a100"}
            assert {"key": "spot", "operator": "Exists"} in pod["spec"]["tolerations"]
            gates = pod["spec"].get("schedulingGates")
            assert gates == ([{"name": "kueue.x-k8s.io/topology"}] if gated else None)
        conditions = await h.conditions("train")
        assert conditions["Suspended"] == ("False", "SimpleJobResumed")
        assert (await h.job("train"))["status"]["startTime"] == "2026-01-01T00:00:30Z"


async def test_a_job_suspended_again_is_rebuilt_from_its_templates_as_they_are(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        await h.set_phase("train-worker-0", "Running")
        await h.step("train")
        job = await h.job("train")
        job["spec"]["runPolicy"]["suspend"] = True
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        assert await h.pods() == {}
        assert (await h.job("train"))["metadata"]["name"] == "train"  # the job stays
        # Requeued on another flavor: a different node selector this time.
        job = await h.job("train")
        template = job["spec"]["replicaSpecs"]["Worker"]["template"]
        template["spec"]["nodeSelector"] = {"flavor": "b"}
        job["spec"]["runPolicy"]["suspend"] = False
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        pods = await h.pods()
        assert pods["train-worker-0"]["spec"]["nodeSelector"] == {"flavor": "b"}


@pytest.mark.parametrize("managed_by", ["kueue.x-k8s.io/multikueue", "example.com/other"])
async def test_a_job_another_controller_manages_is_left_alone(
    tmp_path: Path, managed_by: str
) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=2, run_policy={"managedBy": managed_by}))
        await h.step("train")
        assert await h.pods() == {}
        assert "status" not in await h.job("train")
        assert await h.events() == []


async def test_an_empty_managed_by_is_unset(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1, run_policy={"managedBy": ""}))
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0"]


async def keeps_scheduling_gates(client: Client, namespace: str) -> bool:
    """Whether the server keeps a pod's ``schedulingGates`` (a release before 1.27 drops them).

    Asked of the server with a dry-run create, so nothing is made.
    """
    probe = {
        "metadata": {"name": "probe-scheduling-gates"},
        "spec": {
            "containers": [{"name": "probe", "image": "busybox"}],
            "schedulingGates": [{"name": "example.etctl.dev/probe"}],
        },
    }
    answer = await client.create(POD_RESOURCE, probe, namespace=namespace, dry_run=True)
    return bool((answer.get("spec") or {}).get("schedulingGates"))
