"""ssh keys, Secrets and mounts on the shared layer (et-operator Ed25519, mpi-operator ECDSA)."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
    load_ssh_private_key,
)

from etctl.jobs.launcher import KeyAlgorithm, SshMount, generate_key_pair, mount_ssh, ssh_secret

V2 = SshMount(
    volume="ssh-auth",
    directory="/home/mpiuser/.ssh",
    identity="id_rsa",
    every_container=False,
    mode=None,
)


def test_an_ecdsa_p521_pair_in_pem_as_mpi_operator_generates() -> None:
    private, public = generate_key_pair("etctl:ns/pi", KeyAlgorithm.ECDSA_P521)
    assert private.startswith("-----BEGIN EC PRIVATE KEY-----")
    key = load_pem_private_key(private.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp521r1"
    derived = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    assert public == f"{derived} etctl:ns/pi\n"
    assert public.startswith("ecdsa-sha2-nistp521 ")


def test_key_pair_is_ed25519_and_matches() -> None:
    private, public = generate_key_pair("etctl:ns/tj")
    key = load_ssh_private_key(private.encode(), password=None)
    assert isinstance(key, Ed25519PrivateKey)
    derived = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    assert public == f"{derived} etctl:ns/tj\n"
    assert public.startswith("ssh-ed25519 ")
    assert generate_key_pair("x") != generate_key_pair("x")


@pytest.mark.parametrize("algorithm", list(KeyAlgorithm))
def test_ssh_keygen_reads_the_private_key(tmp_path: Path, algorithm: KeyAlgorithm) -> None:
    private, public = generate_key_pair("c", algorithm)
    key_file = tmp_path / "id"
    key_file.write_text(private)
    key_file.chmod(0o600)
    try:
        out = subprocess.run(
            ["ssh-keygen", "-y", "-f", str(key_file)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("no ssh-keygen")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == public.split()[:2]


def test_secret_is_ssh_auth_with_the_config() -> None:
    secret = ssh_secret("tj", comment="etctl:ns/tj")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["metadata"] == {"name": "tj"}
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert sorted(data) == ["config", "ssh-privatekey", "ssh-publickey"]
    assert data["ssh-privatekey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert data["config"] == "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"


def test_a_secret_without_client_config() -> None:
    secret = ssh_secret(
        "pi-ssh", comment="c", algorithm=KeyAlgorithm.ECDSA_P521, client_config=False
    )
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert sorted(secret["data"]) == ["ssh-privatekey", "ssh-publickey"]
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")


def test_mounted_in_the_first_container_only_under_the_kinds_names() -> None:
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "mpi"}, {"name": "side"}]}}
    mount_ssh(pod, "pi-ssh", V2)
    mount_ssh(pod, "pi-ssh", V2)  # idempotent
    (volume,) = pod["spec"]["volumes"]
    assert volume["name"] == "ssh-auth"
    assert "defaultMode" not in volume["projected"]
    items = volume["projected"]["sources"][0]["secret"]["items"]
    assert items == [
        {"key": "ssh-privatekey", "path": "id_rsa"},
        {"key": "ssh-publickey", "path": "id_rsa.pub"},
        {"key": "ssh-publickey", "path": "authorized_keys"},
    ]
    first, side = pod["spec"]["containers"]
    assert first["volumeMounts"] == [
        {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh", "readOnly": True}
    ]
    assert "volumeMounts" not in side
