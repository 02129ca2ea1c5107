"""A shell over a container filesystem in a temporary sandbox: ``/`` plus a read-only mount."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from etctl.testing._kubelet.shell import Shell
from etctl.testing._kubelet.vfs import ContainerFS, FileMeta, Mount

NOW = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)


@pytest.fixture
def meta() -> FileMeta:
    return FileMeta(lambda: NOW)


@pytest.fixture
def fs(tmp_path: Path, meta: FileMeta) -> ContainerFS:
    root = tmp_path / "root"
    for directory in ("tmp", "etc/config", "data"):
        (root / directory).mkdir(parents=True)
    config = tmp_path / "config"
    config.mkdir()
    (config / "hostfile").write_text("worker-0 slots=2\nworker-1 slots=2\n")
    meta.set_mode(config / "hostfile", 0o444)
    return ContainerFS(root, [Mount("/etc/config", config, read_only=True)], meta, sandbox=tmp_path)


@pytest.fixture
def shell(fs: ContainerFS) -> Shell:
    return Shell(
        fs,
        env={"HOME": "/root", "NAME": "world", "SPACED": "a  b"},
        hostname="pod-0",
        now=lambda: NOW,
    )
