"""TFJob run policies end to end: cleanPodPolicy, suspend and resume, gang scheduling."""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.common import JobSettings
from etctl.common._gang import VOLCANO_PODGROUPS
from etctl.jobs.tfjob import TFJobPlugin
from etctl.jobs.tfjob._api import TFJOBS
from etctl.testing import KubeletConfig, eventually, wait_idle
from tests._cluster import Cluster, cluster
from tests.common._crds import VOLCANO_PODGROUP_CRD
from tests.jobs.tfjob._manifests import NAMESPACE, replica, tfjob
from tests.runtime._realtime import running

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet plays the TFJob containers (image tf:2) and their exits"
)


def all_running(c: Cluster, count: int) -> bool:
    phases = c.phases()
    return len(phases) == count and set(phases.values()) == {"Running"}


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        # The chief and worker 0 succeeded; the PS and worker 1 are still running.
        ("All", []),
        ("Running", ["cp-chief-0", "cp-worker-0"]),
        ("None", ["cp-chief-0", "cp-ps-0", "cp-worker-0", "cp-worker-1"]),
    ],
)
async def test_clean_pod_policy(tmp_path: Path, policy: str, left: list[str]) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            body = tfjob(
                "cp",
                run_policy={"cleanPodPolicy": policy},
                Chief=replica(1),
                PS=replica(1),
                Worker=replica(2),
            )
            await c.submit(body)
            await eventually(lambda: all_running(c, 4))
            await eventually(lambda: c.state("cp") == "Running")
            c.exit("cp-worker-0", 0)
            await eventually(lambda: c.phases().get("cp-worker-0") == "Succeeded")
            c.exit("cp-chief-0", 0)
            await eventually(lambda: c.state("cp") == "Succeeded")
            await eventually(lambda: sorted(c.live_pods()) == left)
            # A deleted pod's service goes with it.
            await eventually(lambda: sorted(c.services()) == left)
        assert op.error is None


async def test_suspend_and_resume(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(tfjob("sus", PS=replica(1), Worker=replica(2)))
            await eventually(lambda: all_running(c, 3))
            await eventually(lambda: c.state("sus") == "Running")
            first_start = c.status("sus")["startTime"]

            await wait_idle(c.server, op.manager)
            await c.clock.advance(60)
            patch = {"spec": {"runPolicy": {"suspend": True}}}
            await c.client.patch(TFJOBS, "sus", patch, namespace=NAMESPACE)
            await eventually(lambda: c.condition("sus", "Suspended") == ("True", "TFJobSuspended"))
            assert c.condition("sus", "Running") == ("False", "TFJobSuspended")
            await eventually(lambda: c.pods() == {} and c.services() == {})
            workers = c.status("sus")["replicaStatuses"]["Worker"]
            assert workers.get("active", 0) == workers.get("failed", 0) == 0

            await wait_idle(c.server, op.manager)
            await c.clock.advance(60)
            patch = {"spec": {"runPolicy": {"suspend": False}}}
            await c.client.patch(TFJOBS, "sus", patch, namespace=NAMESPACE)
            await eventually(lambda: c.condition("sus", "Suspended") == ("False", "TFJobResumed"))
            await eventually(lambda: all_running(c, 3))
            await eventually(lambda: c.state("sus") == "Running")
            assert sorted(c.services()) == ["sus-ps-0", "sus-worker-0", "sus-worker-1"]
            # Resuming starts the clock again: the deadline does not count the suspension.
            assert c.status("sus")["startTime"] > first_start
        assert op.error is None


async def test_gang_podgroup_holds_pods_until_admitted(tmp_path: Path) -> None:
    async with cluster(
        tmp_path, TFJobPlugin(), kubelet=KubeletConfig(), crds=(VOLCANO_PODGROUP_CRD,)
    ) as c:
        op = c.operator(settings=JobSettings(gang_scheduler="volcano"))
        async with running(op):
            resources = {"requests": {"cpu": "1", "memory": "1Gi"}}
            body = tfjob(
                "gang",
                run_policy={"schedulingPolicy": {"queue": "research"}},
                PS=replica(1, resources=resources),
                Worker=replica(3, resources=resources),
            )
            await c.submit(body)
            await eventually(lambda: "gang" in c.objects(VOLCANO_PODGROUPS))
            group = c.objects(VOLCANO_PODGROUPS)["gang"]
            # minMember defaults to every replica of the job.
            assert group["spec"]["minMember"] == 4
            assert group["spec"]["queue"] == "research"
            assert group["spec"]["minResources"] == {"cpu": "4", "memory": "4Gi"}
            assert group["metadata"]["ownerReferences"][0]["name"] == "gang"

            await c.client.patch_status(
                VOLCANO_PODGROUPS, "gang", {"status": {"phase": "Pending"}}, namespace=NAMESPACE
            )
            await c.advance_idle(1, op.manager)
            assert c.pods() == {}

            await c.client.patch_status(
                VOLCANO_PODGROUPS, "gang", {"status": {"phase": "Inqueue"}}, namespace=NAMESPACE
            )
            await eventually(lambda: all_running(c, 4))
            pod = c.pods()["gang-worker-2"]
            assert pod["spec"]["schedulerName"] == "volcano"
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "gang"
            assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == "Worker"

            c.exit("gang-worker-0", 0)
            await eventually(lambda: c.state("gang") == "Succeeded")
            await eventually(lambda: c.objects(VOLCANO_PODGROUPS) == {})
        assert op.error is None
