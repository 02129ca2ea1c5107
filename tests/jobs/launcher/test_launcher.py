"""A launcher laid out as mpi-operator v1's (kubexec) and v2's (ssh), on the shared layer."""

from __future__ import annotations

import pytest

from etctl.jobs.launcher import (
    DISCOVER_KEY,
    HOSTFILE_KEY,
    KUBEXEC_KEY,
    ConfigFile,
    LauncherLayout,
    LauncherNames,
    LiveFile,
    decorate_launcher,
    mount_config,
)
from etctl.runtime import KubeObject

V1 = LauncherLayout(
    config_volume="mpi-job-config",
    files=(
        ConfigFile(KUBEXEC_KEY, 0o555),
        ConfigFile(HOSTFILE_KEY, 0o444),
        ConfigFile(DISCOVER_KEY, 0o555),
    ),
    kubectl_volume="mpi-job-kubectl",
)
V2 = LauncherLayout(
    config_volume="mpi-job-config",
    files=(ConfigFile(HOSTFILE_KEY, 0o444), ConfigFile(DISCOVER_KEY, 0o555)),
)
LIVE = LauncherLayout(
    config_volume="cfg",
    files=(ConfigFile(DISCOVER_KEY, 0o555),),
    live=(LiveFile(key=DISCOVER_KEY, volume="live", directory="/etc/live", name="d.sh"),),
    digest_keys=(DISCOVER_KEY,),
)


def launcher() -> KubeObject:
    return {
        "metadata": {"name": "pi-launcher"},
        "spec": {
            "containers": [
                {"name": "mpi", "env": [{"name": "OMPI_MCA_plm_rsh_agent", "value": "ssh"}]},
                {"name": "side"},
            ]
        },
    }


def test_v1_kubexec_layout() -> None:
    pod = launcher()
    env = {
        "OMPI_MCA_plm_rsh_agent": V1.path(KUBEXEC_KEY),
        "OMPI_MCA_orte_default_hostfile": V1.path(HOSTFILE_KEY),
    }
    decorate_launcher(
        pod,
        V1,
        config_map="pi-config",
        init_image="busybox",
        service_account="pi-launcher",
        kubectl_image="kubectl:1",
        env=env,
    )
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "pi-launcher"
    main = spec["containers"][0]
    assert {e["name"]: e["value"] for e in main["env"]} == {
        "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",  # Horovod's kubexec switch, exactly
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
    }
    volumes = {v["name"]: v for v in spec["volumes"]}
    items = {i["key"]: i["mode"] for i in volumes["mpi-job-config"]["configMap"]["items"]}
    assert items == {"kubexec.sh": 0o555, "hostfile": 0o444, "discover_hosts.sh": 0o555}
    assert volumes["mpi-job-kubectl"] == {"name": "mpi-job-kubectl", "emptyDir": {}}
    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    assert mounts == {"/etc/mpi": "mpi-job-config", "/opt/kube": "mpi-job-kubectl"}
    # No live copies: no copying init container, only the kubectl delivery.
    assert [c["name"] for c in spec["initContainers"]] == ["kubectl-delivery"]
    assert "volumeMounts" not in spec["containers"][1]


def test_v2_ssh_layout_has_no_service_account_or_kubectl() -> None:
    pod = launcher()
    decorate_launcher(pod, V2, config_map="pi-config", init_image="busybox")
    spec = pod["spec"]
    assert "serviceAccountName" not in spec
    assert spec["initContainers"] == []
    assert [v["name"] for v in spec["volumes"]] == ["mpi-job-config"]
    assert spec["containers"][0]["env"] == [{"name": "OMPI_MCA_plm_rsh_agent", "value": "ssh"}]


def test_live_copies_are_made_at_start_and_decorating_twice_changes_nothing() -> None:
    once = launcher()
    decorate_launcher(once, LIVE, config_map="c", init_image="busybox")
    (init,) = once["spec"]["initContainers"]
    assert (
        init["command"][2]
        == "cp /etc/mpi/discover_hosts.sh /etc/live/d.sh && chmod 644 /etc/live/d.sh"
    )
    assert LIVE.pushed == LIVE.live
    twice = launcher()
    decorate_launcher(twice, LIVE, config_map="c", init_image="busybox")
    decorate_launcher(twice, LIVE, config_map="c", init_image="busybox")
    assert once == twice


def test_workers_mount_only_the_files_they_need() -> None:
    worker: KubeObject = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    for _ in range(2):
        mount_config(worker, volume="mpi-job-config", config_map="pi-config", files=(V1.files[0],))
    (volume,) = worker["spec"]["volumes"]
    assert volume["configMap"]["items"] == [
        {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}
    ]
    for container in worker["spec"]["containers"]:
        assert container["volumeMounts"] == [
            {"name": "mpi-job-config", "mountPath": "/etc/mpi", "readOnly": True}
        ]


def test_names_follow_their_templates() -> None:
    mpi = LauncherNames(ssh_secret="{job}-ssh")
    assert mpi.launcher_of("pi") == "pi-launcher"
    assert mpi.config_of("pi") == "pi-config"
    assert mpi.worker("pi", 3) == "pi-worker-3"
    assert mpi.ssh_secret_of("pi") == "pi-ssh"
    with pytest.raises(ValueError, match="must contain"):
        LauncherNames(ssh_secret="fixed")
    with pytest.raises(ValueError, match="no other placeholder"):
        LauncherNames(ssh_secret="{job}-{ns}")
