"""What each pod of a PyTorchJob gets: environment, the Master wait, the master role label."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from etctl.common import JOB_ROLE
from etctl.jobs.pytorchjob import PyTorchJob
from etctl.jobs.pytorchjob._pods import decorate_pod, is_master_role
from etctl.testing._kubelet.shell import Shell
from etctl.testing._kubelet.vfs import ContainerFS, FileMeta
from tests.jobs.pytorchjob.support import defaulted


def pod_of(job: PyTorchJob, replica_type: str, index: int) -> dict[str, Any]:
    spec = job.spec.pytorch_replica_specs[replica_type]
    pod = copy.deepcopy(spec.template)
    decorate_pod(job, pod, replica_type, index, endpoint="job-rdzv:23456", max_restarts=None,
                 init_image="busybox:1.36")  # fmt: skip
    return pod


def test_workers_wait_for_the_master_with_training_operators_init_container() -> None:
    job = defaulted(master=True)
    worker = pod_of(job, "Worker", 0)
    (init,) = worker["spec"]["initContainers"]
    assert init["name"] == "init-pytorch"
    assert init["image"] == "busybox:1.36"
    assert init["resources"] == {
        "limits": {"cpu": "100m", "memory": "20Mi"},
        "requests": {"cpu": "50m", "memory": "10Mi"},
    }
    assert init["command"][:2] == ["sh", "-c"]
    assert "nslookup job-master-0" in init["command"][2]
    assert "initContainers" not in pod_of(job, "Master", 0)["spec"]
    assert "initContainers" not in pod_of(defaulted(), "Worker", 0)["spec"]


def test_the_master_wait_script_runs_in_a_posix_shell(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    fs = ContainerFS(tmp_path / "root", [], FileMeta(lambda: datetime.now(UTC)), sandbox=tmp_path)
    script = pod_of(defaulted(master=True), "Worker", 0)["spec"]["initContainers"][0]["command"][2]
    shell = Shell(fs, resolver=lambda name: (name, ("10.0.0.1",)))
    assert shell.run(script).exit_code == 0


def test_the_master_role_is_the_master_or_worker_zero() -> None:
    with_master = defaulted(master=True)
    assert is_master_role(with_master, "Master", 0)
    assert not is_master_role(with_master, "Worker", 0)
    assert pod_of(with_master, "Master", 0)["metadata"]["labels"][JOB_ROLE] == "master"
    alone = defaulted()
    assert is_master_role(alone, "Worker", 0)
    assert not is_master_role(alone, "Worker", 1)


def test_every_container_gets_the_environment() -> None:
    job = defaulted(elastic={"maxReplicas": 2})
    spec = job.spec.pytorch_replica_specs["Worker"]
    pod = copy.deepcopy(spec.template)
    pod["spec"]["containers"].append({"name": "sidecar", "image": "s"})
    decorate_pod(job, pod, "Worker", 1, endpoint="job-rdzv:23456", max_restarts=4,
                 init_image="busybox:1.36")  # fmt: skip
    for container in pod["spec"]["containers"]:
        names = {var["name"]: var["value"] for var in container["env"]}
        assert names["PET_RDZV_ENDPOINT"] == "job-rdzv:23456"
        assert names["PET_MAX_RESTARTS"] == "4"
