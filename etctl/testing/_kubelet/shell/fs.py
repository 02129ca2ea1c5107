"""The filesystem the shell works on: a small protocol, its errors, and what ``stat`` reports.

The shell never touches the real filesystem itself; commands go through a :class:`FileSystem`
given absolute, normalised container paths (``/etc/mpi/hostfile``). The simulated kubelet's
container view implements it over a pod sandbox; anything else honouring the protocol works.

Errors are :class:`FsError` carrying the POSIX message (``No such file or directory``,
``Read-only file system``...), which commands quote in their own error lines.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

__all__ = [
    "EEXIST",
    "EISDIR",
    "ENOENT",
    "ENOTDIR",
    "ENOTEMPTY",
    "EPERM",
    "EROFS",
    "FileSystem",
    "FsError",
    "Stat",
    "join",
    "mode_string",
]

ENOENT = "No such file or directory"
EEXIST = "File exists"
EISDIR = "Is a directory"
ENOTDIR = "Not a directory"
ENOTEMPTY = "Directory not empty"
EROFS = "Read-only file system"
EPERM = "Permission denied"


class FsError(Exception):
    """A filesystem operation failed; ``str()`` is the POSIX error message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Stat:
    """What ``stat`` knows about a path."""

    kind: Literal["file", "dir", "device"]
    size: int
    mode: int
    mtime: datetime

    @property
    def is_dir(self) -> bool:
        """True for a directory."""
        return self.kind == "dir"


class FileSystem(Protocol):
    """File operations on absolute container paths."""

    def stat(self, path: str) -> Stat | None:
        """The path's metadata, or None when nothing is there."""
        ...

    def read(self, path: str) -> bytes:
        """A file's content."""
        ...

    def write(self, path: str, data: bytes, *, append: bool = False) -> None:
        """Create, replace or append to a file (its directory must exist)."""
        ...

    def listdir(self, path: str) -> list[str]:
        """A directory's entries, sorted."""
        ...

    def mkdir(self, path: str) -> None:
        """Create one directory (its parent must exist)."""
        ...

    def remove(self, path: str) -> None:
        """Remove a file, or an empty directory."""
        ...

    def rename(self, source: str, target: str) -> None:
        """Move a file or directory (the target's parent must exist)."""
        ...

    def chmod(self, path: str, mode: int) -> None:
        """Set the permission bits."""
        ...

    def touch(self, path: str) -> None:
        """Create an empty file, or update the modification time of an existing one."""
        ...


def join(cwd: str, path: str) -> str:
    """``path`` made absolute against ``cwd`` and normalised (``..`` never climbs past ``/``)."""
    absolute = path if path.startswith("/") else posixpath.join(cwd, path)
    normal = posixpath.normpath(absolute)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    return normal


def mode_string(stat: Stat) -> str:
    """``-rw-r--r--`` / ``drwxr-xr-x``, as ``ls -l`` prints the mode."""
    kind = {"dir": "d", "device": "c"}.get(stat.kind, "-")
    bits = ""
    for shift in (6, 3, 0):
        part = (stat.mode >> shift) & 7
        bits += ("r" if part & 4 else "-") + ("w" if part & 2 else "-") + ("x" if part & 1 else "-")
    return kind + bits
