"""The launcher pod: the user's template plus what lets it find and reach the workers.

A kind describes its launcher's files with a :class:`LauncherLayout`; :func:`decorate_launcher`
adds to the pod built from the template (idempotently: entries it owns are replaced, never
duplicated):

* ``serviceAccountName`` (the launcher's, bound to its Role: :mod:`~etctl.jobs.launcher._rbac`),
  when the kind gives one;
* the ConfigMap volume, mounted read-only at ``config_mount`` (``/etc/mpi``) in the first
  container, with each file of ``files`` at its mode (scripts 0555, data 0444);
* the **live copies** (``live``): files the launcher reads from a writable emptyDir rather than from
  the ConfigMap mount, because a ConfigMap volume follows changes only after the kubelet's sync
  period. The init container ``init_container`` (the operator's helper image) copies each from the
  ConfigMap at start; the membership pusher (:mod:`~etctl.jobs.launcher._pusher`) rewrites them in
  place when the ConfigMap changes, so a restarted launcher starts from the current content and a
  running one follows it at once;
* kubexec mode: the emptyDir ``kubectl_volume`` at ``/opt/kube`` and, when the operator is given a
  kubectl image, the init container ``delivery_container`` that copies that image's ``kubectl``
  into it (the image needs ``sh`` and ``kubectl`` on its PATH);
* environment variables the kind sets in the first container (Open MPI's rsh agent, its default
  hostfile...), replacing a template's value of the same name.

:func:`mount_config` gives a worker some files of the ConfigMap (mpi-operator mounts
``kubexec.sh`` in every worker: Open MPI looks for the agent's path in every rank).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from etctl.jobs.launcher._hostfile import (
    CONFIG_MOUNT,
    HOSTFILE_KEY,
    KUBECTL,
    KUBECTL_MOUNT,
    digest,
)
from etctl.runtime import KubeObject

__all__ = [
    "ConfigFile",
    "LauncherAttachMode",
    "LauncherLayout",
    "LiveFile",
    "decorate_launcher",
    "mount_config",
    "set_env",
]


class LauncherAttachMode(StrEnum):
    """How the launcher reaches its workers (a kind's API says which is its default)."""

    SSH = "ssh"
    """ssh with the job's generated key."""
    KUBEXEC = "kubexec"
    """``kubectl exec`` through ``kubexec.sh``, with ``pods/exec`` on the current workers only."""


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """A file of the ConfigMap as a pod mounts it: its key and its mode."""

    key: str
    mode: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveFile:
    """A ConfigMap file the launcher reads from a writable copy (see the module docstring).

    Attributes:
        key: the ConfigMap key it is copied from.
        volume: the emptyDir holding the copy.
        directory: where that emptyDir is mounted.
        name: the copy's file name in it.
        mode: the copy's mode (0644 data, 0755 scripts).
        pushed: the membership pusher rewrites it when the ConfigMap changes (False for a file
            whose content never changes).
    """

    key: str
    volume: str
    directory: str
    name: str
    mode: int = 0o644
    pushed: bool = True

    @property
    def path(self) -> str:
        """The copy's path in the launcher."""
        return f"{self.directory}/{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LauncherLayout:
    """How a kind lays out its launcher's files (see the module docstring).

    Attributes:
        config_volume: the name of the ConfigMap volume.
        files: the ConfigMap files the launcher mounts, with their modes.
        config_mount: where the ConfigMap is mounted.
        live: files read from writable copies the pusher keeps current.
        init_container: the init container that makes the copies.
        kubectl_volume: the emptyDir a kubectl is delivered to (None: no delivery, ever).
        delivery_container: the init container that delivers kubectl.
        digest_keys: the ConfigMap keys of the files that change with the membership, whose
            SHA-256 the pusher records on the launcher (:meth:`digest_of`).
    """

    config_volume: str
    files: tuple[ConfigFile, ...]
    config_mount: str = CONFIG_MOUNT
    live: tuple[LiveFile, ...] = ()
    init_container: str = "init-hostfile"
    kubectl_volume: str | None = None
    delivery_container: str = "kubectl-delivery"
    digest_keys: tuple[str, ...] = (HOSTFILE_KEY,)

    def digest_of(self, data: Mapping[str, Any]) -> str:
        """The SHA-256 the pusher records once the files of ConfigMap ``data`` were pushed.

        With one digest key, the SHA-256 of that file (``digest(hostfile)``); with several, of
        each key and its file in order, NUL-separated, so a change of any of them is a new digest.
        """
        if len(self.digest_keys) == 1:
            return digest(str(data.get(self.digest_keys[0]) or ""))
        parts = (f"{key}\0{data.get(key) or ''}\0" for key in self.digest_keys)
        return digest("".join(parts))

    def path(self, key: str) -> str:
        """Where the launcher finds ConfigMap key ``key`` through the mount."""
        return f"{self.config_mount}/{key}"

    def read_path(self, key: str) -> str:
        """Where the launcher reads ConfigMap key ``key``: its live copy, else the mount."""
        for copy in self.live:
            if copy.key == key:
                return copy.path
        return self.path(key)

    @property
    def pushed(self) -> tuple[LiveFile, ...]:
        """The live copies the membership pusher rewrites."""
        return tuple(copy for copy in self.live if copy.pushed)

    @property
    def copy_volumes(self) -> tuple[tuple[str, str], ...]:
        """``(volume, directory)`` of every emptyDir holding copies, in order, once each."""
        seen: dict[str, str] = {}
        for copy in self.live:
            seen.setdefault(copy.volume, copy.directory)
        return tuple(seen.items())

    @property
    def volumes(self) -> frozenset[str]:
        """The names of every volume the layout adds."""
        named = {self.config_volume, *(volume for volume, _ in self.copy_volumes)}
        if self.kubectl_volume is not None:
            named.add(self.kubectl_volume)
        return frozenset(named)


def _mount(name: str, path: str, *, read_only: bool = False) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": name, "mountPath": path}
    if read_only:
        mount["readOnly"] = True
    return mount


def _config_volume(name: str, config_map: str, files: Iterable[ConfigFile]) -> dict[str, Any]:
    items = [{"key": f.key, "path": f.key, "mode": f.mode} for f in files]
    return {"name": name, "configMap": {"name": config_map, "items": items}}


def _copy_command(layout: LauncherLayout) -> str:
    steps = []
    for copy in layout.live:
        steps.append(f"cp {layout.path(copy.key)} {copy.path}")
        steps.append(f"chmod {copy.mode:o} {copy.path}")
    return " && ".join(steps)


def _init_container(layout: LauncherLayout, image: str) -> dict[str, Any]:
    return {
        "name": layout.init_container,
        "image": image,
        "command": ["sh", "-c", _copy_command(layout)],
        "resources": {
            "limits": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
            "requests": {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"},
        },
        "volumeMounts": [
            _mount(layout.config_volume, layout.config_mount, read_only=True),
            *(_mount(volume, directory) for volume, directory in layout.copy_volumes),
        ],
    }


def _delivery_container(name: str, volume: str, image: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": ["sh", "-c", f'cp "$(command -v kubectl)" {KUBECTL} && chmod 755 {KUBECTL}'],
        "volumeMounts": [_mount(volume, KUBECTL_MOUNT)],
    }


def _without(entries: list[Any], names: Iterable[str]) -> list[Any]:
    dropped = set(names)
    return [e for e in entries if not (isinstance(e, dict) and e.get("name") in dropped)]


def decorate_launcher(
    pod: KubeObject,
    layout: LauncherLayout,
    *,
    config_map: str,
    init_image: str,
    service_account: str | None = None,
    kubectl_image: str | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Turn the pod built from the launcher template into the launcher (mutates ``pod``).

    Args:
        pod: the pod built from the template.
        layout: the kind's layout.
        config_map: the job's ConfigMap.
        init_image: the image of the init container that makes the live copies.
        service_account: the launcher's ServiceAccount, if the kind gives it one.
        kubectl_image: an image whose kubectl is delivered (needs ``layout.kubectl_volume``).
        env: variables set in the first container.
    """
    spec = pod.setdefault("spec", {})
    if service_account is not None:
        spec["serviceAccountName"] = service_account
    volumes: list[dict[str, Any]] = [
        {"name": volume, "emptyDir": {}} for volume, _ in layout.copy_volumes
    ]
    if layout.kubectl_volume is not None:
        volumes.append({"name": layout.kubectl_volume, "emptyDir": {}})
    volumes.append(_config_volume(layout.config_volume, config_map, layout.files))
    spec["volumes"] = [*_without(spec.get("volumes") or [], layout.volumes), *volumes]
    helpers = [_init_container(layout, init_image)] if layout.live else []
    if kubectl_image and layout.kubectl_volume is not None:
        helpers.append(
            _delivery_container(layout.delivery_container, layout.kubectl_volume, kubectl_image)
        )
    ours = (layout.init_container, layout.delivery_container)
    inits = _without(spec.get("initContainers") or [], ours)
    spec["initContainers"] = [*inits, *helpers]
    main = spec["containers"][0]
    mounts = [
        *(_mount(volume, directory) for volume, directory in layout.copy_volumes),
        _mount(layout.config_volume, layout.config_mount, read_only=True),
    ]
    if layout.kubectl_volume is not None:
        mounts.append(_mount(layout.kubectl_volume, KUBECTL_MOUNT))
    main["volumeMounts"] = [*_without(main.get("volumeMounts") or [], layout.volumes), *mounts]
    if env:
        set_env(main, env)


def set_env(container: dict[str, Any], env: Mapping[str, str]) -> None:
    """Set ``env`` in ``container`` (mutated): the operator's values replace the template's own."""
    kept = [e for e in container.get("env") or [] if _entry_name(e) not in env]
    container["env"] = [*kept, *({"name": k, "value": v} for k, v in env.items())]


def _entry_name(entry: object) -> object:
    return entry.get("name") if isinstance(entry, Mapping) else None


def mount_config(
    pod: KubeObject,
    *,
    volume: str,
    config_map: str,
    files: Iterable[ConfigFile],
    directory: str = CONFIG_MOUNT,
) -> None:
    """Mount some ConfigMap ``files`` read-only at ``directory`` in every container of ``pod``."""
    spec = pod.setdefault("spec", {})
    kept = _without(spec.get("volumes") or [], (volume,))
    spec["volumes"] = [*kept, _config_volume(volume, config_map, files)]
    for container in spec.get("containers") or []:
        if isinstance(container, dict):
            mounts = _without(container.get("volumeMounts") or [], (volume,))
            container["volumeMounts"] = [*mounts, _mount(volume, directory, read_only=True)]
