"""An MPIJob's life end to end, both versions: children, launcher, verdict, cleanup, deletion."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEOUTS, crd_manifest
from etctl.errors import Invalid
from etctl.jobs.mpijob import MPIJOBS, MPIJobPlugin
from etctl.runtime import CONFIGMAPS, PODS, ROLEBINDINGS, ROLES, SECRETS, SERVICEACCOUNTS, SERVICES
from etctl.testing import Behaviour, PodPolicy, eventually
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.mpijob._manifests import NS, discovers, example, horovod_hosts

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher and execs discover_hosts.sh, in virtual time"
)

ELASTIC = "tensorflow-mnist-elastic"


def env_of(pod: dict[str, object], container: int = 0) -> dict[str, str]:
    spec = pod["spec"]
    assert isinstance(spec, dict)
    return {e["name"]: e.get("value", "") for e in spec["containers"][container].get("env", [])}


def fqdn(pod: str, job: str) -> str:
    return f"{pod}.{job}.{NS}.svc"


async def test_a_v2beta1_job_runs_with_mpi_operators_children_and_succeeds(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example("pi.yaml"))
        await eventually(lambda: env.pods_running("pi-worker-0", "pi-worker-1", "pi-launcher"))
        await eventually(lambda: env.phase("pi") == "Running")
        assert env.condition("pi", "Running") == ("True", "MPIJobRunning")
        # The headless Service behind the host names, and the ssh key mpi-operator generates.
        service = env.get(SERVICES, "pi")
        assert service is not None
        assert service["spec"]["clusterIP"] == "None"
        assert service["spec"]["selector"]["training.kubeflow.org/job-name"] == "pi"
        secret = env.get(SECRETS, "pi-ssh")
        assert secret is not None
        assert secret["type"] == "kubernetes.io/ssh-auth"
        private = base64.b64decode(secret["data"]["ssh-privatekey"]).decode()
        assert private.startswith("-----BEGIN EC PRIVATE KEY-----")
        assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521")
        # The hostfile lists every worker by its DNS name, in Open MPI's format.
        config = env.get(CONFIGMAPS, "pi-config")
        assert config is not None
        assert config["data"]["hostfile"] == (
            f"{fqdn('pi-worker-0', 'pi')} slots=1\n{fqdn('pi-worker-1', 'pi')} slots=1\n"
        )
        assert "kubexec.sh" not in config["data"]
        # Pods: host names under the Service, the key at sshAuthMountPath (not root's: no mode).
        launcher = env.pod("pi-launcher")
        assert launcher["spec"]["hostname"] == "pi-launcher"
        assert launcher["spec"]["subdomain"] == "pi"
        assert launcher["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"
        assert launcher["spec"].get("serviceAccountName", "default") == "default"
        launcher_env = env_of(launcher)
        assert launcher_env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
        assert launcher_env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
        assert launcher_env["OMPI_MCA_orte_set_default_slots"] == "1"
        assert launcher_env["K_MPI_JOB_ROLE"] == "launcher"
        assert launcher_env["NVIDIA_VISIBLE_DEVICES"] == ""
        ssh = {m["name"]: m["mountPath"] for m in launcher["spec"]["containers"][0]["volumeMounts"]}
        assert ssh["ssh-auth"] == "/home/mpiuser/.ssh"
        volume = next(v for v in launcher["spec"]["volumes"] if v["name"] == "ssh-auth")
        assert "defaultMode" not in volume["projected"]
        worker = env.pod("pi-worker-1")
        assert worker["spec"]["hostname"] == "pi-worker-1"
        assert worker["spec"]["dnsConfig"]["searches"] == ["pi.default.svc.cluster.local"]
        assert worker["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "1"
        assert env_of(worker)["K_MPI_JOB_ROLE"] == "worker"
        # The template's own command stays (sshd with its own config).
        assert worker["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd"]
        # The launcher reads its files at /etc/mpi, as mpirun and Horovod expect them.
        hosts = await env.run("pi-launcher", "cat", "/etc/mpi/hostfile")
        assert hosts == config["data"]["hostfile"]
        env.kubelet.exit(NS, "pi-launcher", 0)
        await eventually(lambda: env.phase("pi") == "Succeeded")
        assert env.condition("pi", "Succeeded") == ("True", "MPIJobSucceeded")
        # cleanPodPolicy Running: the running workers go, the completed launcher stays.
        await eventually(lambda: sorted(env.phases()) == ["pi-launcher"])


async def test_a_v1_elastic_job_uses_kubexec_and_its_launcher_discovers_ready_workers(
    tmp_path: Path,
) -> None:
    workers = [f"{ELASTIC}-worker-0", f"{ELASTIC}-worker-1"]
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example("tensorflow-mnist-elastic.yaml"))
        await eventually(lambda: env.phase(ELASTIC) == "Running")
        # kubexec: the Role lets the launcher exec into exactly the job's workers.
        role = env.get(ROLES, f"{ELASTIC}-launcher")
        assert role is not None
        execs = [r for r in role["rules"] if r["resources"] == ["pods/exec"]]
        assert execs == [
            {
                "apiGroups": [""],
                "resources": ["pods/exec"],
                "verbs": ["get", "create"],
                "resourceNames": workers,
            }
        ]
        assert env.get(SERVICEACCOUNTS, f"{ELASTIC}-launcher") is not None
        assert env.get(ROLEBINDINGS, f"{ELASTIC}-launcher") is not None
        assert env.get(SECRETS, f"{ELASTIC}-ssh") is None  # no ssh in kubexec mode
        assert env.get(SERVICES, ELASTIC) is None
        launcher = env.pod(f"{ELASTIC}-launcher")
        assert launcher["spec"]["serviceAccountName"] == f"{ELASTIC}-launcher"
        launcher_env = env_of(launcher)
        assert launcher_env["OMPI_MCA_plm_rsh_agent"] == "/etc/mpi/kubexec.sh"
        assert launcher_env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
        # Workers idle until the launcher execs into them, kubexec.sh mounted in each.
        worker = env.pod(workers[0])
        assert worker["spec"]["containers"][0]["command"] == ["sleep", "365d"]
        assert await env.run(workers[0], "test", "-x", "/etc/mpi/kubexec.sh") == ""
        # Horovod runs the script every second and parses host:slots lines.
        hosts = dict.fromkeys(workers, 1)
        await eventually(lambda: discovers(env, ELASTIC, hosts))
        script = await env.run(f"{ELASTIC}-launcher", "cat", "/etc/mpi/discover_hosts.sh")
        assert script == ("#!/bin/sh\n" + "".join(f"echo {name}:1\n" for name in workers))
        # It is executable where Horovod calls it, and kubexec.sh is where Horovod looks.
        direct = await env.run(f"{ELASTIC}-launcher", "/etc/mpi/discover_hosts.sh")
        assert horovod_hosts(direct) == hosts
        assert "kubectl" in await env.run(f"{ELASTIC}-launcher", "cat", "/etc/mpi/kubexec.sh")


def wait_for_ready(document: dict[str, Any]) -> dict[str, Any]:
    document["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    return document


@pytest.mark.parametrize(
    ("document", "job"),
    [
        (wait_for_ready(example("pi.yaml")), "pi"),
        # kubexec (v1): the launcher waits, as mpi-operator v1's kubectl-delivery made it wait.
        (example("tensorflow-mnist-elastic.yaml"), ELASTIC),
    ],
    ids=["WaitForWorkersReady", "v1"],
)
async def test_the_launcher_waits_for_ready_workers_when_asked(
    tmp_path: Path, document: dict[str, Any], job: str
) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        slow = PodPolicy(name=f"{job}-worker-1", does=Behaviour(ready_delay=30))
        env.kubelet.add_policy(slow)
        env.apply(document)
        await eventually(lambda: env.pods_running(f"{job}-worker-0", f"{job}-worker-1"))
        await eventually(lambda: env.condition(job, "LauncherCreated") is not None)
        assert env.condition(job, "LauncherCreated") == ("False", "WorkersNotReady")
        assert f"{job}-launcher" not in env.phases()
        await env.clock.advance(30)
        await eventually(lambda: env.pods_running(f"{job}-launcher"))
        await eventually(lambda: env.condition(job, "LauncherCreated") == ("True", "PodsCreated"))


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        ("All", []),
        ("Running", [f"{ELASTIC}-launcher"]),
        ("None", [f"{ELASTIC}-launcher", f"{ELASTIC}-worker-0", f"{ELASTIC}-worker-1"]),
    ],
)
async def test_clean_pod_policy_applies_when_the_launcher_finishes(
    tmp_path: Path, policy: str, left: list[str]
) -> None:
    document = example("tensorflow-mnist-elastic.yaml")
    document["spec"]["cleanPodPolicy"] = policy  # v1's top-level field
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.phase(ELASTIC) == "Running")
        env.kubelet.exit(NS, f"{ELASTIC}-launcher", 0)
        await eventually(lambda: env.phase(ELASTIC) == "Succeeded")
        await eventually(lambda: sorted(env.phases()) == left)


@pytest.mark.parametrize(
    "document",
    [example("pi.yaml"), wait_for_ready(example("pi.yaml"))],
    ids=["AtStartup", "WaitForWorkersReady"],
)
async def test_a_vanished_launcher_is_created_again_with_a_warning(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.pods_running("pi-worker-0", "pi-worker-1", "pi-launcher"))
        # What proves it existed: the launcher counted running (AtStartup has no LauncherCreated).
        await eventually(
            lambda: (
                env.status("pi").get("replicaStatuses", {}).get("Launcher", {}).get("active") == 1
            )
        )
        first = env.pod("pi-launcher")["metadata"]["uid"]
        env.server.storage.delete(PODS, "pi-launcher", namespace=NS)
        await eventually(
            lambda: (
                env.get(PODS, "pi-launcher") not in (None, {})
                and env.pod("pi-launcher")["metadata"]["uid"] != first
            )
        )
        await eventually(lambda: len(env.events("MPIJobLauncherVanished")) == 1)
        (event,) = env.events("MPIJobLauncherVanished")
        assert event["type"] == "Warning"
        assert event["message"] == (
            "launcher pi-launcher of MPIJob pi vanished; created again: mpi-operator's batch Job "
            "would replace it"
        )


async def test_a_failed_launcher_fails_the_job(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example("tensorflow-mnist-elastic.yaml"))  # v1: the launcher runs Never
        await eventually(lambda: env.phase(ELASTIC) == "Running")
        env.kubelet.exit(NS, f"{ELASTIC}-launcher", 2)
        await eventually(lambda: env.phase(ELASTIC) == "Failed")
        assert env.condition(ELASTIC, "Failed") == ("True", "MPIJobFailed")
        failed = env.status(ELASTIC)["conditions"][-1]["message"]
        assert f"launcher {ELASTIC}-launcher failed" in failed


async def test_deleting_a_job_leaves_nothing(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example("tensorflow-mnist-elastic.yaml"))
        env.apply(example("pi.yaml"))
        await eventually(lambda: env.phase(ELASTIC) == "Running" and env.phase("pi") == "Running")
        await env.scale("pi", 3)
        await eventually(lambda: env.pods_running("pi-worker-2"))
        for name in (ELASTIC, "pi"):
            await env.client.delete(MPIJOBS, name, namespace=NS)

        def nothing_left(env: Cluster = env) -> bool:
            return not any(
                env.names(res)
                for res in (
                    MPIJOBS,
                    PODS,
                    SERVICES,
                    CONFIGMAPS,
                    SECRETS,
                    SERVICEACCOUNTS,
                    ROLES,
                    ROLEBINDINGS,
                    SCALEOUTS,
                )
            )

        await eventually(nothing_left)


async def test_workers_whose_image_is_not_a_reference_leave_the_job_created(
    tmp_path: Path,
) -> None:
    # A real kubelet never pulls "open mpi" (InvalidImageName): as under mpi-operator, the job is
    # Created and never Running, its workers are kept as they are (no churn), and both the
    # kubelet's Events and the pods' status say why.
    document = example("pi.yaml")
    worker = document["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["image"] = "example.org/open mpi:cpu"
    workers = ["pi-worker-0", "pi-worker-1"]
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path, 3)) as env,
        env.operating() as manager,
    ):
        env.apply(document)

        def stuck() -> bool:
            for name in workers:
                found = env.get(PODS, name)
                statuses = (found or {}).get("status", {}).get("containerStatuses") or [{}]
                waiting = statuses[0].get("state", {}).get("waiting", {})
                if waiting.get("reason") != "InvalidImageName":
                    return False
            return True

        await eventually(stuck)
        uids = {name: env.pod(name)["metadata"]["uid"] for name in workers}
        await env.advance_idle(600, manager)
        assert env.phase("pi") == "Created"
        assert env.condition("pi", "Running") is None
        assert env.condition("pi", "Failed") is None
        assert {name: env.pod(name)["metadata"]["uid"] for name in workers} == uids
        assert {name: env.phases()[name] for name in workers} == dict.fromkeys(workers, "Pending")
        inspected = {e["involvedObject"]["name"] for e in env.events("InspectFailed")}
        assert inspected == set(workers)


def _without_rules(node: Any) -> Any:
    """A CRD as a cluster without CEL (before 1.25) enforces it: no validation rules."""
    if isinstance(node, dict):
        return {k: _without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [_without_rules(v) for v in node]
    return node


async def test_an_invalid_job_fails_with_a_message_and_an_event(tmp_path: Path) -> None:
    document = example("pi.yaml")
    specs = document["spec"]["mpiReplicaSpecs"]
    specs["worker"] = specs.pop("Worker")
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        with pytest.raises(Invalid) as refused:  # the CRD's rules refuse it at the door
            env.apply(document)
        assert 'spec.mpiReplicaSpecs: Invalid value: "object": an MPIJob needs Workers' in str(
            refused.value
        )
        # Where no rule runs (no CEL, a webhook down), the controller still refuses to run it.
        env.server.load_crds(_without_rules(crd_manifest(MPIJobPlugin().custom_resources[0])))
        env.apply(document)
        await eventually(lambda: env.condition("pi", "Failed") == ("True", "MPIJobInvalid"))
        await eventually(lambda: env.events("MPIJobInvalid"))
        (event,) = env.events("MPIJobInvalid")
        assert "spec.mpiReplicaSpecs.worker: unknown replica type" in event["message"]
        assert env.phases() == {}


@pytest.mark.parametrize("managed_by", ["kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"])
async def test_managed_by(tmp_path: Path, managed_by: str) -> None:
    document = example("pi.yaml")
    document["spec"]["runPolicy"]["managedBy"] = managed_by
    other = example("pi.yaml")
    other["metadata"]["name"] = "witness"
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        env.apply(other)
        await eventually(lambda: env.phase("witness") == "Running")
        if managed_by == "kubeflow.org/mpi-operator":  # mpi-operator's own value: ours
            await eventually(lambda: env.phase("pi") == "Running")
            return
        assert "status" not in env.stored("pi")
        assert not [name for name in env.phases() if name.startswith("pi-")]
        assert env.get(CONFIGMAPS, "pi-config") is None


async def test_a_crashing_launcher_restarts_in_place_until_the_backoff_limit(
    tmp_path: Path,
) -> None:
    """v2beta1's launcher (OnFailure) restarts as a batch Job's pod would, 6 times by default."""
    async with (
        cluster(tmp_path, MPIJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        crash = PodPolicy(name="pi-launcher", does=Behaviour(run_seconds=1, exit_code=1))
        env.kubelet.add_policy(crash)
        env.apply(example("pi.yaml"))
        for _ in range(60):
            await env.advance_idle(30, manager)
            if env.condition("pi", "Failed") is not None:
                break
        assert env.condition("pi", "Failed") == ("True", "BackoffLimitExceeded")
        message = env.status("pi")["conditions"][-1]["message"]
        assert "more than its backoffLimit of 6" in message
        # Nothing of a job failed by its limits keeps running.
        await eventually(lambda: [n for n in env.phases() if n.startswith("pi-")] == [])
