"""Claiming children end to end: adopt orphans safely, release strays, never touch foreigners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etctl.runtime import CONFIGMAPS, PODS, objects
from tests.common._harness import NO_SCHEDULER, harness, simplejob
from tests.common.simplejob import SIMPLEJOBS

LABELS = {
    "training.kubeflow.org/operator-name": "etctl",
    "training.kubeflow.org/job-name": "train",
    "training.kubeflow.org/replica-type": "worker",
}


def pod(name: str, index: int, ns: str, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {**LABELS, "training.kubeflow.org/replica-index": str(index)},
            **meta,
        },
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


async def test_orphans_are_adopted_and_foreign_pods_left_alone(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        other = await h.client.create(
            CONFIGMAPS, {"metadata": {"name": "other", "namespace": h.ns}}
        )
        foreign_owner = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "other",
            "uid": objects.uid(other),
            "controller": True,
        }
        orphan = await h.client.create(PODS, pod("train-worker-0", 0, h.ns))
        await h.client.create(PODS, pod("train-worker-1", 1, h.ns, ownerReferences=[foreign_owner]))
        job = await h.submit(simplejob("train", workers=3))
        await h.step("train")
        pods = await h.pods()
        assert sorted(pods) == ["train-worker-0", "train-worker-1", "train-worker-2"]
        adopted = pods["train-worker-0"]
        assert objects.uid(adopted) == objects.uid(orphan)
        assert objects.controller_ref(adopted) == objects.uid(job)
        assert objects.controller_ref(pods["train-worker-1"]) == objects.uid(other)
        (event,) = await h.events("ErrResourceExists")
        assert "train-worker-1" in event["message"]
        assert event["type"] == "Warning"
        # The job counts only what it controls.
        for name in pods:
            await h.set_phase(name, "Running")
        await h.step("train")
        status = (await h.job("train"))["status"]
        assert status["replicaStatuses"]["Worker"]["active"] == 2


async def test_an_orphan_under_a_name_the_job_never_gives_is_left_alone(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        stranger = await h.client.create(PODS, pod("debug-shell", 0, h.ns))
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        await h.step("train")
        pods = await h.pods()
        assert sorted(pods) == ["debug-shell", "train-worker-0"]
        # Same labels as the job's own pod, but not a name the job gives: not adopted, not
        # deleted as surplus, not counted.
        kept = pods["debug-shell"]
        assert objects.uid(kept) == objects.uid(stranger)
        assert not objects.owner_references(kept)
        await h.set_phase("train-worker-0", "Running")
        await h.step("train")
        status = (await h.job("train"))["status"]
        assert status["replicaStatuses"]["Worker"]["active"] == 1


async def test_a_relabelled_pod_is_released(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        await h.client.patch(
            PODS,
            "train-worker-0",
            {"metadata": {"labels": {"training.kubeflow.org/job-name": "mine-now"}}},
            namespace=h.ns,
        )
        await h.step("train")
        released = (await h.pods())["train-worker-0"]
        assert not objects.owner_references(released)
        # Its name is taken by an object the job no longer controls: left alone, with a warning.
        await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0"]
        assert len(await h.events("ErrResourceExists")) == 1


async def test_no_adoption_into_a_job_being_deleted(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        body = simplejob("train", workers=1)
        body["metadata"]["finalizers"] = ["example.etctl.io/hold"]
        await h.submit(body)
        await h.client.create(PODS, pod("train-worker-0", 0, h.ns))
        await h.cache.refresh()
        await h.client.delete(SIMPLEJOBS, "train", namespace=h.ns)
        # The cache has not seen the deletion; the fresh read before adopting has.
        await h.step("train", refresh=False)
        orphan = (await h.pods())["train-worker-0"]
        assert not objects.owner_references(orphan)
        # Once the cache shows the deletion, the controller does nothing at all.
        await h.step("train")
        assert not objects.owner_references((await h.pods())["train-worker-0"])
