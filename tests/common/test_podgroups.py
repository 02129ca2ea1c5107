"""Gang scheduling end to end: the PodGroup, its drift, admission holding pods, its removal."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from etctl.common import JobSettings
from etctl.common._gang import SCHEDULER_PLUGINS_PODGROUPS, VOLCANO_PODGROUPS
from etctl.runtime import PRIORITYCLASSES
from tests.common._crds import SCHEDULER_PLUGINS_PODGROUP_CRD, VOLCANO_PODGROUP_CRD
from tests.common._harness import Harness, harness, simplejob

TEMPLATE: dict[str, Any] = {
    "spec": {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }
        ]
    }
}


def gang_harness(tmp_path: Path, scheduler: str) -> AbstractAsyncContextManager[Harness]:
    """A harness whose jobs are gang scheduled by ``scheduler``, with its PodGroup CRD loaded."""
    crd, podgroups = {
        "volcano": (VOLCANO_PODGROUP_CRD, VOLCANO_PODGROUPS),
        "scheduler-plugins": (SCHEDULER_PLUGINS_PODGROUP_CRD, SCHEDULER_PLUGINS_PODGROUPS),
    }[scheduler]
    return harness(
        tmp_path,
        settings=JobSettings(gang_scheduler=scheduler),
        crds=(crd,),
        extra_resources=(podgroups, PRIORITYCLASSES),
    )


async def set_group_phase(h: Harness, name: str, phase: str) -> None:
    """Play Volcano: move the job's PodGroup to ``phase`` and reconcile the job."""
    await h.client.patch_status(
        VOLCANO_PODGROUPS, name, {"status": {"phase": phase}}, namespace=h.ns
    )
    await h.step(name)


async def test_volcano_holds_pods_until_the_group_is_admitted(tmp_path: Path) -> None:
    async with gang_harness(tmp_path, "volcano") as h:
        urgent = f"urgent-{h.ns}"  # cluster-wide: named after the test's namespace
        leader_template = {
            "spec": {**TEMPLATE["spec"], "priorityClassName": urgent},
        }
        await h.client.create(PRIORITYCLASSES, {"metadata": {"name": urgent}, "value": 1000})
        try:
            await volcano_gang(h, leader_template)
        finally:
            await h.client.delete(PRIORITYCLASSES, urgent)


async def volcano_gang(h: Harness, leader_template: dict[str, Any]) -> None:
    """The volcano gang test's steps, once its priority class exists."""
    body = simplejob(
        "gang",
        workers=3,
        leader=True,
        template=TEMPLATE,
        run_policy={"schedulingPolicy": {"minAvailable": 2, "queue": "research"}},
    )
    body["spec"]["replicaSpecs"]["Leader"]["template"] = leader_template
    await h.submit(body)
    await h.step("gang")
    groups = await h.objects_of(VOLCANO_PODGROUPS)
    group = groups["gang"]
    assert group["spec"] == {
        "minMember": 2,
        "minResources": {"cpu": "1", "memory": "2Gi"},
        "queue": "research",
    }
    assert group["metadata"]["ownerReferences"][0]["name"] == "gang"
    assert await h.pods() == {}
    await set_group_phase(h, "gang", "Pending")
    assert await h.pods() == {}
    await set_group_phase(h, "gang", "Inqueue")
    pods = await h.pods()
    assert sorted(pods) == ["gang-worker-0", "gang-worker-1", "gang-worker-2"]
    pod = pods["gang-worker-0"]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "gang",
        "volcano.sh/task-spec": "Worker",
    }
    # The job's spec changes: the PodGroup follows.
    job = await h.job("gang")
    job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = 4
    await h.client.replace(h.controller.resource, job)
    await h.step("gang")
    group = (await h.objects_of(VOLCANO_PODGROUPS))["gang"]
    assert group["spec"]["minMember"] == 4
    assert group["spec"]["minResources"] == {"cpu": "2", "memory": "4Gi"}
    assert group["status"] == {"phase": "Inqueue"}
    for name in pods:
        await h.set_phase(name, "Failed", exit_code=1)
    await h.step("gang")
    assert (await h.conditions("gang"))["Failed"][0] == "True"
    await h.step("gang")
    assert await h.objects_of(VOLCANO_PODGROUPS) == {}
    assert len(await h.events("SuccessfulDeletePodGroup")) == 1


async def test_scheduler_plugins_creates_pods_at_once(tmp_path: Path) -> None:
    async with gang_harness(tmp_path, "scheduler-plugins") as h:
        run_policy = {"schedulingPolicy": {"scheduleTimeoutSeconds": 120}}
        await h.submit(simplejob("gang", workers=2, template=TEMPLATE, run_policy=run_policy))
        await h.step("gang")
        group = (await h.objects_of(SCHEDULER_PLUGINS_PODGROUPS))["gang"]
        assert group["spec"] == {
            "minMember": 2,
            "minResources": {"cpu": "1", "memory": "2Gi"},
            "scheduleTimeoutSeconds": 120,
        }
        pods = await h.pods()
        assert sorted(pods) == ["gang-worker-0", "gang-worker-1"]
        pod = pods["gang-worker-1"]
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"


async def test_a_foreign_podgroup_holds_the_job(tmp_path: Path) -> None:
    async with gang_harness(tmp_path, "scheduler-plugins") as h:
        foreign = {"metadata": {"name": "gang", "namespace": h.ns}, "spec": {"minMember": 9}}
        await h.client.create(SCHEDULER_PLUGINS_PODGROUPS, foreign)
        await h.submit(simplejob("gang", workers=1))
        await h.step("gang")
        assert await h.pods() == {}
        group = (await h.objects_of(SCHEDULER_PLUGINS_PODGROUPS))["gang"]
        assert group["spec"] == {"minMember": 9}
        (event,) = await h.events("ErrResourceExists")
        assert event["type"] == "Warning"
