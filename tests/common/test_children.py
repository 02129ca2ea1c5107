"""Extra objects: drift judged on the plugin's fields only; create, sync and prune end to end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from etctl.common import DesiredObject, JobState
from etctl.common._children import drift
from etctl.runtime import CONFIGMAPS
from tests.common._harness import harness, simplejob
from tests.common.simplejob import SIMPLEJOBS, SimpleJob, SimpleJobPlugin


def test_drift_ignores_fields_the_plugin_does_not_set() -> None:
    live = {
        "metadata": {"labels": {"a": "1", "added-by-someone": "x"}},
        "data": {"peers": "a\n", "extra": "kept"},
        "immutable": False,
    }
    wanted = {"metadata": {"labels": {"a": "1"}}, "data": {"peers": "a\n"}}
    assert drift(live, wanted) == {}


def test_drift_patches_exactly_the_changed_fields() -> None:
    live = {"metadata": {"labels": {"a": "1"}}, "data": {"peers": "a\n"}, "list": [1, 2]}
    wanted = {"metadata": {"labels": {"a": "2"}}, "data": {"peers": "a\nb\n"}, "list": [1]}
    assert drift(live, wanted) == {
        "metadata": {"labels": {"a": "2"}},
        "data": {"peers": "a\nb\n"},
        "list": [1],
    }


async def test_extra_objects_are_created_synced_and_pruned(tmp_path: Path) -> None:
    async with harness(tmp_path) as h:
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        configmap = (await h.objects_of(CONFIGMAPS))["train-peers"]
        assert configmap["metadata"]["labels"] == {
            "training.kubeflow.org/operator-name": "etctl",
            "training.kubeflow.org/job-name": "train",
        }
        # Someone edits what the plugin owns, and adds something it does not.
        await h.client.patch(
            CONFIGMAPS,
            "train-peers",
            {"metadata": {"annotations": {"note": "mine"}}, "data": {"peers": "x", "extra": "y"}},
            namespace=h.ns,
        )
        await h.step("train")
        configmap = (await h.objects_of(CONFIGMAPS))["train-peers"]
        assert configmap["data"] == {"peers": "train-worker-0\n", "extra": "y"}
        assert configmap["metadata"]["annotations"] == {"note": "mine"}
        assert len(await h.events("SuccessfulUpdateConfigMap")) == 1
        # Scaling changes the wanted content: patched again.
        job = await h.job("train")
        job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 2
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        configmap = (await h.objects_of(CONFIGMAPS))["train-peers"]
        assert configmap["data"]["peers"] == "train-worker-0\ntrain-worker-1\n"


async def test_unwanted_extra_objects_are_pruned_and_foreign_ones_left_alone(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, plugin=RenamingPlugin()) as h:
        await h.client.create(CONFIGMAPS, {"metadata": {"name": "other-peers", "namespace": h.ns}})
        await h.submit(simplejob("train", workers=1))
        await h.step("train")
        assert "train-peers" in await h.objects_of(CONFIGMAPS)
        job = await h.job("train")
        job["metadata"].setdefault("annotations", {})["peers-name"] = "other-peers"
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        configmaps = await h.objects_of(CONFIGMAPS)
        assert "train-peers" not in configmaps
        assert "data" not in configmaps["other-peers"]
        (event,) = await h.events("ErrResourceExists")
        assert "configmap other-peers" in event["message"]


class RenamingPlugin(SimpleJobPlugin):
    """Names its ConfigMap after an annotation, so a test can make it want another one."""

    def extra_objects(self, job: SimpleJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        (wanted,) = super().extra_objects(job, state)
        name = job.metadata.annotations.get("peers-name", wanted.name)
        return [DesiredObject(CONFIGMAPS, name, wanted.build)]
