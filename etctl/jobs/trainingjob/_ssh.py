"""The ssh identity a launcher uses to reach its workers (attach mode ``ssh``).

Each job gets its own Ed25519 key pair (et-operator generated RSA-1024), created once in a Secret
``<job>`` of type ``kubernetes.io/ssh-auth`` owned by the job (so it goes when the job goes):

* ``ssh-privatekey``: the private key, OpenSSH format;
* ``ssh-publickey``: the public key, ``ssh-ed25519 AAAA... etctl:<namespace>/<job>``;
* ``config``: ``StrictHostKeyChecking no`` and ``UserKnownHostsFile /dev/null`` (worker host keys
  are generated per pod, so they cannot be known in advance).

The annotation ``arena.kubeflow.org/ssh-secret: <name>`` makes the job use an existing Secret
instead; it must have ``ssh-privatekey`` and ``ssh-publickey`` (the ``kubernetes.io/ssh-auth``
keys) and may have ``config``.

Every container of the launcher and of the workers mounts the key at ``/root/.ssh`` through a
projected volume, every file mode 0600: ``id_ed25519`` (the private key, whatever its type;
OpenSSH reads the type from the content), ``id_ed25519.pub``, ``authorized_keys`` (the public key,
so the launcher may log in to every worker) and ``config`` when the Secret has it. The key never
appears in logs, events or the job's status. Who can read it: whoever may read Secrets in the
namespace or exec into the job's pods; any process in the job's containers (they run as root by
default).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

from etctl.runtime import KubeObject

__all__ = [
    "SSH_CONFIG",
    "SSH_DIR",
    "SSH_VOLUME",
    "generate_key_pair",
    "mount_ssh",
    "ssh_secret",
]

SSH_DIR = "/root/.ssh"
SSH_VOLUME = "training-job-ssh"
SSH_CONFIG = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
_MODE = 0o600


def generate_key_pair(comment: str) -> tuple[str, str]:
    """A fresh Ed25519 key pair: ``(private key in OpenSSH format, public key line)``."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption()).decode()
    public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode()
    return private, f"{public} {comment}\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def ssh_secret(name: str, *, comment: str) -> KubeObject:
    """The Secret of a new key pair (the controller adds namespace, labels and owner)."""
    private, public = generate_key_pair(comment)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": _b64(private),
            "ssh-publickey": _b64(public),
            "config": _b64(SSH_CONFIG),
        },
    }


def _volume(secret: str) -> dict[str, Any]:
    def item(key: str, path: str) -> dict[str, Any]:
        return {"key": key, "path": path, "mode": _MODE}

    return {
        "name": SSH_VOLUME,
        "projected": {
            "defaultMode": _MODE,
            "sources": [
                {
                    "secret": {
                        "name": secret,
                        "items": [
                            item("ssh-privatekey", "id_ed25519"),
                            item("ssh-publickey", "id_ed25519.pub"),
                            item("ssh-publickey", "authorized_keys"),
                        ],
                    }
                },
                # A Secret the user provides may lack the client config: optional.
                {"secret": {"name": secret, "items": [item("config", "config")], "optional": True}},
            ],
        },
    }


def mount_ssh(pod: KubeObject, secret: str) -> None:
    """Mount the key of ``secret`` at ``/root/.ssh`` in every container of ``pod``."""
    spec = pod.setdefault("spec", {})
    volumes = [v for v in spec.get("volumes") or [] if _name(v) != SSH_VOLUME]
    spec["volumes"] = [*volumes, _volume(secret)]
    for container in spec.get("containers") or []:
        if not isinstance(container, dict):
            continue
        mounts = [m for m in container.get("volumeMounts") or [] if _name(m) != SSH_VOLUME]
        container["volumeMounts"] = [
            *mounts,
            {"name": SSH_VOLUME, "mountPath": SSH_DIR, "readOnly": True},
        ]


def _name(entry: object) -> object:
    return entry.get("name") if isinstance(entry, Mapping) else None
