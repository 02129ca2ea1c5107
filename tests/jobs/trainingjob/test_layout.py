"""TrainingJob's launcher layout: et-operator's ssh mount in every container."""

from typing import Any

from etctl.jobs.launcher import SSH_DIR
from etctl.jobs.trainingjob._layout import SSH_VOLUME, mount_ssh


def test_mount_in_every_container_mode_0600_and_idempotent() -> None:
    pod: dict[str, Any] = {
        "spec": {"containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x"}]}]}
    }
    mount_ssh(pod, "keys")
    mount_ssh(pod, "keys")
    volumes = pod["spec"]["volumes"]
    assert [v["name"] for v in volumes] == [SSH_VOLUME]
    projected = volumes[0]["projected"]
    assert projected["defaultMode"] == 0o600
    required, optional = projected["sources"]
    assert required["secret"]["name"] == "keys"
    assert {i["path"]: i["key"] for i in required["secret"]["items"]} == {
        "id_ed25519": "ssh-privatekey",
        "id_ed25519.pub": "ssh-publickey",
        "authorized_keys": "ssh-publickey",
    }
    assert all(i["mode"] == 0o600 for i in required["secret"]["items"])
    assert optional["secret"]["optional"] is True
    for container in pod["spec"]["containers"]:
        ssh_mounts = [m for m in container["volumeMounts"] if m["name"] == SSH_VOLUME]
        assert ssh_mounts == [{"name": SSH_VOLUME, "mountPath": SSH_DIR, "readOnly": True}]
    assert {"name": "x"} in pod["spec"]["containers"][1]["volumeMounts"]
