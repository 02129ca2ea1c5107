"""Extra objects: drift judged on the plugin's fields only; create, sync and prune end to end."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from etctl.common import DesiredObject, JobState
from etctl.common._children import drift
from etctl.errors import ServerError
from etctl.runtime import CONFIGMAPS, PODS, SERVICES, KubeObject, Resource, objects
from etctl.testing import Fault, eventually
from tests.common._harness import Harness, harness, simplejob
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


async def _suspended_keeps_only_the_job_service(h: Harness) -> None:
    job = await h.job("train")
    job["spec"]["runPolicy"]["suspend"] = True
    await h.client.replace(SIMPLEJOBS, job)
    await h.step("train")
    assert await h.pods() == {}
    assert list(await h.objects_of(SERVICES)) == ["train"]


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
        await _suspended_keeps_only_the_job_service(h)


class SlotAndJobServicesPlugin(SimpleJobPlugin):
    """SimpleJob (the Leader's slot service), with one headless Service for the whole job too."""

    owned_resources: Sequence[Resource] = (CONFIGMAPS, SERVICES)

    def extra_objects(self, job: SimpleJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        return [*super().extra_objects(job, state), *JobServicePlugin().extra_objects(job, state)]


async def test_a_kind_with_slot_services_may_own_job_wide_services_too(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=SlotAndJobServicesPlugin()) as h:
        await h.submit(simplejob("train", workers=1, leader=True))
        await h.step("train")
        assert sorted(await h.objects_of(SERVICES)) == ["train", "train-leader-0"]
        # Neither is taken for a stray of the other's kind: the next reconciles delete nothing.
        await h.step("train")
        await h.step("train")
        services = await h.objects_of(SERVICES)
        assert sorted(services) == ["train", "train-leader-0"]
        assert all(not objects.is_terminating(s) for s in services.values())
        # The slot's service goes with its pod on suspension; the job's stays, as extras do.
        await _suspended_keeps_only_the_job_service(h)


class LateConfigMapPlugin(SimpleJobPlugin):
    """SimpleJob with a ConfigMap no pod needs at creation, written with the pods."""

    def extra_objects(self, job: SimpleJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        def build() -> KubeObject:
            return {"data": {"late": "1"}}

        late = DesiredObject(CONFIGMAPS, f"{job.metadata.name}-late", build, with_pods=True)
        return [*super().extra_objects(job, state), late]


@pytest.mark.etctl_hooks("fault injection: an extra object's create held on the server")
async def test_an_extra_object_with_pods_is_written_with_them(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=LateConfigMapPlugin()) as h:
        await h.submit(simplejob("train", workers=2))
        held = h.server.inject(
            Fault(verb="create", resource="configmaps", body_contains="train-late", delay=30)
        )
        step = asyncio.create_task(h.step("train"))
        # The pods are created while the ConfigMap's create waits: they do not wait for it.
        await eventually(lambda: len(h.server.storage.list(PODS, namespace=h.ns).items) == 2)
        assert held.fired == 1
        configmaps = await h.objects_of(CONFIGMAPS)
        assert "train-late" not in configmaps
        assert "train-peers" in configmaps  # an ordinary extra object was written before
        await h.clock.advance(30)
        await asyncio.wait_for(step, 10)
        assert "train-late" in await h.objects_of(CONFIGMAPS)
        assert (await h.conditions("train"))["Created"][0] == "True"


@pytest.mark.etctl_hooks("fault injection: an extra object written with the pods refused")
async def test_an_extra_object_with_pods_failing_does_not_stop_them(tmp_path: Path) -> None:
    async with harness(tmp_path, plugin=LateConfigMapPlugin()) as h:
        await h.submit(simplejob("train", workers=2))
        h.server.inject(
            Fault(verb="create", resource="configmaps", body_contains="train-late", status=500)
        )
        with pytest.raises(ServerError):
            await h.step("train")
        assert sorted(await h.pods()) == ["train-worker-0", "train-worker-1"]
        await h.step("train")
        assert "train-late" in await h.objects_of(CONFIGMAPS)
