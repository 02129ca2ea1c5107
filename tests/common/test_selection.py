"""The job controller caches what the operator could own, and claims it as before.

Child informers select the operator's ``operator-name`` label: the rest of the cluster's pods,
services and ConfigMaps never reach the cache. Claiming keeps its rules: a labelled orphan is
adopted, a child relabelled out of the job's selector is released, and a name taken by an object
the job does not control is reported (from a fresh read when the cache cannot hold that object).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etctl.common import JobSettings
from etctl.runtime import CONFIGMAPS, PODS, SERVICES, objects
from etctl.runtime._informer import Informer
from etctl.testing import eventually, wait_idle
from tests._cluster import cluster
from tests.common._harness import simplejob
from tests.common.simplejob import SimpleJobPlugin
from tests.runtime._realtime import running

OURS = "training.kubeflow.org/operator-name"


def pod(name: str, ns: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def worker_labels(job: str, index: int, operator: str = "etctl") -> dict[str, str]:
    return {
        OURS: operator,
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": str(index),
    }


async def test_the_cluster_outside_the_operator_labels_is_never_cached(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        await c.client.create(PODS, pod("web-0", c.ns, {"app": "web"}))
        await c.client.create(PODS, pod("other-op", c.ns, worker_labels("train", 5, "another-op")))
        await c.client.create(CONFIGMAPS, {"metadata": {"name": "team-config", "namespace": c.ns}})
        op = c.operator(settings=JobSettings())
        cache = op.manager.cache
        async with running(op):
            await c.submit(simplejob("train", workers=2, leader=True))
            await eventually(lambda: len(c.pods()) == 4)
            c.set_phase("train-worker-0", "Running")
            c.set_phase("train-worker-1", "Running")
            await eventually(lambda: "train-leader-0" in c.pods())
            await wait_idle(c.idle, op.manager)
            assert {objects.name(p) for p in cache.list(PODS)} == {
                "train-worker-0",
                "train-worker-1",
                "train-leader-0",
            }
            assert {objects.name(s) for s in cache.list(SERVICES)} == {"train-leader-0"}
            assert {objects.name(m) for m in cache.list(CONFIGMAPS)} == {"train-peers"}
            assert cache.get(PODS, "web-0", namespace=c.ns) is None
            for source in op.manager.controllers[0].sources[1:]:
                assert isinstance(source, Informer)
                assert source.label_selector == f"{OURS}=etctl"
        assert op.error is None


async def test_an_orphan_carrying_the_labels_is_adopted(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        orphan = await c.client.create(PODS, pod("train-worker-0", c.ns, worker_labels("train", 0)))
        op = c.operator()
        async with running(op):
            job = await c.submit(simplejob("train", workers=2))
            await eventually(lambda: len(c.pods()) == 2)
            await eventually(
                lambda: objects.controller_ref(c.pods()["train-worker-0"]) == objects.uid(job)
            )
            assert objects.uid(c.pods()["train-worker-0"]) == objects.uid(orphan)
        assert op.error is None


async def test_a_name_taken_by_an_object_the_cache_cannot_hold_is_reported(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        squatter = await c.client.create(PODS, pod("train-worker-1", c.ns, {"app": "debug"}))
        op = c.operator()
        async with running(op):
            await c.submit(simplejob("train", workers=2))
            await eventually(lambda: len(c.events("ErrResourceExists")) == 1)
            (event,) = c.events("ErrResourceExists")
            assert event["type"] == "Warning"
            assert "pod train-worker-1 already exists and is not controlled by" in event["message"]
            await wait_idle(c.idle, op.manager)
            left = c.pods()["train-worker-1"]
            assert objects.uid(left) == objects.uid(squatter)
            assert not objects.owner_references(left)
            assert sorted(c.pods()) == ["train-worker-0", "train-worker-1"]
        assert op.error is None


async def test_a_child_relabelled_out_of_the_selection_is_released(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(simplejob("train", workers=1))
            await eventually(lambda: "train-worker-0" in c.pods())
            await wait_idle(c.idle, op.manager)
            relabelled = {"metadata": {"labels": {OURS: "someone-else"}}}
            await c.client.patch(PODS, "train-worker-0", relabelled, namespace=c.ns)
            # The cache no longer holds it: the job tries the name again, finds its own child
            # under another operator's label, and releases it as claiming would have.
            await eventually(lambda: not objects.owner_references(c.pods()["train-worker-0"]))
            await eventually(lambda: len(c.events("ErrResourceExists")) == 1)
            await wait_idle(c.idle, op.manager)
            assert sorted(c.pods()) == ["train-worker-0"]
        assert op.error is None
