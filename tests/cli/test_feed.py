"""The demo's feed: list and watch of a job's objects, every state queued, watches restarted.

The feed follows the demo's job in the test's namespace of the cluster under test.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from etctl.cli._demo_manifests import JOB, scaleout_manifest, trainingjob_manifest
from etctl.cli._feed import Feed
from etctl.cli._jobkinds import JobKind
from etctl.cli._jobview import Snapshot
from etctl.common import JOB_NAME, SCALEOUTS, crd_manifest
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import PODS, KubeObject, Resource
from etctl.testing import ClusterTarget, Fault, cluster_target
from tests.common._harness import NO_SCHEDULER
from tests.runtime._realtime import client_of

KIND = JobKind.of(TrainingJobPlugin(), "trainingjob")
CRDS = [crd_manifest(resource) for resource in TrainingJobPlugin().custom_resources]


def pod(name: str, job: str = JOB) -> dict[str, Any]:
    """A pod of the job that nothing schedules (its status stays the test's to write)."""
    return {
        "metadata": {"name": name, "labels": {JOB_NAME: job}},
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


def create(target: ClusterTarget, res: Resource, body: dict[str, Any]) -> KubeObject:
    """Create ``body`` in the test's namespace."""
    metadata = {**body["metadata"], "namespace": target.namespace}
    return target.storage.create(res, {**body, "metadata": metadata}, namespace=target.namespace)


@asynccontextmanager
async def following(target: ClusterTarget) -> AsyncIterator[Feed]:
    async with client_of(target) as client, asyncio.TaskGroup() as group:
        feed = Feed(client, KIND, namespace=target.namespace, job=JOB)
        task = group.create_task(feed.run(), name="test:feed")
        try:
            await asyncio.wait_for(feed.wait_synced(), timeout=5)
            yield feed
        finally:
            task.cancel()


async def states_until(feed: Feed, done: Callable[[Snapshot], bool]) -> list[Snapshot]:
    """Every state the feed queues until one satisfies ``done`` (bounded, real time)."""
    seen: list[Snapshot] = []
    async with asyncio.timeout(5):
        while not seen or not done(seen[-1]):
            await feed.wait(1.0)
            seen += feed.pending()
    return seen


async def test_the_first_lists_give_the_current_state(tmp_path: Path) -> None:
    async with cluster_target(tmp_path, crds=CRDS) as target:
        create(target, TRAININGJOBS, trainingjob_manifest())
        create(target, PODS, pod("elastic-mnist-worker-0"))
        create(target, PODS, pod("other-worker-0", job="other"))
        async with following(target) as feed:
            assert feed.synced
            latest = feed.latest()
            assert latest.job is not None
            worker = latest.job.replica("worker")
            assert worker is not None
            assert worker.desired == 3
            # Only the job's own pods, by the job-name label.
            assert list(latest.pods) == ["elastic-mnist-worker-0"]
            assert latest.pods["elastic-mnist-worker-0"].status == "Pending"


async def test_every_state_is_queued_in_order_even_short_lived_ones(tmp_path: Path) -> None:
    async with cluster_target(tmp_path, crds=CRDS) as target, following(target) as feed:
        feed.pending()
        created = create(target, SCALEOUTS, scaleout_manifest(2))
        for step in ("Creating", "Joining", "Finishing", "Done"):
            created = copy.deepcopy(dict(created))
            created["status"] = {"step": step}
            created = target.storage.update(
                SCALEOUTS, created, namespace=target.namespace, subresource="status"
            )
        key = "scaleout/elastic-mnist-scale-out"
        states = await states_until(
            feed, lambda s: key in s.scalers and s.scalers[key].step == "Done"
        )
        steps = [state.scalers[key].step for state in states if key in state.scalers]
        assert steps == ["", "Creating", "Joining", "Finishing", "Done"]
        # A scaler naming another job is not the job's.
        other = scaleout_manifest(1)
        other["metadata"]["name"] = "other-scale-out"
        other["spec"]["selector"]["name"] = "other"
        create(target, SCALEOUTS, other)
        create(target, PODS, pod("elastic-mnist-worker-0"))
        states = await states_until(feed, lambda s: "elastic-mnist-worker-0" in s.pods)
        assert list(states[-1].scalers) == [key]


async def test_a_deleted_object_leaves_the_state(tmp_path: Path) -> None:
    async with cluster_target(tmp_path, crds=CRDS) as target:
        create(target, TRAININGJOBS, trainingjob_manifest())
        async with following(target) as feed:
            assert feed.latest().job is not None
            target.storage.delete(TRAININGJOBS, JOB, namespace=target.namespace)
            states = await states_until(feed, lambda s: s.job is None)
            assert states[-1].job is None


@pytest.mark.etctl_hooks("fault injection: a dropped watch")
async def test_a_dropped_watch_is_started_again_from_a_new_list(tmp_path: Path) -> None:
    async with cluster_target(tmp_path, crds=CRDS) as target:
        server = target.hooks
        dropped = server.inject(Fault(verb="watch", resource="pods", drop_watch=True, times=1))
        async with following(target) as feed:
            create(target, PODS, pod("elastic-mnist-worker-0"))
            states = await states_until(feed, lambda s: "elastic-mnist-worker-0" in s.pods)
            assert states[-1].pods["elastic-mnist-worker-0"].status == "Pending"
        assert dropped.fired == 1
        # The first list, then the list after the dropped watch.
        assert len(server.requests.find(verb="list", resource="pods")) >= 2
