import base64
import dataclasses
from typing import Any

import pytest

from etctl.cli._registry import discover
from etctl.common import Capabilities, JobPlugin, JobState, ReplicaRef, SyncPolicy
from etctl.common._phases import Phases
from etctl.jobs.trainingjob._api import TrainingJob
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import CONFIGMAPS, ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS
from tests.jobs.trainingjob.support import job_document, parse, pod, state

READY = {
    "targetWorkers": ["tj-worker-0", "tj-worker-1"],
    "currentWorkers": ["tj-worker-0", "tj-worker-1"],
}
WORKERS = [pod("tj-worker-0"), pod("tj-worker-1")]


def test_every_capability_is_detected() -> None:
    plugin = TrainingJobPlugin()
    core: JobPlugin[TrainingJob] = plugin
    assert isinstance(core, JobPlugin)
    caps = Capabilities.of(plugin)
    for found in (
        caps.services,
        caps.validator,
        caps.pods,
        caps.extra_objects,
        caps.judge,
        caps.planner,
        caps.status,
        caps.restart,
        caps.rbac,
        caps.elastic,
        caps.consumer,
        caps.limits,
        caps.resources,
        caps.files,
        caps.controllers,
    ):
        assert found is plugin
    assert [r.kind for r in plugin.custom_resources] == ["TrainingJob", "ScaleIn", "ScaleOut"]
    assert caps.owned_resources == (SECRETS, SERVICEACCOUNTS, ROLES, ROLEBINDINGS, CONFIGMAPS)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="workers_ready_timeout"):
        TrainingJobPlugin(workers_ready_timeout=0)
    with pytest.raises(ValueError, match="exec_timeout"):
        TrainingJobPlugin(exec_timeout=-1)


def planned(plugin: TrainingJobPlugin, seen: JobState[TrainingJob]) -> JobState[TrainingJob]:
    """``seen`` once the plan phase ran: extra objects read the launcher's plan."""
    return dataclasses.replace(seen, plans=Phases(plugin).plan(seen.job, lambda: seen))


def test_extra_objects_in_et_operators_order() -> None:
    plugin = TrainingJobPlugin()
    early = parse(job_document(status={"targetWorkers": ["tj-worker-0", "tj-worker-1"]}))
    wanted = plugin.extra_objects(early, planned(plugin, state(early, workers=WORKERS)))
    assert [(d.resource, d.name, d.policy) for d in wanted] == [(SECRETS, "tj", SyncPolicy.CREATE)]
    secret = wanted[0].build()
    assert secret["type"] == "kubernetes.io/ssh-auth"
    comment = base64.b64decode(secret["data"]["ssh-publickey"]).decode().split()[-1]
    assert comment == "etctl:ns/tj"
    ready = parse(job_document(status=READY, attach="kubexec"))
    wanted = plugin.extra_objects(ready, planned(plugin, state(ready, workers=WORKERS)))
    assert [(d.resource, d.name) for d in wanted] == [
        (SERVICEACCOUNTS, "tj-launcher"),
        (ROLES, "tj-launcher"),
        (ROLEBINDINGS, "tj-launcher"),
        (CONFIGMAPS, "tj-config"),
    ]
    role = wanted[1].build()
    assert role["rules"][1]["resourceNames"] == ["tj-worker-0", "tj-worker-1"]
    config = wanted[3].build()
    assert config["data"]["hostfile"] == "tj-worker-0:1\ntj-worker-1:1\n"
    assert 'exec "$kubectl" exec "$pod" --container w' in config["data"]["kubexec.sh"]


def test_launcher_objects_stay_wanted_once_they_exist() -> None:
    # Pruning would otherwise delete the launcher's Role when a worker fails.
    plugin = TrainingJobPlugin()
    job = parse(job_document(status=READY, attach="kubexec"))
    children = {CONFIGMAPS: {"tj-config": {"metadata": {"name": "tj-config"}}}}
    wanted = plugin.extra_objects(job, state(job, workers=WORKERS[:1], children=children))
    assert [d.name for d in wanted] == ["tj-launcher", "tj-launcher", "tj-launcher", "tj-config"]


def test_an_existing_secret_is_used_not_generated() -> None:
    plugin = TrainingJobPlugin()
    job = parse(job_document(annotations={"arena.kubeflow.org/ssh-secret": "shared-keys"}))
    assert plugin.extra_objects(job, state(job)) == []
    worker: dict[str, Any] = {
        "metadata": {"name": "tj-worker-0"},
        "spec": {"containers": [{"name": "w"}]},
    }
    plugin.decorate_pod(job, worker, ReplicaRef("Worker", 0, "tj-worker-0"), state(job))
    sources = worker["spec"]["volumes"][0]["projected"]["sources"]
    assert {s["secret"]["name"] for s in sources} == {"shared-keys"}


def test_plan_and_pods() -> None:
    plugin = TrainingJobPlugin()
    job = parse(job_document(status=READY))
    plans = Phases(plugin).plan(job, lambda: state(job, workers=WORKERS))
    assert plans["Launcher"].slots == (ReplicaRef("Launcher", 0, "tj-launcher"),)
    assert plans["Worker"].slots == (
        ReplicaRef("Worker", 0, "tj-worker-0"),
        ReplicaRef("Worker", 1, "tj-worker-1"),
    )
    launcher: dict[str, Any] = {
        "metadata": {"name": "tj-launcher"},
        "spec": {"containers": [{"name": "main"}]},
    }
    plugin.decorate_pod(job, launcher, ReplicaRef("Launcher", 0, "tj-launcher"), state(job))
    assert launcher["spec"]["serviceAccountName"] == "tj-launcher"
    assert launcher["spec"]["initContainers"][0]["image"] == "busybox:1.36"
    assert plugin.build_service(job, ReplicaRef("Launcher", 0, "tj-launcher"), state(job)) is None
    assert plugin.build_service(job, ReplicaRef("Worker", 0, "tj-worker-0"), state(job))


def test_whole_job_restarts_follow_the_job_restart_policy() -> None:
    plugin = TrainingJobPlugin()
    assert not plugin.restarts_on_failure(parse(job_document()))
    assert plugin.restarts_on_failure(parse(job_document(restartPolicy="OnFailure")))


def test_the_plan_only_holds_the_launcher() -> None:
    plugin = TrainingJobPlugin(workers_ready_timeout=30)
    job = parse(job_document())
    plans = Phases(plugin).plan(job, lambda: state(job))
    assert plans["Worker"].gate.open
    assert not plans["Launcher"].gate.open


def test_the_plugin_is_registered_by_entry_point() -> None:
    entry = discover().get("trainingjob")
    assert isinstance(entry.plugin, TrainingJobPlugin)
    assert entry.capabilities.elastic is entry.plugin
    assert [r.kind for r in entry.resources] == ["TrainingJob", "ScaleIn", "ScaleOut"]
