"""Scaler adoption on the embedded API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS
from etctl.common._scaling.adoption import selector_index
from etctl.runtime import Resource, objects
from etctl.testing import eventually
from tests.common.scaling._env import scaling_env


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in status.get("conditions", [])}


def test_selector_index() -> None:
    scaler = {"metadata": {"namespace": "ns"}, "spec": {"selector": {"name": "tj"}}}
    assert selector_index(scaler) == ["ns/tj"]
    assert selector_index({"metadata": {"namespace": "ns"}, "spec": {}}) == []


async def test_a_scaler_is_adopted_by_the_job_it_names(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        job = env.create_job()
        env.create_scaler(SCALEOUTS, "more", {"selector": {"name": "tj"}, "toAdd": {"count": 1}})
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEOUTS, "more")))
        scaler = env.scaler(SCALEOUTS, "more")
        ref = objects.controller_of(scaler)
        assert ref is not None
        assert (ref["kind"], ref["name"], ref["uid"]) == ("TrainingJob", "tj", objects.uid(job))
        assert ref["blockOwnerDeletion"] is True
        assert conditions(env.scaler_status(SCALEOUTS, "more"))["Created"] == ("True", "Adopted")
        assert env.scaler_status(SCALEOUTS, "more")["phase"] == "Created"
        await eventually(lambda: bool(env.events("Adopted")))


async def test_a_scaler_for_a_missing_job_fails_then_is_adopted_when_it_appears(
    tmp_path: Path,
) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_scaler(SCALEINS, "less", {"selector": {"name": "tj"}, "toDelete": {"count": 1}})
        await eventually(lambda: "Failed" in conditions(env.scaler_status(SCALEINS, "less")))
        failed = env.scaler_status(SCALEINS, "less")
        assert conditions(failed)["Failed"] == ("True", "TrainingJobNotFound")
        assert failed["phase"] == "Failed"
        assert (
            f"TrainingJob tj does not exist in namespace {env.ns}"
            in failed["conditions"][0]["message"]
        )
        await eventually(lambda: bool(env.events("TrainingJobNotFound")))
        (event,) = env.events("TrainingJobNotFound")
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "ScaleIn"
        assert objects.controller_of(env.scaler(SCALEINS, "less")) is None
        env.create_job()  # in the same second as the scaler: created with it, so adopted
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEINS, "less")))
        adopted = conditions(env.scaler_status(SCALEINS, "less"))
        assert adopted["Failed"] == ("False", "TrainingJobFound")
        assert adopted["Created"] == ("True", "Adopted")
        assert objects.controller_of(env.scaler(SCALEINS, "less")) is not None


async def test_foreign_and_finished_scalers_are_left_alone(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job()
        # Another controller's object, which exists (an owner that does not would have the
        # garbage collector delete the scaler).
        other = env.storage.create(
            Resource("apps", "v1", "deployments", "Deployment"),
            {
                "metadata": {"name": "other"},
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": "other"}},
                    "template": {
                        "metadata": {"labels": {"app": "other"}},
                        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                    },
                },
            },
            namespace=env.ns,
        )
        foreign = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "other",
            "uid": objects.uid(other),
            "controller": True,
        }
        body = {
            "apiVersion": "kai.alibabacloud.com/v1alpha1",
            "kind": "ScaleOut",
            "metadata": {"name": "theirs", "namespace": env.ns, "ownerReferences": [foreign]},
            "spec": {"selector": {"name": "tj"}, "toAdd": {"count": 1}},
        }
        env.storage.create(SCALEOUTS, body, namespace=env.ns)
        done = env.create_scaler(
            SCALEOUTS, "old", {"selector": {"name": "tj"}, "toAdd": {"count": 1}}
        )
        done["status"] = {"conditions": [{"type": "ScaleSucceeded", "status": "True"}]}
        env.storage.update(SCALEOUTS, done, namespace=env.ns, subresource="status")
        env.create_scaler(SCALEOUTS, "marker", {"selector": {"name": "tj"}, "toAdd": {"count": 1}})
        await eventually(lambda: "Created" in conditions(env.scaler_status(SCALEOUTS, "marker")))
        assert objects.controller_of(env.scaler(SCALEOUTS, "theirs")) == foreign
        assert "conditions" not in env.scaler_status(SCALEOUTS, "theirs")
        assert objects.controller_of(env.scaler(SCALEOUTS, "old")) is None


@pytest.mark.etctl_hooks("the server's clock, which stamps the creation times compared")
async def test_a_scaler_never_acts_on_a_job_created_after_it(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_scaler(SCALEINS, "stale", {"selector": {"name": "tj"}, "toDelete": {"count": 1}})
        await eventually(lambda: "Failed" in conditions(env.scaler_status(SCALEINS, "stale")))
        await env.idle()
        await env.clock.advance(5)  # later, a brand-new job of that name
        env.create_job(replicas=2)
        await eventually(lambda: env.scaler_status(SCALEINS, "stale").get("step") == "Done")
        status = env.scaler_status(SCALEINS, "stale")
        assert conditions(status)["ScaleFailed"] == ("True", "CreatedBeforeJob")
        assert status["phase"] == "ScaleFailed"
        message = status["conditions"][-1]["message"]
        assert message == (
            "ScaleIn stale was created at 2026-01-01T00:00:00Z, before TrainingJob tj (created at "
            "2026-01-01T00:00:05Z): a scaler never acts on a job created after it; create a new "
            "one to resize this job"
        )
        assert objects.controller_of(env.scaler(SCALEINS, "stale")) is None  # never adopted
        await eventually(lambda: bool(env.events("CreatedBeforeJob")))
        # The job runs with the workers it asked for; the scaler is never applied to it.
        await eventually(lambda: len(env.status().get("targetWorkers", [])) == 2)
        env.follow_targets()
        await eventually(lambda: len(env.status().get("currentWorkers", [])) == 2)
        env.launcher()
        env.deliver()
        await env.idle()
        await env.clock.advance(60)
        await env.idle()
        assert env.status()["targetWorkers"] == ["tj-worker-0", "tj-worker-1"]
        assert env.status().get("currentScaler") is None
        assert "Scaling" not in conditions(env.status())
