"""The TFJob operator end to end: Manager, informers, JobController and the TFJob plugin, running
pods on the embedded API server's simulated kubelet."""

from __future__ import annotations

import copy
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from etctl.common import JOB_ROLE, JobSettings, replica_labels
from etctl.jobs.tfjob import TFJobPlugin
from etctl.jobs.tfjob._api import TFJOBS
from etctl.runtime import EVENTS, objects
from etctl.testing import Fault, KubeletConfig, eventually, wait_idle
from tests._cluster import Cluster, Operator, cluster
from tests._logs import captured_logs
from tests.jobs.tfjob._manifests import NAMESPACE, replica, tf_config, tfjob
from tests.runtime._realtime import running

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet plays the TFJob containers (image tf:2) and their exits"
)


def running_pods(c: Cluster, *names: str) -> bool:
    phases = c.phases()
    return all(phases.get(name) == "Running" for name in names)


async def test_ps_and_workers_run_to_success(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            job = await c.submit(tfjob("mnist", PS=replica(2), Worker=replica(3)))
            names = [
                "mnist-ps-0",
                "mnist-ps-1",
                "mnist-worker-0",
                "mnist-worker-1",
                "mnist-worker-2",
            ]
            await eventually(lambda: running_pods(c, *names))
            await eventually(lambda: c.state("mnist") == "Running")
            assert c.condition("mnist", "Running") == ("True", "TFJobRunning")

            pods = c.pods()
            assert sorted(pods) == names
            for name, pod in pods.items():
                assert objects.controller_ref(pod) == objects.uid(job)
                rtype, index = name.split("-")[1:]
                assert (
                    replica_labels("mnist", "etctl", rtype, int(index)).items()
                    <= objects.labels(pod).items()
                )
                container = pod["spec"]["containers"][0]
                assert {
                    "name": "tfjob-port",
                    "containerPort": 2222,
                    "protocol": "TCP",
                } in container["ports"]
                assert pod["spec"]["restartPolicy"] == "Never"
            assert objects.labels(pods["mnist-worker-0"])[JOB_ROLE] == "master"
            assert JOB_ROLE not in objects.labels(pods["mnist-worker-1"])
            assert tf_config(pods["mnist-worker-1"]) == {
                "cluster": {
                    "ps": ["mnist-ps-0.default.svc:2222", "mnist-ps-1.default.svc:2222"],
                    "worker": [
                        "mnist-worker-0.default.svc:2222",
                        "mnist-worker-1.default.svc:2222",
                        "mnist-worker-2.default.svc:2222",
                    ],
                },
                "task": {"type": "worker", "index": 1},
                "environment": "cloud",
            }
            assert tf_config(pods["mnist-ps-0"])["task"] == {"type": "ps", "index": 0}  # type: ignore[index]

            services = c.services()
            assert sorted(services) == names
            svc = services["mnist-ps-1"]
            assert svc["spec"]["clusterIP"] == "None"
            assert svc["spec"]["selector"] == replica_labels("mnist", "etctl", "ps", 1)
            assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("tfjob-port", 2222)]
            assert objects.controller_ref(svc) == objects.uid(job)

            # Worker 0 decides with the default success policy.
            c.exit("mnist-worker-0", 0)
            await eventually(lambda: c.state("mnist") == "Succeeded")
            assert c.condition("mnist", "Succeeded") == ("True", "TFJobSucceeded")
            assert c.condition("mnist", "Running") == ("False", "TFJobRunning")
            status = c.status("mnist")
            assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
            assert status["completionTime"]
            # cleanPodPolicy None (the TFJob default) leaves every pod.
            assert sorted(c.pods()) == names
            # The server holds a write before the operator hears back and records its event:
            # wait until the operator is idle, then flush what it recorded.
            await wait_idle(c.server, op.manager)
            await op.manager.recorder("tfjob-controller").flush()
            reasons = {e["reason"] for e in c.objects(EVENTS).values()}
            assert {
                "TFJobCreated",
                "SuccessfulCreatePod",
                "SuccessfulCreateService",
                "TFJobSucceeded",
            } <= reasons
        assert op.error is None


