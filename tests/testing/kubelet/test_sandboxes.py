"""Pod sandboxes on the running kubelet: volumes, init shell commands, config errors, sync."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from etctl.runtime import FakeClock
from etctl.testing._kubelet import Kubelet, KubeletConfig
from tests.testing.apiserver._client import Api, configmap
from tests.testing.kubelet._helpers import (
    PODS,
    container_state,
    phase_is,
    pod,
    pod_events,
    wait_for,
    wait_gone,
)

CM = "/api/v1/namespaces/default/configmaps"
MOUNTS = [{"name": "mpi", "mountPath": "/etc/mpi"}, {"name": "edl", "mountPath": "/etc/edl"}]
VOLUMES = [
    {
        "name": "mpi",
        "configMap": {
            "name": "job-config",
            "items": [
                {"key": "hostfile", "path": "hostfile", "mode": 0o444},
                {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
            ],
        },
    },
    {"name": "edl", "emptyDir": {}},
]
HOSTFILE = "worker-0 slots=1\nworker-1 slots=1\n"


def launcher(
    name: str = "launcher", init_command: str = "cp /etc/mpi/hostfile /etc/edl/hostfile"
) -> dict[str, Any]:
    return pod(
        name,
        init=[
            {
                "name": "copy-hostfile",
                "image": "busybox:1.36",
                "command": ["sh", "-c", init_command],
                "volumeMounts": MOUNTS,
            }
        ],
        containers=[
            {
                "name": "launcher",
                "image": "busybox:1.36",
                "command": ["sh", "-c", "sleep 365d"],
                "env": [{"name": "ROLE", "value": "launcher"}],
                "volumeMounts": MOUNTS,
            }
        ],
        volumes=VOLUMES,
    )


async def _config(api: Api, hostfile: str = HOSTFILE) -> dict[str, Any]:
    return await api.create(
        CM,
        configmap(
            "job-config",
            data={"hostfile": hostfile, "discover_hosts.sh": "#!/bin/sh\ncat /etc/edl/hostfile\n"},
        ),
    )


async def test_an_init_container_shell_command_really_runs(api: Api, kubelet: Kubelet) -> None:
    await _config(api)
    await api.create(PODS, launcher())
    running = await wait_for(api, PODS, "launcher", phase_is("Running"))
    init = container_state(running, "copy-hostfile")["state"]["terminated"]
    assert (init["exitCode"], init["reason"]) == (0, "Completed")
    assert kubelet.read_file("default", "launcher", "/etc/edl/hostfile").decode() == HOSTFILE
    sandbox = kubelet.sandbox("default", "launcher")
    assert (sandbox.volume_dir("edl") / "hostfile").read_text() == HOSTFILE
    result = kubelet.exec(
        "default", "launcher", ["sh", "-c", "ls -l /etc/mpi; echo $ROLE $HOSTNAME"]
    )
    assert result.output.splitlines() == [
        "-r-xr-xr-x    1 root     root            32 Jan  1 00:00 discover_hosts.sh",
        "-r--r--r--    1 root     root            34 Jan  1 00:00 hostfile",
        "launcher launcher",
    ]


async def test_a_failing_init_command_fails_the_init_container(api: Api, kubelet: Kubelet) -> None:
    await _config(api)
    body = launcher(init_command="cat /etc/mpi/nope")
    body["spec"]["restartPolicy"] = "Never"
    await api.create(PODS, body)
    failed = await wait_for(api, PODS, "launcher", phase_is("Failed"))
    init = container_state(failed, "copy-hostfile")["state"]["terminated"]
    assert (init["exitCode"], init["reason"]) == (1, "Error")
    assert kubelet.logs("default", "launcher", container="copy-hostfile")[1] == (
        "cat: can't open '/etc/mpi/nope': No such file or directory"
    )


async def test_config_map_updates_reach_the_volume_at_once(api: Api, kubelet: Kubelet) -> None:
    created = await _config(api)
    await api.create(PODS, launcher())
    await wait_for(api, PODS, "launcher", phase_is("Running"))
    updated = copy.deepcopy(created)
    updated["data"]["hostfile"] = "worker-0 slots=1\n"
    await api.put(f"{CM}/job-config", updated)
    assert kubelet.read_file("default", "launcher", "/etc/mpi/hostfile") == b"worker-0 slots=1\n"
    assert (
        kubelet.exec("default", "launcher", ["sh", "/etc/mpi/discover_hosts.sh"]).output == HOSTFILE
    )


class TestDelayedSync:
    @pytest.fixture
    def etctl_kubelet_config(self) -> KubeletConfig:
        return KubeletConfig(volume_sync_delay=60)

    async def test_updates_arrive_after_the_sync_delay(
        self, api: Api, kubelet: Kubelet, clock: FakeClock
    ) -> None:
        created = await _config(api)
        await api.create(PODS, launcher())
        await wait_for(api, PODS, "launcher", phase_is("Running"))
        updated = copy.deepcopy(created)
        updated["data"]["hostfile"] = "changed\n"
        await api.put(f"{CM}/job-config", updated)
        await clock.advance(59)
        assert kubelet.read_file("default", "launcher", "/etc/mpi/hostfile").decode() == HOSTFILE
        await clock.advance(1)
        assert kubelet.read_file("default", "launcher", "/etc/mpi/hostfile") == b"changed\n"


async def test_a_missing_config_map_holds_the_pod_until_it_exists(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, launcher())
    waiting = await wait_for(api, PODS, "launcher", lambda o: bool(container_state(o, "launcher")))
    assert waiting["status"]["phase"] == "Pending"
    assert container_state(waiting, "copy-hostfile")["state"] == {
        "waiting": {"reason": "PodInitializing"}
    }
    assert "podIP" not in waiting["status"]
    assert (
        "FailedMount",
        'MountVolume.SetUp failed for volume "mpi" : configmap "job-config" not found',
    ) in await pod_events(api, "launcher")
    await _config(api)
    await wait_for(api, PODS, "launcher", phase_is("Running"))


async def test_a_missing_env_source_is_a_config_error_until_it_exists(
    api: Api, kubelet: Kubelet
) -> None:
    containers = [
        {
            "name": "main",
            "image": "busybox:1.36",
            "env": [
                {
                    "name": "MODE",
                    "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}},
                }
            ],
        }
    ]
    await api.create(PODS, pod("app", containers=containers))
    stuck = await wait_for(
        api,
        PODS,
        "app",
        lambda o: (
            container_state(o).get("state", {}).get("waiting", {}).get("reason")
            == "CreateContainerConfigError"
        ),
    )
    assert container_state(stuck)["state"]["waiting"]["message"] == 'configmap "settings" not found'
    assert ("Failed", 'Error: configmap "settings" not found') in await pod_events(api, "app")
    await api.create(CM, configmap("settings", data={"mode": "fast"}))
    await wait_for(api, PODS, "app", phase_is("Running"))
    assert kubelet.exec("default", "app", ["sh", "-c", "echo $MODE"]).output == "fast\n"


async def test_downward_api_volumes_follow_label_changes(api: Api, kubelet: Kubelet) -> None:
    containers = [
        {
            "name": "main",
            "image": "busybox:1.36",
            "volumeMounts": [{"name": "info", "mountPath": "/info"}],
        }
    ]
    volumes = [
        {
            "name": "info",
            "downwardAPI": {
                "items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]
            },
        }
    ]
    await api.create(
        PODS, pod("labelled", labels={"rank": "0"}, containers=containers, volumes=volumes)
    )
    await wait_for(api, PODS, "labelled", phase_is("Running"))
    assert kubelet.read_file("default", "labelled", "/info/labels") == b'rank="0"'
    await api.patch(f"{PODS}/labelled", {"metadata": {"labels": {"rank": "3"}}})
    assert kubelet.read_file("default", "labelled", "/info/labels") == b'rank="3"'


async def test_the_sandbox_goes_with_the_pod(api: Api, kubelet: Kubelet) -> None:
    await _config(api)
    await api.create(PODS, launcher())
    await wait_for(api, PODS, "launcher", phase_is("Running"))
    directory = kubelet.sandbox("default", "launcher").dir
    assert directory.is_dir()
    await api.delete(f"{PODS}/launcher")
    await wait_gone(api, PODS, "launcher")
    assert not directory.exists()


async def test_sub_path_mounts_and_working_dir(api: Api, kubelet: Kubelet) -> None:
    await _config(api)
    containers = [
        {
            "name": "main",
            "image": "busybox:1.36",
            "workingDir": "/workspace",
            "volumeMounts": [
                {"name": "mpi", "mountPath": "/opt/hosts", "subPath": "hostfile", "readOnly": True},
                {"name": "edl", "mountPath": "/workspace"},
            ],
        }
    ]
    await api.create(PODS, pod("sub", containers=containers, volumes=VOLUMES))
    await wait_for(api, PODS, "sub", phase_is("Running"))
    result = kubelet.exec("default", "sub", ["sh", "-c", "cat /opt/hosts; pwd; echo x > here; ls"])
    assert result.output == HOSTFILE + "/workspace\nhere\n"
    refused = kubelet.exec("default", "sub", ["sh", "-c", "echo x > /opt/hosts"])
    assert refused.errors == "sh: can't create /opt/hosts: Read-only file system\n"
