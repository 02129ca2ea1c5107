import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from etctl.common import JOB_ROLE as LABEL_JOB_ROLE
from etctl.common import (
    BuildsServices,
    Capabilities,
    JobConditionType,
    JobPlugin,
    JobSettings,
    JobState,
    ReplicaRef,
    ReplicaStatus,
    custom_resources,
)
from etctl.common._phases import Phases
from etctl.jobs.tfjob._api import TFJOB, TFJob
from etctl.jobs.tfjob._plugin import (
    REASON_FAILED,
    REASON_RESTARTING,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    TFJobPlugin,
    is_master_role,
    service_ports,
)
from etctl.runtime import KubeObject, ObjectView

PLUGIN = TFJobPlugin()
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def replica(count: int = 1, *, policy: str = "Never", **container: Any) -> dict[str, Any]:
    return {
        "replicas": count,
        "restartPolicy": policy,
        "template": {
            "metadata": {"labels": {"app": "mnist"}},
            "spec": {"containers": [{"name": "tensorflow", "image": "tf:2", **container}]},
        },
    }


def tfjob(*, dynamic: bool = False, policy: str = "", **specs: Any) -> TFJob:
    return TFJob.model_validate(
        {
            "metadata": {"name": "mnist", "namespace": "team", "uid": "u-1"},
            "spec": {
                "tfReplicaSpecs": specs,
                "enableDynamicWorker": dynamic,
                "successPolicy": policy,
            },
        }
    )


def pod(
    rtype: str,
    index: int,
    phase: str,
    *,
    code: int | None = None,
    containers: tuple[tuple[str, int | None], ...] = (),
) -> KubeObject:
    statuses = [(name, c) for name, c in containers] or [("tensorflow", code)]
    return {
        "metadata": {"name": f"mnist-{rtype.lower()}-{index}", "namespace": "team"},
        "spec": {"containers": [{"name": name} for name, _ in statuses]},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {"name": name, "state": {"terminated": {"exitCode": c}}}
                if c is not None
                else {"name": name, "state": {"running": {}}}
                for name, c in statuses
            ],
        },
    }


def state(
    job: TFJob,
    *,
    statuses: dict[str, tuple[int, int, int]] | None = None,
    pods: dict[str, list[ObjectView]] | None = None,
    settings: JobSettings | None = None,
) -> JobState[TFJob]:
    return JobState(
        job=job,
        pods=pods or {},
        services={},
        children={},
        replica_statuses={
            rtype: ReplicaStatus(active=a, succeeded=s, failed=f)
            for rtype, (a, s, f) in (statuses or {}).items()
        },
        now=NOW,
        settings=settings or JobSettings(),
    )


def new_pod(job: TFJob, rtype: str, index: int) -> KubeObject:
    template = copy.deepcopy(job.spec.tf_replica_specs[rtype].template)
    template.setdefault("metadata", {})["name"] = f"mnist-{rtype.lower()}-{index}"
    return template


def ref(rtype: str, index: int) -> ReplicaRef:
    return ReplicaRef(rtype, index, f"mnist-{rtype.lower()}-{index}")


def env_of(obj: KubeObject, container: str = "tensorflow") -> dict[str, str]:
    for item in obj["spec"]["containers"]:
        if item["name"] == container:
            return {e["name"]: e.get("value", "") for e in item.get("env", [])}
    raise AssertionError(container)


# --- the protocol --------------------------------------------------------------------------------


def test_plugin_implements_the_core_and_four_phases() -> None:
    assert isinstance(PLUGIN, JobPlugin)
    assert isinstance(PLUGIN, BuildsServices)
    caps = Capabilities.of(PLUGIN)
    assert (caps.validator, caps.planner, caps.pods, caps.services, caps.judge) == (PLUGIN,) * 5
    assert (caps.extra_objects, caps.status, caps.restart, caps.rbac, caps.elastic) == (None,) * 5
    assert PLUGIN.resource is TFJOB
    assert custom_resources(PLUGIN) == (TFJOB,)
    assert PLUGIN.model is TFJob