async def test_a_chief_decides_success(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(tfjob("est", Chief=replica(1), Worker=replica(2)))
            await eventually(lambda: running_pods(c, "est-chief-0", "est-worker-0", "est-worker-1"))
            await eventually(lambda: c.state("est") == "Running")
            pods = c.pods()
            assert objects.labels(pods["est-chief-0"])[JOB_ROLE] == "master"
            assert JOB_ROLE not in objects.labels(pods["est-worker-0"])
            c.exit("est-worker-0", 0)
            c.exit("est-worker-1", 0)
            await eventually(lambda: c.phases()["est-worker-1"] == "Succeeded")
            assert c.state("est") == "Running"
            c.exit("est-chief-0", 0)
            await eventually(lambda: c.state("est") == "Succeeded")
        assert op.error is None


async def test_a_job_is_running_only_once_its_chief_runs(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            chief = replica(1, annotations={"sim.etctl.io/start-delay": "30"})
            await c.submit(tfjob("est", Chief=chief, Worker=replica(2)))
            await eventually(lambda: running_pods(c, "est-worker-0", "est-worker-1"))
            await wait_idle(c.server, op.manager)
            # kubeflow counts Running pods as active: a Pending chief does not run the job.
            assert c.phases()["est-chief-0"] == "Pending"
            assert c.condition("est", "Running") is None
            replicas = c.status("est")["replicaStatuses"]
            assert replicas["Chief"].get("active", 0) == 0
            assert replicas["Worker"]["active"] == 2
            await c.clock.advance(30)
            await eventually(lambda: c.state("est") == "Running")
            assert c.status("est")["replicaStatuses"]["Chief"]["active"] == 1
        assert op.error is None


async def test_all_workers_policy_waits_for_every_worker(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(
                tfjob("all", success_policy="AllWorkers", PS=replica(1), Worker=replica(2))
            )
            await eventually(lambda: running_pods(c, "all-ps-0", "all-worker-0", "all-worker-1"))
            await eventually(lambda: c.state("all") == "Running")
            c.exit("all-worker-0", 0)
            await eventually(lambda: c.status("all")["replicaStatuses"]["Worker"]["succeeded"] == 1)
            assert c.state("all") == "Running"
            c.exit("all-worker-1", 0)
            await eventually(lambda: c.state("all") == "Succeeded")
        assert op.error is None


async def test_exit_code_restarts_a_retryable_failure_and_fails_on_a_permanent_one(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(tfjob("ec", PS=replica(1), Worker=replica(2, policy="ExitCode")))
            await eventually(lambda: running_pods(c, "ec-ps-0", "ec-worker-0", "ec-worker-1"))
            await eventually(lambda: c.state("ec") == "Running")
            first = objects.uid(c.pods()["ec-worker-1"])

            c.exit("ec-worker-1", 137)  # killed: retryable
            await eventually(lambda: c.status("ec").get("restartCount") == 1)
            await eventually(
                lambda: (
                    "ec-worker-1" in c.live_pods()
                    and objects.uid(c.live_pods()["ec-worker-1"]) != first
                )
            )
            await eventually(lambda: running_pods(c, "ec-worker-1"))
            # The server holds a write before the operator hears back and records its event:
            # wait until the operator is idle, then flush what it recorded.
            await wait_idle(c.server, op.manager)
            await op.manager.recorder("tfjob-controller").flush()
            assert c.events("TFJobRestarting")
            assert c.condition("ec", "Failed") is None

            c.exit("ec-worker-1", 3)  # the program's own failure: permanent
            await eventually(lambda: c.state("ec") == "Failed")
            assert c.condition("ec", "Failed") == ("True", "TFJobFailed")
        assert op.error is None


async def test_backoff_limit_counts_recreations(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            body = tfjob(
                "bo", run_policy={"backoffLimit": 1}, Worker=replica(2, policy="OnFailure")
            )
            await c.submit(body)
            await eventually(lambda: running_pods(c, "bo-worker-0", "bo-worker-1"))
            # An eviction fails the pod whatever its restart policy: it is recreated once...
            assert c.server.kubelet is not None
            c.server.kubelet.evict(NAMESPACE, "bo-worker-0")
            await eventually(lambda: c.status("bo").get("restartCount") == 1)
            await eventually(lambda: running_pods(c, "bo-worker-0"))
            # ...and the second failure is one restart too many.
            c.server.kubelet.evict(NAMESPACE, "bo-worker-1")
            await eventually(
                lambda: c.condition("bo", "Failed") == ("True", "BackoffLimitExceeded")
            )
            await eventually(lambda: c.live_pods() == {})
        assert op.error is None


async def test_active_deadline_fails_the_job_with_no_other_event(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(
                tfjob("dl", run_policy={"activeDeadlineSeconds": 600}, Worker=replica(2))
            )
            await eventually(lambda: c.state("dl") == "Running")
            await c.advance_idle(599, op.manager)
            assert c.condition("dl", "Failed") is None
            await c.clock.advance(1)
            await eventually(lambda: c.condition("dl", "Failed") == ("True", "DeadlineExceeded"))
            await eventually(lambda: c.live_pods() == {})
            await eventually(lambda: c.services() == {})
        assert op.error is None


async def test_ttl_deletes_the_finished_job(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(
                tfjob("ttl", run_policy={"ttlSecondsAfterFinished": 300}, Worker=replica(2))
            )
            await eventually(lambda: running_pods(c, "ttl-worker-0", "ttl-worker-1"))
            c.exit("ttl-worker-0", 0)
            await eventually(lambda: c.state("ttl") == "Succeeded")
            await c.advance_idle(299, op.manager)
            assert c.job("ttl") is not None
            await c.clock.advance(1)
            await eventually(lambda: c.job("ttl") is None)
            # Garbage collection takes the children with it.
            await eventually(lambda: c.live_pods() == {} and c.services() == {})
        assert op.error is None


async def test_cluster_domain_reaches_tf_config(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator(settings=JobSettings(cluster_domain="cluster.local"))
        async with running(op):
            await c.submit(
                tfjob(
                    "dom", Worker=replica(2, ports=[{"name": "tfjob-port", "containerPort": 4000}])
                )
            )
            await eventually(lambda: len(c.pods()) == 2)
            config = tf_config(c.pods()["dom-worker-1"])
            assert config is not None
            assert config["cluster"] == {
                "worker": [
                    "dom-worker-0.default.svc.cluster.local:4000",
                    "dom-worker-1.default.svc.cluster.local:4000",
                ]
            }
            await eventually(lambda: len(c.services()) == 2)
            ports = c.services()["dom-worker-0"]["spec"]["ports"]
            assert [(p["name"], p["port"]) for p in ports] == [("tfjob-port", 4000)]
        assert op.error is None


async def test_dynamic_workers_get_a_sparse_cluster_and_may_fail(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(tfjob("dyn", dynamic=True, PS=replica(1), Worker=replica(3)))
            await eventually(
                lambda: running_pods(c, "dyn-ps-0", "dyn-worker-0", "dyn-worker-1", "dyn-worker-2")
            )
            await eventually(lambda: c.state("dyn") == "Running")
            pods = c.pods()
            assert tf_config(pods["dyn-worker-2"]) == {
                "cluster": {
                    "worker": {"2": "dyn-worker-2.default.svc:2222"},
                    "ps": ["dyn-ps-0.default.svc:2222"],
                },
                "task": {"type": "worker", "index": 2},
            }
            assert tf_config(pods["dyn-ps-0"]) == {
                "cluster": {"worker": {}, "ps": ["dyn-ps-0.default.svc:2222"]},
                "task": {"type": "ps", "index": 0},
            }
            c.exit("dyn-worker-2", 1)
            await eventually(
                lambda: c.status("dyn")["replicaStatuses"]["Worker"].get("failed") == 1
            )
            assert c.state("dyn") == "Running"
            c.exit("dyn-worker-0", 0)
            await eventually(lambda: c.state("dyn") == "Succeeded")
        assert op.error is None


async def test_dynamic_workers_grow_only_as_far_as_their_names_fit(tmp_path: Path) -> None:
    # 54 characters: "-worker-9" still fits 63, "-worker-10" does not.
    name = "d" * 54
    workers = [f"{name}-worker-{index}" for index in range(10)]
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        async with running(op):
            await c.submit(tfjob(name, dynamic=True, PS=replica(1), Worker=replica(2)))
            await eventually(lambda: c.state(name) == "Running")
            await c.client.patch(
                TFJOBS,
                name,
                {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 12}}}},
                namespace=NAMESPACE,
            )
            await eventually(lambda: running_pods(c, *workers))
            await eventually(lambda: bool(c.events("ReplicasClamped")))
            await wait_idle(c.server, op.manager)
            assert c.state(name) == "Running"
            assert sorted(p for p in c.pods() if "-worker-" in p) == sorted(workers)
            (warning,) = c.events("ReplicasClamped")
            assert warning["type"] == "Warning"
            assert warning["message"] == (
                f"replicas 12 of TFJob {name}'s Worker is more than its worker names allow: "
                f"workers past {name}-worker-9 would have names over 63 characters (each worker "
                "has a Service of its name, and a Service name is a DNS label; a shorter job "
                "name leaves room for more); running 10"
            )
            assert warning.get("count", 1) == 1
            c.exit(f"{name}-worker-0", 0)
            await eventually(lambda: c.state(name) == "Succeeded")
        assert op.error is None


async def test_a_pod_the_server_refuses_as_invalid_is_reported_on_the_job(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        with captured_logs() as logs:
            await _refused_then_fixed(c, op)
    assert lifecycle(logs, "broken") == [
        ("info", "job created", "TFJobCreated"),
        ("warning", "job cannot create its pods", "PodInvalid"),
        ("info", "job creates its pods again", ""),
        ("info", "job running", "TFJobRunning"),
    ]


async def _refused_then_fixed(c: Cluster, op: Operator) -> None:
    async with running(op):
        bad = replica(1)
        bad["template"]["metadata"] = {"labels": {"team": "not a valid label value!"}}
        await c.submit(tfjob("broken", Worker=bad))
        await eventually(lambda: c.condition("broken", "ReplicaFailure") is not None)
        await wait_idle(c.server, op.manager)
        # The server's message reaches the job, with a Warning Event a user can act on.
        assert c.condition("broken", "ReplicaFailure") == ("True", "PodInvalid")
        (failure,) = [
            cond for cond in c.status("broken")["conditions"] if cond["type"] == "ReplicaFailure"
        ]
        assert failure["message"].startswith(
            "pod broken-worker-0 of TFJob broken cannot be created: "
        )
        assert "metadata.labels: Invalid value" in failure["message"]
        assert c.state("broken") == "ReplicaFailure"  # kubectl get shows it
        (event,) = c.events("PodInvalid")
        assert event["type"] == "Warning"
        assert event["message"] == failure["message"]
        # The controller keeps trying, backing off: more attempts as time passes, no pod.
        attempts = len(c.server.requests.find(verb="create", resource="pods"))
        await c.advance_idle(60, op.manager)
        assert len(c.server.requests.find(verb="create", resource="pods")) > attempts
        assert c.pods() == {}
        assert len(c.events("PodInvalid")) == 1  # announced once, not per attempt
        # Fixed template: the pod is created and the condition goes.
        job = copy.deepcopy(c.job("broken"))
        assert job is not None
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] = {}
        await c.client.replace(TFJOBS, job)
        await eventually(lambda: "broken-worker-0" in c.pods())
        await eventually(lambda: c.condition("broken", "ReplicaFailure") is None)
        await eventually(lambda: c.state("broken") == "Running")
        await wait_idle(c.server, op.manager)


async def test_a_transient_pod_create_error_is_not_reported_as_a_replica_failure(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        failing = c.server.inject(Fault(verb="create", resource="pods", status=500, times=8))
        async with running(op):
            await c.submit(tfjob("flaky", Worker=replica(1)))
            await eventually(lambda: failing.fired >= 1)
            # A create is not repeated by the client once sent: each 500 is one reconcile, and
            # the next comes after the controller's backoff.
            for _ in range(8):
                await c.advance_idle(60, op.manager)
            assert failing.fired == 8
            await eventually(lambda: "flaky-worker-0" in c.pods())
            assert c.condition("flaky", "ReplicaFailure") is None
            assert c.events("PodInvalid") == []


def lifecycle(logs: Sequence[MutableMapping[str, Any]], name: str) -> list[tuple[str, str, str]]:
    """``(level, message, reason)`` of the job lines about job ``name`` (info and up), in order."""
    return [
        (entry["log_level"], entry["event"], entry.get("reason", ""))
        for entry in logs
        if entry.get("name") == name
        and entry["log_level"] != "debug"
        and entry.get("kind") == "TFJob"
        and str(entry["event"]).startswith("job ")
    ]


async def test_every_transition_is_logged_once_with_its_reason(tmp_path: Path) -> None:
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        op = c.operator()
        with captured_logs() as logs:
            async with running(op):
                await c.submit(tfjob("life", Worker=replica(2, policy="ExitCode")))
                await eventually(lambda: c.state("life") == "Running")
                c.exit("life-worker-1", 137)  # killed: restarted
                await eventually(lambda: c.status("life").get("restartCount") == 1)
                await eventually(lambda: running_pods(c, "life-worker-1"))
                await wait_idle(c.server, op.manager)
                # Reconciles that change nothing log nothing: touch the job a few times.
                for value in ("a", "b", "c"):
                    await c.client.patch(
                        TFJOBS,
                        "life",
                        {"metadata": {"annotations": {"touched": value}}},
                        namespace=NAMESPACE,
                    )
                    await wait_idle(c.server, op.manager)
                c.exit("life-worker-0", 3)  # a permanent failure
                await eventually(lambda: c.state("life") == "Failed")
                await wait_idle(c.server, op.manager)
    seen = lifecycle(logs, "life")
    assert seen == [
        ("info", "job created", "TFJobCreated"),
        ("info", "job running", "TFJobRunning"),
        ("warning", "job restarting", "TFJobRestarting"),
        ("info", "job running", "TFJobRunning"),
        ("warning", "job failed", "TFJobFailed"),
    ], "\n".join(map(str, seen))
    failed = next(e for e in logs if e["event"] == "job failed")
    assert failed["namespace"] == NAMESPACE
    assert "exit" in failed["message"] or "failed" in failed["message"]
