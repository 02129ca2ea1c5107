"""The ssh identity a launcher uses to reach its workers: the Secret, and how pods mount it.

Each job gets its own key pair, generated once into a Secret of type ``kubernetes.io/ssh-auth``
that the job owns (so it goes when the job goes), with the keys that type defines:

* ``ssh-privatekey``: the private key (:class:`KeyAlgorithm`: Ed25519 in OpenSSH format, or ECDSA
  P-521 in PEM, mpi-operator's choice);
* ``ssh-publickey``: the public key line, ``<type> AAAA... <comment>``;
* ``config`` (unless the kind leaves it out): ``StrictHostKeyChecking no`` and
  ``UserKnownHostsFile /dev/null``, since worker host keys are generated per pod and cannot be
  known in advance.

A kind mounts the key as its tools expect (:class:`SshMount`): at a directory (``/root/.ssh`` by
default), in every container or only the first, as ``<identity>`` (the private key: OpenSSH reads
the key type from the content, so ``id_rsa`` may hold any type), ``<identity>.pub`` and
``authorized_keys`` (the public key: the launcher may log in to every worker of its job), plus
``config`` when the Secret has it. The volume is a projected one, read-only; its files get ``mode``
(0600, what sshd demands of root's keys) unless the kind gives none (a directory of another user,
who could not read a root-owned 0600 file). The key never appears in logs, events or a status.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from etctl.runtime import KubeObject

__all__ = [
    "SSH_CONFIG",
    "SSH_DIR",
    "KeyAlgorithm",
    "SshMount",
    "generate_key_pair",
    "mount_ssh",
    "ssh_secret",
]

SSH_DIR = "/root/.ssh"
SSH_CONFIG = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"


class KeyAlgorithm(StrEnum):
    """The type of a generated key pair."""

    ED25519 = "ed25519"
    """Ed25519, private key in OpenSSH format."""
    ECDSA_P521 = "ecdsa-p521"
    """ECDSA on P-521, private key in PEM (``EC PRIVATE KEY``), as mpi-operator generates."""


def generate_key_pair(
    comment: str, algorithm: KeyAlgorithm = KeyAlgorithm.ED25519
) -> tuple[str, str]:
    """A fresh key pair: ``(private key, public key line ending in comment)``."""
    # Imported on the first key, not with the plugin: the library weighs about 7 MB of memory in
    # an operator that may never run a job that needs a key.
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )
    from cryptography.hazmat.primitives.serialization import (  # noqa: PLC0415
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    if algorithm is KeyAlgorithm.ED25519:
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption())
        public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    else:
        ecdsa = ec.generate_private_key(ec.SECP521R1())
        private = ecdsa.private_bytes(
            Encoding.PEM, PrivateFormat.TraditionalOpenSSL, NoEncryption()
        )
        public = ecdsa.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    return private.decode(), f"{public.decode()} {comment}\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def ssh_secret(
    name: str,
    *,
    comment: str,
    algorithm: KeyAlgorithm = KeyAlgorithm.ED25519,
    client_config: bool = True,
) -> KubeObject:
    """The Secret of a new key pair (the controller adds namespace, labels and owner)."""
    private, public = generate_key_pair(comment, algorithm)
    data = {"ssh-privatekey": _b64(private), "ssh-publickey": _b64(public)}
    if client_config:
        data["config"] = _b64(SSH_CONFIG)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "kubernetes.io/ssh-auth",
        "data": data,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class SshMount:
    """How a kind's pods mount the job's key (see the module docstring).

    Attributes:
        volume: the volume's name.
        directory: where it is mounted.
        identity: the private key's file name (the public key is ``<identity>.pub``).
        every_container: mount it in every container, else only in the first.
        mode: the files' mode; None leaves the kubelet's default.
    """

    volume: str
    directory: str = SSH_DIR
    identity: str = "id_ed25519"
    every_container: bool = True
    mode: int | None = 0o600


def _volume(secret: str, mount: SshMount) -> dict[str, Any]:
    def item(key: str, path: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"key": key, "path": path}
        if mount.mode is not None:
            entry["mode"] = mount.mode
        return entry

    projected: dict[str, Any] = {
        "sources": [
            {
                "secret": {
                    "name": secret,
                    "items": [
                        item("ssh-privatekey", mount.identity),
                        item("ssh-publickey", f"{mount.identity}.pub"),
                        item("ssh-publickey", "authorized_keys"),
                    ],
                }
            },
            # A Secret the user provides (or a kind that leaves it out) may lack the config.
            {"secret": {"name": secret, "items": [item("config", "config")], "optional": True}},
        ],
    }
    if mount.mode is not None:
        projected = {"defaultMode": mount.mode, **projected}
    return {"name": mount.volume, "projected": projected}


def mount_ssh(pod: KubeObject, secret: str, mount: SshMount) -> None:
    """Mount the key of ``secret`` in ``pod`` as ``mount`` says (mutates ``pod``; idempotent)."""
    spec = pod.setdefault("spec", {})
    volumes = [v for v in spec.get("volumes") or [] if _name(v) != mount.volume]
    spec["volumes"] = [*volumes, _volume(secret, mount)]
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    for container in containers if mount.every_container else containers[:1]:
        mounts = [m for m in container.get("volumeMounts") or [] if _name(m) != mount.volume]
        container["volumeMounts"] = [
            *mounts,
            {"name": mount.volume, "mountPath": mount.directory, "readOnly": True},
        ]


def _name(entry: object) -> object:
    return entry.get("name") if isinstance(entry, Mapping) else None
