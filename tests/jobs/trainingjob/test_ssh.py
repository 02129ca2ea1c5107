import base64
import subprocess
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_ssh_private_key,
)

from etctl.jobs.launcher import SSH_DIR, generate_key_pair, ssh_secret
from etctl.jobs.trainingjob._layout import SSH_VOLUME, mount_ssh


def test_key_pair_is_ed25519_and_matches() -> None:
    private, public = generate_key_pair("etctl:ns/tj")
    key = load_ssh_private_key(private.encode(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    derived = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    assert public == f"{derived} etctl:ns/tj\n"
    assert public.startswith("ssh-ed25519 ")
    assert generate_key_pair("x") != generate_key_pair("x")


def test_ssh_keygen_accepts_the_private_key(tmp_path: Path) -> None:
    private, public = generate_key_pair("c")
    key_file = tmp_path / "id"
    key_file.write_text(private)
    key_file.chmod(0o600)
    try:
        out = subprocess.run(
            ["ssh-keygen", "-y", "-f", str(key_file)],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except FileNotFoundError:
        return  # no OpenSSH client here; the cryptography round trip above still holds
    assert out.stdout.split()[:2] == public.split()[:2]


def test_secret_is_ssh_auth_with_the_config() -> None:
    secret = ssh_secret("tj", comment="etctl:ns/tj")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["metadata"] == {"name": "tj"}
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert sorted(data) == ["config", "ssh-privatekey", "ssh-publickey"]
    assert data["ssh-privatekey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert data["config"] == "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"


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
