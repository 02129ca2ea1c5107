"""The container filesystem: mount resolution, read-only mounts, sandbox confinement."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from etctl.testing._kubelet.shell import FsError
from etctl.testing._kubelet.vfs import ContainerFS, FileMeta, Mount


@pytest.fixture
def fs(tmp_path: Path) -> ContainerFS:
    sandbox = tmp_path / "sandbox"
    root = sandbox / "root"
    (root / "etc" / "mpi").mkdir(parents=True)
    volume = sandbox / "volume"
    (volume / "nested").mkdir(parents=True)
    (volume / "hostfile").write_text("h\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    meta = FileMeta(lambda: datetime(2026, 1, 1, tzinfo=UTC))
    mounts = [
        Mount("/etc/mpi", volume, read_only=True),
        Mount("/etc/mpi/nested", volume / "nested"),
    ]
    return ContainerFS(root, mounts, meta, sandbox=sandbox)


def test_the_longest_mount_wins(fs: ContainerFS) -> None:
    host, mount = fs.resolve("/etc/mpi/nested/x")
    assert mount is not None
    assert mount.path == "/etc/mpi/nested"
    assert host.name == "x"
    fs.write("/etc/mpi/nested/x", b"writable\n")
    assert fs.read("/etc/mpi/nested/x") == b"writable\n"
    assert fs.read("/etc/mpi/hostfile") == b"h\n"
    assert fs.resolve("/etc/other")[1] is None


def test_read_only_mounts_refuse_writes(fs: ContainerFS) -> None:
    actions: list[Callable[[], None]] = [
        lambda: fs.write("/etc/mpi/hostfile", b"x"),
        lambda: fs.mkdir("/etc/mpi/d"),
        lambda: fs.chmod("/etc/mpi/hostfile", 0o777),
        lambda: fs.touch("/etc/mpi/new"),
    ]
    for action in actions:
        with pytest.raises(FsError, match="Read-only file system"):
            action()


def test_paths_never_leave_the_sandbox(fs: ContainerFS) -> None:
    assert fs.resolve("/../../../secret.txt")[0] == fs.root / "secret.txt"
    assert fs.stat("/../../secret.txt") is None
    with pytest.raises(FsError, match="No such file"):
        fs.read("/../../../secret.txt")
    link = fs.root / "escape"
    link.symlink_to(fs.sandbox.parent / "secret.txt")
    with pytest.raises(FsError, match="Permission denied"):
        fs.read("/escape")


def test_mount_points_cannot_be_removed_or_moved(fs: ContainerFS) -> None:
    with pytest.raises(FsError, match="Resource busy"):
        fs.remove("/etc/mpi")
    with pytest.raises(FsError, match="Resource busy"):
        fs.rename("/etc/mpi/nested", "/tmp")


def test_errors_are_posix_messages(fs: ContainerFS) -> None:
    fs.mkdir("/d")
    fs.write("/d/f", b"1")
    with pytest.raises(FsError, match="Directory not empty"):
        fs.remove("/d")
    with pytest.raises(FsError, match="Is a directory"):
        fs.read("/d")
    with pytest.raises(FsError, match="File exists"):
        fs.mkdir("/d")
    with pytest.raises(FsError, match="Not a directory"):
        fs.write("/d/f/g", b"")
    with pytest.raises(FsError, match="No such file"):
        fs.listdir("/none")


def test_modes_and_times_follow_renames(fs: ContainerFS) -> None:
    fs.mkdir("/d")
    fs.write("/d/f", b"1")
    fs.chmod("/d/f", 0o600)
    fs.rename("/d", "/e")
    stat = fs.stat("/e/f")
    assert stat is not None
    assert stat.mode == 0o600
    assert stat.mtime == datetime(2026, 1, 1, tzinfo=UTC)
    assert fs.stat("/d") is None
