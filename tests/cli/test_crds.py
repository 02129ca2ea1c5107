"""``etctl crds``: the CRD generator's command line, in-process and as a process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from etctl.cli import main as etctl_main
from tests.schema_support import CRD_DIR


def main(argv: list[str]) -> int:
    return etctl_main(["crds", *argv])


def test_command_line_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", str(tmp_path)]) == 1
    assert "missing" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 6
    assert main(["--check", str(tmp_path)]) == 0


def test_the_command_checks_the_committed_manifests() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "etctl.cli", "crds", "--check", str(CRD_DIR)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