def test_validate_reports_a_missing_tensorflow_container() -> None:
    job = TFJob.model_validate(
        {
            "metadata": {"name": "mnist"},
            "spec": {
                "tfReplicaSpecs": {
                    "Worker": {"template": {"spec": {"containers": [{"name": "x", "image": "i"}]}}}
                }
            },
        }
    )
    assert any('no container named "tensorflow"' in p for p in PLUGIN.validate(job))


# --- pods ----------------------------------------------------------------------------------------


def test_decorate_pod_adds_the_port_tf_config_and_keeps_the_template() -> None:
    job = tfjob(PS=replica(1), Worker=replica(2, env=[{"name": "A", "value": "1"}]))
    before = copy.deepcopy(job.spec.tf_replica_specs["Worker"].template)
    obj = new_pod(job, "Worker", 1)
    PLUGIN.decorate_pod(job, obj, ref("Worker", 1), state(job))
    container = obj["spec"]["containers"][0]
    assert container["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
    env = env_of(obj)
    assert env["A"] == "1"
    assert json.loads(env["TF_CONFIG"]) == {
        "cluster": {
            "ps": ["mnist-ps-0.team.svc:2222"],
            "worker": ["mnist-worker-0.team.svc:2222", "mnist-worker-1.team.svc:2222"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    assert LABEL_JOB_ROLE not in obj["metadata"]["labels"]
    assert job.spec.tf_replica_specs["Worker"].template == before


def test_decorate_pod_uses_the_cluster_domain_of_the_settings() -> None:
    job = tfjob(Worker=replica(2))
    obj = new_pod(job, "Worker", 0)
    settings = JobSettings(cluster_domain="cluster.local")
    PLUGIN.decorate_pod(job, obj, ref("Worker", 0), state(job, settings=settings))
    config = json.loads(env_of(obj)["TF_CONFIG"])
    assert config["cluster"]["worker"][1] == "mnist-worker-1.team.svc.cluster.local:2222"


def test_decorate_pod_keeps_a_declared_port_and_replaces_a_template_tf_config() -> None:
    job = tfjob(
        Worker=replica(
            2,
            ports=[{"name": "tfjob-port", "containerPort": 5000}],
            env=[{"name": "TF_CONFIG", "value": "stale"}],
        )
    )
    obj = new_pod(job, "Worker", 0)
    PLUGIN.decorate_pod(job, obj, ref("Worker", 0), state(job))
    container = obj["spec"]["containers"][0]
    assert container["ports"] == [{"name": "tfjob-port", "containerPort": 5000}]
    assert [e["name"] for e in container["env"]] == ["TF_CONFIG"]
    assert json.loads(container["env"][0]["value"])["cluster"]["worker"][0].endswith(":5000")


def test_tf_config_only_on_the_tensorflow_container() -> None:
    job = tfjob(Worker=replica(2))
    obj = new_pod(job, "Worker", 0)
    obj["spec"]["containers"].insert(0, {"name": "sidecar", "image": "s"})
    PLUGIN.decorate_pod(job, obj, ref("Worker", 0), state(job))
    assert "env" not in obj["spec"]["containers"][0]
    assert "TF_CONFIG" in env_of(obj)


def test_a_single_replica_job_gets_no_tf_config() -> None:
    job = tfjob(Worker=replica(1))
    obj = new_pod(job, "Worker", 0)
    PLUGIN.decorate_pod(job, obj, ref("Worker", 0), state(job))
    assert "TF_CONFIG" not in env_of(obj)
    assert obj["spec"]["containers"][0]["ports"][0]["containerPort"] == 2222
    assert obj["metadata"]["labels"][LABEL_JOB_ROLE] == "master"


@pytest.mark.parametrize(
    ("specs", "rtype", "index", "master"),
    [
        ({"Chief": 1, "Worker": 2}, "Chief", 0, True),
        ({"Chief": 1, "Worker": 2}, "Worker", 0, False),
        ({"Master": 1, "Worker": 2}, "Master", 0, True),
        ({"PS": 1, "Worker": 2}, "Worker", 0, True),
        ({"PS": 1, "Worker": 2}, "Worker", 1, False),
        ({"PS": 1, "Worker": 2}, "PS", 0, False),
    ],
)
def test_master_role(specs: dict[str, int], rtype: str, index: int, master: bool) -> None:
    job = TFJob.model_validate(
        {
            "metadata": {"name": "mnist", "namespace": "team"},
            "spec": {"tfReplicaSpecs": {t: replica(n) for t, n in specs.items()}},
        }
    )
    assert is_master_role(job, rtype, index) is master
    obj = new_pod(job, rtype, index)
    PLUGIN.decorate_pod(job, obj, ref(rtype, index), state(job))
    assert (obj["metadata"]["labels"].get(LABEL_JOB_ROLE) == "master") is master


# --- services ------------------------------------------------------------------------------------


def test_build_service_is_headless_and_selects_one_replica() -> None:
    job = tfjob(
        Worker=replica(
            2,
            ports=[
                {"name": "grpc", "containerPort": 9000, "protocol": "TCP"},
                {"containerPort": 9100},
            ],
        )
    )
    svc = PLUGIN.build_service(job, ref("Worker", 1), state(job))
    assert svc is not None
    assert svc["metadata"]["name"] == "mnist-worker-1"
    assert svc["metadata"]["namespace"] == "team"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {
        "training.kubeflow.org/operator-name": "etctl",
        "training.kubeflow.org/job-name": "mnist",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    assert svc["metadata"]["labels"] == svc["spec"]["selector"]
    assert svc["spec"]["ports"] == [
        {"name": "grpc", "port": 9000, "protocol": "TCP"},
        {"name": "port-9100", "port": 9100},
        {"name": "tfjob-port", "port": 2222},
    ]


def test_service_ports_of_a_plain_container_is_the_default_port() -> None:
    job = tfjob(PS=replica(1))
    assert service_ports(job.spec.tf_replica_specs["PS"]) == [{"name": "tfjob-port", "port": 2222}]


def test_build_service_for_an_unknown_type_is_none() -> None:
    job = tfjob(Worker=replica(1))
    assert PLUGIN.build_service(job, ref("PS", 0), state(job)) is None


# --- verdicts ------------------------------------------------------------------------------------


def condition(job: TFJob, **kwargs: Any) -> tuple[str, str] | None:
    verdict = PLUGIN.verdict(job, state(job, **kwargs))
    return None if verdict is None else (verdict.condition.value, verdict.reason)


RUNNING = (JobConditionType.RUNNING.value, REASON_RUNNING)
SUCCEEDED = (JobConditionType.SUCCEEDED.value, REASON_SUCCEEDED)
FAILED = (JobConditionType.FAILED.value, REASON_FAILED)
RESTARTING = (JobConditionType.RESTARTING.value, REASON_RESTARTING)


def test_nothing_to_say_while_pods_are_pending() -> None:
    job = tfjob(PS=replica(1), Worker=replica(2))
    assert condition(job, statuses={"PS": (0, 0, 0), "Worker": (0, 0, 0)}) is None


def test_chief_decides_running_and_success() -> None:
    job = tfjob(Chief=replica(1), Worker=replica(2))
    assert condition(job, statuses={"Chief": (0, 0, 0), "Worker": (2, 0, 0)}) is None
    assert condition(job, statuses={"Chief": (1, 0, 0), "Worker": (0, 0, 0)}) == RUNNING
    # Workers still running do not hold back a chief that finished.
    assert condition(job, statuses={"Chief": (0, 1, 0), "Worker": (2, 0, 0)}) == SUCCEEDED
    # All workers done means nothing while the chief runs.
    assert condition(job, statuses={"Chief": (1, 0, 0), "Worker": (0, 2, 0)}) == RUNNING


def test_worker_zero_decides_with_the_default_policy() -> None:
    job = tfjob(PS=replica(1), Worker=replica(3))
    worker0 = pod("Worker", 0, "Succeeded", code=0)
    others = [pod("Worker", 1, "Running"), pod("Worker", 2, "Running")]
    statuses = {"PS": (1, 0, 0), "Worker": (2, 1, 0)}
    assert condition(job, statuses=statuses, pods={"Worker": [worker0, *others]}) == SUCCEEDED
    # Another worker finishing first is not enough.
    worker1 = pod("Worker", 1, "Succeeded", code=0)
    running = [pod("Worker", 0, "Running"), pod("Worker", 2, "Running")]
    assert condition(job, statuses=statuses, pods={"Worker": [worker1, *running]}) == RUNNING


def test_all_workers_policy_waits_for_every_worker() -> None:
    job = tfjob(policy="AllWorkers", PS=replica(1), Worker=replica(2))
    worker0 = pod("Worker", 0, "Succeeded", code=0)
    pods: dict[str, list[ObjectView]] = {"Worker": [worker0, pod("Worker", 1, "Running")]}
    assert condition(job, statuses={"Worker": (1, 1, 0)}, pods=pods) == RUNNING
    assert condition(job, statuses={"Worker": (0, 2, 0)}) == SUCCEEDED


def test_a_failed_replica_with_never_fails_the_job() -> None:
    job = tfjob(PS=replica(1), Worker=replica(2))
    pods: dict[str, list[ObjectView]] = {"PS": [pod("PS", 0, "Failed", code=1)]}
    verdict = PLUGIN.verdict(
        job, state(job, statuses={"PS": (0, 0, 1), "Worker": (2, 0, 0)}, pods=pods)
    )
    assert verdict is not None
    assert (verdict.condition.value, verdict.reason) == FAILED
    assert verdict.message == "TFJob mnist failed: 1 PS replica failed."


def test_a_failure_overrides_a_chief_success() -> None:
    job = tfjob(Chief=replica(1), PS=replica(1))
    pods: dict[str, list[ObjectView]] = {"PS": [pod("PS", 0, "Failed", code=2)]}
    assert condition(job, statuses={"Chief": (0, 1, 0), "PS": (0, 0, 1)}, pods=pods) == FAILED


def test_restartable_failures_restart_the_job() -> None:
    job = tfjob(PS=replica(1, policy="OnFailure"), Worker=replica(2, policy="ExitCode"))
    ps_failed: dict[str, list[ObjectView]] = {"PS": [pod("PS", 0, "Failed", code=1)]}
    assert condition(job, statuses={"PS": (0, 0, 1), "Worker": (0, 0, 0)}, pods=ps_failed) == (
        RESTARTING
    )
    # ExitCode: 137 (killed) is retryable, so is an evicted pod without any exit code.
    for failed in (pod("Worker", 1, "Failed", code=137), pod("Worker", 1, "Failed")):
        pods: dict[str, list[ObjectView]] = {"Worker": [pod("Worker", 0, "Running"), failed]}
        assert condition(job, statuses={"Worker": (1, 0, 1)}, pods=pods) == RESTARTING


def test_exit_code_policy_fails_on_a_permanent_code() -> None:
    job = tfjob(Worker=replica(2, policy="ExitCode"))
    pods: dict[str, list[ObjectView]] = {
        "Worker": [pod("Worker", 0, "Running"), pod("Worker", 1, "Failed", code=3)]
    }
    assert condition(job, statuses={"Worker": (1, 0, 1)}, pods=pods) == FAILED


def test_failures_already_restarted_do_not_count() -> None:
    job = tfjob(Worker=replica(2, policy="OnFailure"))
    assert condition(job, statuses={"Worker": (2, 0, 1)}) == RUNNING
    never = tfjob(Worker=replica(2))
    assert condition(never, statuses={"Worker": (1, 0, 1)}) == FAILED


def test_a_later_running_type_replaces_restarting() -> None:
    job = tfjob(PS=replica(1, policy="OnFailure"), Worker=replica(2))
    pods: dict[str, list[ObjectView]] = {"PS": [pod("PS", 0, "Failed", code=1)]}
    # The PS restarts while the workers run: the Worker rule comes later and says Running, as in
    # kubeflow, where Running replaces Restarting.
    assert condition(job, statuses={"PS": (0, 0, 1), "Worker": (2, 0, 0)}, pods=pods) == RUNNING
    # A restarting Worker comes after the chief's Running.
    job_chief = tfjob(Chief=replica(1), Worker=replica(2, policy="OnFailure"))
    pods = {"Worker": [pod("Worker", 0, "Failed", code=1)]}
    statuses = {"Chief": (1, 0, 0), "Worker": (1, 0, 1)}
    assert condition(job_chief, statuses=statuses, pods=pods) == RESTARTING


def test_dynamic_workers_may_fail() -> None:
    job = tfjob(dynamic=True, PS=replica(1), Worker=replica(3))
    pods: dict[str, list[ObjectView]] = {
        "Worker": [pod("Worker", 0, "Running"), pod("Worker", 1, "Failed", code=1)]
    }
    assert condition(job, statuses={"PS": (1, 0, 0), "Worker": (2, 0, 1)}, pods=pods) == RUNNING
    ps_failed: dict[str, list[ObjectView]] = {"PS": [pod("PS", 0, "Failed", code=1)]}
    assert condition(job, statuses={"PS": (0, 0, 1), "Worker": (2, 0, 0)}, pods=ps_failed) == FAILED


def test_evaluator_failure_fails_the_job_but_never_decides_success() -> None:
    job = tfjob(Chief=replica(1), Evaluator=replica(1))
    assert condition(job, statuses={"Chief": (0, 0, 0), "Evaluator": (0, 1, 0)}) is None
    pods: dict[str, list[ObjectView]] = {"Evaluator": [pod("Evaluator", 0, "Failed", code=1)]}
    assert (
        condition(job, statuses={"Chief": (1, 0, 0), "Evaluator": (0, 0, 1)}, pods=pods) == FAILED
    )


def test_verdict_is_pure() -> None:
    job = tfjob(PS=replica(1), Worker=replica(2))
    st = state(job, statuses={"Worker": (2, 0, 0)})
    assert PLUGIN.verdict(job, st) == PLUGIN.verdict(job, st)


# --- plan --------------------------------------------------------------------------------------


def named(job: TFJob, name: str, *, started: bool = False) -> TFJob:
    update: dict[str, Any] = {"metadata": job.metadata.model_copy(update={"name": name})}
    if started:
        update["status"] = job.status.model_copy(update={"start_time": NOW})
    return job.model_copy(update=update)


def test_dynamic_workers_are_planned_as_far_as_their_names_fit() -> None:
    job = named(tfjob(dynamic=True, PS=replica(1), Worker=replica(12)), "d" * 54, started=True)
    plans = Phases(PLUGIN).plan(job, lambda: state(job))
    assert [r.index for r in plans["Worker"].slots] == list(range(10))
    assert plans["Worker"].warning is not None
    assert plans["Worker"].warning[0] == "ReplicasClamped"
    assert len(plans["PS"].slots) == 1
    assert plans["PS"].warning is None
    # A started dynamic job is valid whatever its Worker replicas: the plan limits them.
    assert PLUGIN.validate(job) == []
    # Before it started, the names must fit, as for any TFJob.
    new = named(tfjob(dynamic=True, PS=replica(1), Worker=replica(12)), "d" * 54)
    assert PLUGIN.validate(new)


def test_static_workers_are_planned_as_the_spec_says() -> None:
    job = tfjob(PS=replica(1), Worker=replica(3))
    plans = Phases(PLUGIN).plan(job, lambda: state(job))
    assert [r.name for r in plans["Worker"].slots] == [f"mnist-worker-{i}" for i in range(3)]
    assert plans["Worker"].warning is None
