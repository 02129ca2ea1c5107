"""What one container sees: its volume mounts laid over a private root, inside the pod sandbox.

A :class:`ContainerFS` maps an absolute container path to a host path: the longest
``volumeMount`` whose ``mountPath`` is a prefix of the path wins (``/etc/mpi/hostfile`` ->
the ``mpi`` volume's directory), anything else falls to the container's own root directory.
Paths are normalised first (``..`` never climbs above ``/``), and every host path is checked to
lie inside the sandbox, so nothing outside it is ever read or written. Read-only mounts refuse
writes with ``Read-only file system``; ``/dev/null`` reads empty and swallows writes.

File modes and modification times live in a :class:`FileMeta` beside the files (never as real
permission bits: the sandbox must stay writable and removable, and times must follow the
simulation's clock).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from etctl.testing._kubelet.shell.fs import (
    EEXIST,
    EISDIR,
    ENOENT,
    ENOTDIR,
    ENOTEMPTY,
    EPERM,
    EROFS,
    FsError,
    Stat,
    join,
)

__all__ = ["EBUSY", "ContainerFS", "FileMeta", "Mount"]

EBUSY = "Resource busy"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Mount:
    """A volume mounted at ``path`` (a container path) from ``source`` (a host path)."""

    path: str
    source: Path
    read_only: bool = False


class FileMeta:
    """Modes and modification times of sandbox files, keyed by host path.

    Args:
        now: the clock for modification times.
    """

    def __init__(self, now: Callable[[], datetime]) -> None:
        self.now = now
        self._modes: dict[str, int] = {}
        self._times: dict[str, datetime] = {}

    def mode(self, host: Path, *, is_dir: bool) -> int:
        """The recorded mode (``0644`` for files and ``0755`` for directories by default)."""
        return self._modes.get(str(host), 0o755 if is_dir else 0o644)

    def mtime(self, host: Path) -> datetime:
        """The recorded modification time."""
        return self._times.get(str(host), _EPOCH)

    def set_mode(self, host: Path, mode: int) -> None:
        """Record a mode."""
        self._modes[str(host)] = mode & 0o7777

    def touch(self, host: Path) -> None:
        """Record a modification now."""
        self._times[str(host)] = self.now()

    def forget(self, host: Path) -> None:
        """Drop what is recorded for ``host`` and everything under it."""
        prefix = str(host) + os.sep
        for table in (self._modes, self._times):
            for key in [k for k in table if k == str(host) or k.startswith(prefix)]:
                del table[key]

    def move(self, source: Path, target: Path) -> None:
        """Carry records along a rename."""
        old, new = str(source), str(target)
        self.forget(target)
        for key in [k for k in self._modes if k == old or k.startswith(old + os.sep)]:
            self._modes[new + key[len(old) :]] = self._modes.pop(key)
        for key in [k for k in self._times if k == old or k.startswith(old + os.sep)]:
            self._times[new + key[len(old) :]] = self._times.pop(key)


class ContainerFS:
    """The filesystem of one container (implements the shell's ``FileSystem``).

    Args:
        root: the container's private root directory.
        mounts: its volume mounts.
        meta: the sandbox's file metadata.
        sandbox: the directory nothing may escape.
    """

    def __init__(
        self, root: Path, mounts: Sequence[Mount], meta: FileMeta, *, sandbox: Path
    ) -> None:
        self.root = root
        self.mounts = sorted(mounts, key=lambda m: len(m.path), reverse=True)
        self.meta = meta
        self.sandbox = sandbox.resolve()

    # -- resolution -----------------------------------------------------------------------------

    def resolve(self, path: str) -> tuple[Path, Mount | None]:
        """The host path behind a container path, and the mount it falls in (if any).

        Raises:
            FsError: the path would leave the sandbox.
        """
        normal = join("/", path)
        for mount in self.mounts:
            if normal == mount.path or normal.startswith(mount.path.rstrip("/") + "/"):
                rest = normal[len(mount.path) :].lstrip("/")
                host = mount.source / rest if rest else mount.source
                return self._inside(host), mount
        return self._inside(self.root / normal.lstrip("/")), None

    def _inside(self, host: Path) -> Path:
        if not host.resolve().is_relative_to(self.sandbox):
            raise FsError(EPERM)
        return host

    def _writable(self, path: str) -> Path:
        host, mount = self.resolve(path)
        if mount is not None and mount.read_only:
            raise FsError(EROFS)
        return host

    def _is_mount_point(self, path: str) -> bool:
        return join("/", path) in {m.path for m in self.mounts}

    @staticmethod
    def _parent(host: Path) -> None:
        parent = host.parent
        if not parent.exists():
            raise FsError(ENOENT)
        if not parent.is_dir():
            raise FsError(ENOTDIR)

    # -- FileSystem -----------------------------------------------------------------------------

    def stat(self, path: str) -> Stat | None:
        """The path's metadata, or None."""
        if join("/", path) == "/dev/null":
            return Stat("device", 0, 0o666, _EPOCH)
        try:
            host, _mount = self.resolve(path)
        except FsError:
            return None
        if not host.exists():
            return None
        is_dir = host.is_dir()
        size = 4096 if is_dir else host.stat().st_size
        return Stat(
            "dir" if is_dir else "file",
            size,
            self.meta.mode(host, is_dir=is_dir),
            self.meta.mtime(host),
        )

    def read(self, path: str) -> bytes:
        """A file's content."""
        if join("/", path) == "/dev/null":
            return b""
        host, _mount = self.resolve(path)
        if host.is_dir():
            raise FsError(EISDIR)
        if not host.exists():
            self._parent(host)
            raise FsError(ENOENT)
        return host.read_bytes()

    def write(self, path: str, data: bytes, *, append: bool = False) -> None:
        """Create, replace or append to a file."""
        if join("/", path) == "/dev/null":
            return
        host = self._writable(path)
        if host.is_dir():
            raise FsError(EISDIR)
        self._parent(host)
        with host.open("ab" if append else "wb") as handle:
            handle.write(data)
        self.meta.touch(host)

    def listdir(self, path: str) -> list[str]:
        """A directory's entries, sorted."""
        host, _mount = self.resolve(path)
        if not host.exists():
            raise FsError(ENOENT)
        if not host.is_dir():
            raise FsError(ENOTDIR)
        return sorted(entry.name for entry in host.iterdir())

    def mkdir(self, path: str) -> None:
        """Create one directory."""
        host = self._writable(path)
        if host.exists():
            raise FsError(EEXIST)
        self._parent(host)
        host.mkdir()
        self.meta.touch(host)

    def remove(self, path: str) -> None:
        """Remove a file or an empty directory."""
        if self._is_mount_point(path):
            raise FsError(EBUSY)
        host = self._writable(path)
        if not host.exists():
            raise FsError(ENOENT)
        if host.is_dir():
            if any(host.iterdir()):
                raise FsError(ENOTEMPTY)
            host.rmdir()
        else:
            host.unlink()
        self.meta.forget(host)

    def rename(self, source: str, target: str) -> None:
        """Move a file or directory."""
        if self._is_mount_point(source):
            raise FsError(EBUSY)
        old = self._writable(source)
        new = self._writable(target)
        if not old.exists():
            raise FsError(ENOENT)
        self._parent(new)
        if new.is_dir():
            if not old.is_dir():
                raise FsError(EISDIR)
            if any(new.iterdir()):
                raise FsError(ENOTEMPTY)
            new.rmdir()
        shutil.move(str(old), str(new))
        self.meta.move(old, new)

    def chmod(self, path: str, mode: int) -> None:
        """Record the permission bits."""
        host = self._writable(path)
        if not host.exists():
            raise FsError(ENOENT)
        self.meta.set_mode(host, mode)

    def touch(self, path: str) -> None:
        """Create an empty file or update its time."""
        host = self._writable(path)
        if not host.exists():
            self._parent(host)
            host.touch()
        self.meta.touch(host)
