import subprocess
from pathlib import Path
from typing import Any

from etctl.jobs.trainingjob._layout import (
    CONFIG_VOLUME,
    INIT_CONTAINER,
    KUBECTL_DELIVERY,
    RSH_AGENT_ENV,
    SSH_VOLUME,
    decorate_launcher,
)


def launcher_pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "tj-launcher", "labels": {"mine": "yes"}},
        "spec": {
            "containers": [
                {"name": "main", "image": "horovod", "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "s"},
            ],
            "restartPolicy": "Never",
        },
    }


def decorate(pod: dict[str, Any], **changes: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "job": "tj",
        "service_account": "tj-launcher",
        "config_map": "tj-config",
        "init_image": "busybox:1.36",
        "kubexec": False,
        "kubectl_image": None,
        "ssh_secret": "tj",
        **changes,
    }
    decorate_launcher(pod, **options)
    return pod


def test_layout_matches_et_operator() -> None:
    pod = decorate(launcher_pod())
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "tj-launcher"
    assert pod["metadata"]["labels"] == {
        "mine": "yes",
        "group-name": "kai.alibabacloud.com",
        "training-job-name": "tj",
        "training-job-role": "launcher",
    }
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["training-job-hostfile"] == {"name": "training-job-hostfile", "emptyDir": {}}
    assert volumes["deepspeed-hostfile"] == {"name": "deepspeed-hostfile", "emptyDir": {}}
    assert volumes["training-job-kubectl"] == {"name": "training-job-kubectl", "emptyDir": {}}
    config = volumes[CONFIG_VOLUME]["configMap"]
    assert config["name"] == "tj-config"
    assert {i["key"]: i["mode"] for i in config["items"]} == {
        "hostfile": 0o444,
        "discover_hosts.sh": 0o555,
        "kubexec.sh": 0o555,
        "deepspeed-hostfile": 0o444,
    }
    mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
    assert mounts == {
        "/etc/edl": "training-job-hostfile",
        "/etc/mpi": CONFIG_VOLUME,
        "/opt/kube": "training-job-kubectl",
        "/job": "deepspeed-hostfile",
        "/root/.ssh": SSH_VOLUME,
    }
    (init,) = spec["initContainers"]
    assert init["name"] == INIT_CONTAINER
    assert init["image"] == "busybox:1.36"
    assert spec["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    # ssh mode: every container gets the key.
    assert any(m["name"] == SSH_VOLUME for m in spec["containers"][1]["volumeMounts"])


def test_decorating_twice_changes_nothing() -> None:
    once = decorate(launcher_pod())
    twice = decorate(decorate(launcher_pod()))
    assert once == twice


def test_kubexec_mode_sets_the_rsh_agent_and_may_deliver_kubectl() -> None:
    pod = decorate(launcher_pod(), kubexec=True, ssh_secret=None)
    env = pod["spec"]["containers"][0]["env"]
    assert {"name": RSH_AGENT_ENV, "value": "/etc/mpi/kubexec.sh"} in env
    assert [c["name"] for c in pod["spec"]["initContainers"]] == [INIT_CONTAINER]
    assert all(v["name"] != SSH_VOLUME for v in pod["spec"]["volumes"])
    delivered = decorate(launcher_pod(), kubexec=True, ssh_secret=None, kubectl_image="k:1")
    names = [c["name"] for c in delivered["spec"]["initContainers"]]
    assert names == [INIT_CONTAINER, KUBECTL_DELIVERY]
    assert delivered["spec"]["initContainers"][1]["image"] == "k:1"


def test_init_container_copies_with_the_right_modes(tmp_path: Path) -> None:
    pod = decorate(launcher_pod())
    command = pod["spec"]["initContainers"][0]["command"]
    assert command[:2] == ["sh", "-c"]
    for directory in ("etc/mpi", "etc/edl", "job"):
        (tmp_path / directory).mkdir(parents=True)
    for key in ("hostfile", "discover_hosts.sh", "deepspeed-hostfile"):
        (tmp_path / "etc/mpi" / key).write_text(key)
    script = command[2]
    for path in ("/etc/mpi", "/etc/edl", "/job/"):
        script = script.replace(path, f"{tmp_path}{path}")
    subprocess.run(["sh", "-c", script], check=True, timeout=10)
    assert (tmp_path / "etc/edl/hostfile").read_text() == "hostfile"
    assert (tmp_path / "etc/edl/hostfile").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "etc/edl/discover_hosts.sh").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "job/hostfile").read_text() == "deepspeed-hostfile"
