"""Extra objects: drift judged on the plugin's fields only; create, sync and prune end to end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from etctl.common import DesiredObject, JobController, JobState
from etctl.common._children import drift
from etctl.errors import ConfigError
from etctl.runtime import CONFIGMAPS, SERVICES, FakeClock, KubeObject, Resource, objects
from tests.common._harness import harness, simplejob
from tests.common._snapshot import SnapshotCache
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


class JobServicePlugin:
    """SimpleJob without per-slot services, with one headless Service for the whole job."""

    owned_resources: Sequence[Resource] = (SERVICES,)

    def __init__(self) -> None:
        self._core = SimpleJobPlugin()
        self.resource = self._core.resource
        self.model = self._core.model
        self.decorate_pod = self._core.decorate_pod

    def extra_objects(self, job: SimpleJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        name = job.metadata.name

        def build() -> KubeObject:
            selector = {"training.kubeflow.org/job-name": name}
            return {"spec": {"clusterIP": "None", "selector": selector}}

        return [DesiredObject(SERVICES, name, build)]


async def test_a_kind_without_slot_services_may_own_a_job_wide_service(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=JobServicePlugin()) as h:
        await h.submit(simplejob("train", workers=2))
        await h.step("train")
        (service,) = (await h.objects_of(SERVICES)).values()
        assert objects.name(service) == "train"
        assert objects.controller_ref(service) == objects.uid(await h.job("train"))
        # Its creation is observed as an extra object's: the next reconcile is not held back.
        await h.set_phase("train-worker-0", "Running")
        await h.step("train")
        assert (await h.conditions("train"))["Running"][0] == "True"
        # It is not a slot's: suspension keeps it, while the pods go.
        job = await h.job("train")
        job["spec"]["runPolicy"]["suspend"] = True
        await h.client.replace(SIMPLEJOBS, job)
        await h.step("train")
        assert await h.pods() == {}
        assert list(await h.objects_of(SERVICES)) == ["train"]


def test_a_kind_with_slot_services_may_not_own_services_as_well() -> None:
    class Both(SimpleJobPlugin):
        owned_resources: Sequence[Resource] = (CONFIGMAPS, SERVICES)

    with pytest.raises(ConfigError, match="not services when the plugin builds the slots'"):
        JobController(
            Both(),
            client=cast(Any, None),
            cache=cast(Any, SnapshotCache(cast(Any, None), ())),
            recorder=cast(Any, None),
            clock=FakeClock(),
        )
