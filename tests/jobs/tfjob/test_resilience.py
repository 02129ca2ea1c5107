"""The TFJob operator under disruption: a restart mid-reconcile, a deleted job, invalid jobs."""

from __future__ import annotations

import asyncio

import pytest

from etctl.errors import Invalid
from etctl.jobs.tfjob import TFJobPlugin
from etctl.jobs.tfjob._api import TFJOBS
from etctl.runtime import EVENTS, objects
from etctl.testing import Fault, KubeletConfig, eventually, wait_idle
from tests._cluster import Cluster
from tests.jobs.tfjob._manifests import NAMESPACE, replica, tfjob
from tests.runtime._realtime import running

pytestmark = [
    pytest.mark.etctl_hooks(
        "the simulated kubelet plays the TFJob containers (image tf:2) and their exits"
    ),
    pytest.mark.cluster(TFJobPlugin, kubelet=KubeletConfig()),
]

WORKERS = [f"rs-worker-{i}" for i in range(4)]
EXPECTED = sorted(["rs-ps-0", "rs-ps-1", *WORKERS])


async def test_an_operator_restarted_mid_reconcile_converges(env: Cluster) -> None:
    # Pods are created PS first, then workers in slow-start batches ([w0], [w1, w2], [w3]):
    # three creations pass, the fourth (worker 1 or 2) hangs in the server, and the first
    # operator crashes in the middle of that batch.
    env.server.inject(Fault(verb="create", resource="pods", times=3))
    env.server.inject(Fault(verb="create", resource="pods", delay=3600, times=1))
    first = env.operator(graceful_shutdown_timeout=0)
    second = env.operator()
    async with running(first):
        job = await env.submit(tfjob("rs", PS=replica(2), Worker=replica(4)))
        await eventually(lambda: len(env.pods()) == 4)
        assert "rs-worker-3" not in env.pods()
        assert first.task is not None
        first.task.cancel()  # no grace: the reconcile in flight is cut off, as in a crash
        await asyncio.gather(first.task, return_exceptions=True)
    async with running(second):
        await eventually(lambda: sorted(env.pods()) == EXPECTED)
        await eventually(lambda: sorted(env.services()) == EXPECTED)
        # The hung create completes now, too late: the name is taken, nothing is duplicated.
        await wait_idle(env.server, second.manager)
        await env.clock.advance(3600)
        await eventually(lambda: set(env.phases().values()) == {"Running"})
        await eventually(lambda: env.state("rs") == "Running")
        pods = env.pods()
        assert sorted(pods) == EXPECTED
        assert {objects.controller_ref(pod) for pod in pods.values()} == {objects.uid(job)}
        await eventually(lambda: env.status("rs")["replicaStatuses"]["Worker"].get("active") == 4)
    assert second.error is None


async def test_a_job_deleted_while_running_leaves_nothing_behind(env: Cluster) -> None:
    op = env.operator()
    async with running(op):
        await env.submit(tfjob("gone", Chief=replica(1), PS=replica(1), Worker=replica(2)))
        await eventually(lambda: set(env.phases().values()) == {"Running"} and len(env.pods()) == 4)
        await eventually(lambda: len(env.services()) == 4)
        await env.client.delete(TFJOBS, "gone", namespace=NAMESPACE)
        await eventually(lambda: env.job("gone") is None)
        await eventually(lambda: env.pods() == {} and env.services() == {})
    assert op.error is None


async def test_an_invalid_job_fails_with_an_event_and_the_operator_keeps_running(
    env: Cluster,
) -> None:
    op = env.operator()
    async with running(op):
        broken = tfjob("broken", Worker=replica(2))
        broken["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = (
            "trainer"
        )
        await env.submit(broken)
        await env.submit(tfjob("fine", Worker=replica(2)))
        await eventually(lambda: env.condition("broken", "Failed") == ("True", "TFJobInvalid"))
        await eventually(lambda: sorted(env.pods()) == ["fine-worker-0", "fine-worker-1"])
        # The server holds a write before the operator hears back and records its event:
        # wait until the operator is idle, then flush what it recorded.
        await wait_idle(env.server, op.manager)
        await op.manager.recorder("tfjob-controller").flush()
        (event,) = [e for e in env.objects(EVENTS).values() if e["reason"] == "TFJobInvalid"]
        assert event["type"] == "Warning"
        assert 'no container named "tensorflow"' in event["message"]
        assert "spec.tfReplicaSpecs.Worker.template" in event["message"]
    assert op.error is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (("Chief", "replicas"), 2, "spec.tfReplicaSpecs.Chief.replicas"),
        (("Worker", "replicas"), -1, "spec.tfReplicaSpecs.Worker.replicas"),
        (("Worker", "restartPolicy"), "Sometimes", "spec.tfReplicaSpecs.Worker.restartPolicy"),
    ],
)
async def test_the_schema_rejects_what_it_can(
    env: Cluster, field: tuple[str, str], value: object, message: str
) -> None:
    body = tfjob("bad", Chief=replica(1), Worker=replica(1))
    body["spec"]["tfReplicaSpecs"][field[0]][field[1]] = value
    with pytest.raises(Invalid) as rejected:
        await env.submit(body)
    assert message in str(rejected.value)
