"""A pod's sandbox: a temporary directory holding its volumes and each container's root.

Layout under the kubelet's root directory::

    <namespace>_<name>_<uid>/
        volumes/<volume>/...        one directory per pod volume, kept in sync with its source
        containers/<name>/rootfs/   each container's private root (/etc/hostname, /etc/hosts,
                                    /etc/resolv.conf, /tmp, /root, and its mount points)

:meth:`PodSandbox.setup` materialises every volume (and reports the ``FailedMount`` messages of
those whose sources are missing); :meth:`PodSandbox.refresh` rewrites the volumes that read a
ConfigMap or Secret, or the pod itself (downward API); :meth:`PodSandbox.container_fs` gives the
filesystem one container sees (see :mod:`~etctl.testing._kubelet.vfs`). A ``subPath`` mount
shows a part of its volume; a ``subPath`` that is absolute or climbs with ``..`` is refused, as
the kubelet refuses it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from etctl.runtime import ObjectView, objects
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.shell.fs import join
from etctl.testing._kubelet.shell.network import NAMESERVER
from etctl.testing._kubelet.vfs import ContainerFS, FileMeta, Mount
from etctl.testing._kubelet.volumes import Lookup, MountError, VolumeFiles, materialise, sources

__all__ = ["PodSandbox"]


class PodSandbox:
    """The on-disk sandbox of one pod.

    Args:
        root: the kubelet's sandbox root directory.
        pod: the pod.
        now: the clock for file times.
    """

    def __init__(self, root: Path, pod: ObjectView, *, now: Callable[[], datetime]) -> None:
        self.pod = pod
        self.namespace = objects.namespace(pod)
        self.name = objects.name(pod)
        self.uid = objects.uid(pod)
        self.dir = root / f"{self.namespace}_{self.name}_{self.uid}"
        self.meta = FileMeta(now)
        self._files = VolumeFiles()
        self._ready: set[str] = set()
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def volumes(self) -> dict[str, Mapping[str, Any]]:
        """The pod's volumes by name."""
        found = mapping(self.pod.get("spec")).get("volumes") or []
        return {str(mapping(v).get("name")): mapping(v) for v in found if mapping(v).get("name")}

    def volume_dir(self, name: str) -> Path:
        """The host directory of a volume."""
        return self.dir / "volumes" / name

    def references(self) -> set[tuple[str, str]]:
        """The ``(kind, name)`` ConfigMaps and Secrets the volumes read."""
        found: set[tuple[str, str]] = set()
        for volume in self.volumes.values():
            found |= sources(volume)
        return found

    def setup(self, lookup: Lookup) -> dict[str, str]:
        """Materialise every volume; returns ``{volume: error}`` for those that cannot be."""
        problems: dict[str, str] = {}
        for name, volume in self.volumes.items():
            try:
                materialise(
                    volume,
                    self.volume_dir(name),
                    self.meta,
                    self._files,
                    pod=self.pod,
                    lookup=lookup,
                )
            except MountError as exc:
                problems[name] = str(exc)
                self._ready.discard(name)
            else:
                self._ready.add(name)
        return problems

    def refresh(
        self, lookup: Lookup, pod: ObjectView | None = None, *, kind: str = "", name: str = ""
    ) -> None:
        """Rewrite the volumes that read ``(kind, name)``, or the downward API after a pod change.

        A source that has gone missing leaves the volume as it was (the kubelet keeps the last
        content it could read).
        """
        if pod is not None:
            self.pod = pod
        for volume_name, volume in self.volumes.items():
            if kind:
                if (kind, name) not in sources(volume):
                    continue
            elif not _uses_pod_fields(volume):
                continue
            try:
                materialise(
                    volume,
                    self.volume_dir(volume_name),
                    self.meta,
                    self._files,
                    pod=self.pod,
                    lookup=lookup,
                )
            except MountError:
                continue

    def container_root(self, container: str) -> Path:
        """The private root directory of a container."""
        return self.dir / "containers" / container / "rootfs"

    def container_fs(self, container: Mapping[str, Any]) -> ContainerFS:
        """The filesystem ``container`` (a container spec of the pod) sees."""
        name = str(container.get("name") or "")
        root = self.container_root(name)
        if not root.exists():
            self._skeleton(root)
        mounts: list[Mount] = []
        for raw in container.get("volumeMounts") or []:
            mount = mapping(raw)
            volume = str(mount.get("name") or "")
            path = join("/", str(mount.get("mountPath") or "/"))
            source = self.volume_dir(volume)
            sub_path = str(mount.get("subPath") or "")
            if sub_path:
                relative = PurePosixPath(sub_path)
                if relative.is_absolute() or ".." in relative.parts:
                    continue
                source = source / relative
                if not source.exists():
                    source.mkdir(parents=True, exist_ok=True)
            mounts.append(Mount(path, source, read_only=mount.get("readOnly") is True))
            point = root / path.lstrip("/")
            if path != "/" and not point.exists():
                if source.is_file():
                    point.parent.mkdir(parents=True, exist_ok=True)
                    point.touch()
                else:
                    point.mkdir(parents=True, exist_ok=True)
        return ContainerFS(root, mounts, self.meta, sandbox=self.dir)

    def _skeleton(self, root: Path) -> None:
        """The files a container image and the runtime provide."""
        spec = mapping(self.pod.get("spec"))
        hostname = str(spec.get("hostname") or self.name)
        ip = str(mapping(self.pod.get("status")).get("podIP") or "127.0.0.1")
        for directory in ("etc", "tmp", "root", "bin", "var", "dev", "proc"):
            (root / directory).mkdir(parents=True, exist_ok=True)
        self.meta.set_mode(root / "tmp", 0o1777)
        (root / "etc" / "hostname").write_text(hostname + "\n")
        (root / "etc" / "hosts").write_text(
            "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost "
            f"ip6-localhost ip6-loopback\n{ip}\t{hostname}\n"
        )
        (root / "etc" / "resolv.conf").write_text(
            f"search {self.namespace}.svc.cluster.local svc.cluster.local cluster.local\n"
            f"nameserver {NAMESERVER}\noptions ndots:5\n"
        )

    def cleanup(self) -> None:
        """Remove the sandbox from disk."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _uses_pod_fields(volume: Mapping[str, Any]) -> bool:
    if volume.get("downwardAPI"):
        return True
    return any(
        mapping(source).get("downwardAPI")
        for source in mapping(volume.get("projected")).get("sources") or []
    )
