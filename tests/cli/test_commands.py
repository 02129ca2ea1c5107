"""The ``etctl`` entry point: ``--help`` from the command table alone, each command in full."""

from __future__ import annotations

import subprocess
import sys

import pytest

from etctl.cli import build_parser, main


def test_top_level_help_loads_no_command() -> None:
    script = (
        "import sys\n"
        "from etctl.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('etctl.runtime', 'etctl.common', 'etctl.jobs', 'etctl.cli._', 'pydantic',\n"
        "         'aiohttp', 'kubernetes_asyncio', 'yaml')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.strip() == "[]"
    for command in ("run", "manifests", "crds", "sandbox"):
        assert command in done.stdout


def test_the_light_help_is_the_full_parsers_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == build_parser().format_help()


def test_a_command_is_declared_in_full_when_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert "required: COMMAND" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["--log-level", "debug", "run"])  # a command's option before the command
    assert exited.value.code == 2
    assert "invalid choice: 'debug'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["crds", "--bogus"])
    assert exited.value.code == 2
    assert "etctl crds: error: unrecognized arguments: --bogus" in capsys.readouterr().err
