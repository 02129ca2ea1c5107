"""The TFJob operator end to end: Manager, informers, JobController and the TFJob plugin, running
pods on the embedded API server's simulated kubelet."""

from __future__ import annotations

from pathlib import Path

from etctl.common import JOB_ROLE, JobSettings, replica_labels
from etctl.runtime import EVENTS, objects
from etctl.testing import wait_idle
from tests.common._operator import advance_idle, eventually, running
from tests.jobs.tfjob._cluster import NAMESPACE, TFCluster, replica, tf_cluster, tfjob


def running_pods(c: TFCluster, *names: str) -> bool:
    phases = c.phases()
    return all(phases.get(name) == "Running" for name in names)


async def test_ps_and_workers_run_to_success(tmp_path: Path) -> None:
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            job = await c.create(tfjob("mnist", PS=replica(2), Worker=replica(3)))
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
            assert c.tf_config(pods["mnist-worker-1"]) == {
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
            assert c.tf_config(pods["mnist-ps-0"])["task"] == {"type": "ps", "index": 0}  # type: ignore[index]

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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            await c.create(tfjob("est", Chief=replica(1), Worker=replica(2)))
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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            chief = replica(1, annotations={"sim.etctl.io/start-delay": "30"})
            await c.create(tfjob("est", Chief=chief, Worker=replica(2)))
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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            await c.create(
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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            await c.create(tfjob("ec", PS=replica(1), Worker=replica(2, policy="ExitCode")))
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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            body = tfjob(
                "bo", run_policy={"backoffLimit": 1}, Worker=replica(2, policy="OnFailure")
            )
            await c.create(body)
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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            await c.create(
                tfjob("dl", run_policy={"activeDeadlineSeconds": 600}, Worker=replica(2))
            )
            await eventually(lambda: c.state("dl") == "Running")
            await advance_idle(c, 599, op.manager)
            assert c.condition("dl", "Failed") is None
            await c.clock.advance(1)
            await eventually(lambda: c.condition("dl", "Failed") == ("True", "DeadlineExceeded"))
            await eventually(lambda: c.live_pods() == {})
            await eventually(lambda: c.services() == {})
        assert op.error is None


async def test_ttl_deletes_the_finished_job(tmp_path: Path) -> None:
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            await c.create(
                tfjob("ttl", run_policy={"ttlSecondsAfterFinished": 300}, Worker=replica(2))
            )
            await eventually(lambda: running_pods(c, "ttl-worker-0", "ttl-worker-1"))
            c.exit("ttl-worker-0", 0)
            await eventually(lambda: c.state("ttl") == "Succeeded")
            await advance_idle(c, 299, op.manager)
            assert c.job("ttl") is not None
            await c.clock.advance(1)
            await eventually(lambda: c.job("ttl") is None)
            # Garbage collection takes the children with it.
            await eventually(lambda: c.live_pods() == {} and c.services() == {})
        assert op.error is None


async def test_cluster_domain_reaches_tf_config(tmp_path: Path) -> None:
    async with tf_cluster(tmp_path) as c:
        op = c.operator(settings=JobSettings(cluster_domain="cluster.local"))
        async with running(op):
            await c.create(
                tfjob(
                    "dom", Worker=replica(2, ports=[{"name": "tfjob-port", "containerPort": 4000}])
                )
            )
            await eventually(lambda: len(c.pods()) == 2)
            config = c.tf_config(c.pods()["dom-worker-1"])
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
    async with tf_cluster(tmp_path) as c:
        op = c.operator()
        async with running(op):
            await c.create(tfjob("dyn", dynamic=True, PS=replica(1), Worker=replica(3)))
            await eventually(
                lambda: running_pods(c, "dyn-ps-0", "dyn-worker-0", "dyn-worker-1", "dyn-worker-2")
            )
            await eventually(lambda: c.state("dyn") == "Running")
            pods = c.pods()
            assert c.tf_config(pods["dyn-worker-2"]) == {
                "cluster": {
                    "worker": {"2": "dyn-worker-2.default.svc:2222"},
                    "ps": ["dyn-ps-0.default.svc:2222"],
                },
                "task": {"type": "worker", "index": 2},
            }
            assert c.tf_config(pods["dyn-ps-0"]) == {
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
