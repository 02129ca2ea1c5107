import shlex
import subprocess
from pathlib import Path

import pytest

from etctl.common._scaling.api import EnvVar
from etctl.common._scaling.script import host_list, script_command


def test_host_list() -> None:
    assert host_list(["j-worker-0", "j-worker-3"], 2) == "j-worker-0:2,j-worker-3:2"
    assert host_list([], 1) == ""


def test_command_quotes_everything_a_user_wrote() -> None:
    command = script_command(
        "/scripts/on scale.sh",
        timeout=60,
        env=[EnvVar(name="REASON", value="it's $(rm -rf /) `x`"), EnvVar(name="EMPTY")],
        hosts="j-worker-0:1,j-worker-1:1",
    )
    assert command[:2] == ["sh", "-c"]
    assert command[2] == (
        "export REASON='it'\"'\"'s $(rm -rf /) `x`' && export EMPTY='' && "
        "timeout 60 sh '/scripts/on scale.sh' j-worker-0:1,j-worker-1:1"
    )


def test_a_real_shell_sees_the_values_verbatim(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = tmp_path / "print env.sh"
    script.write_text(f'printf "%s|%s|%s" "$REASON" "$#" "$1" > {shlex.quote(str(out))}\n')
    value = "it's $(touch pwned) `touch pwned2` ; echo hi"
    command = script_command(
        str(script), timeout=5, env=[EnvVar(name="REASON", value=value)], hosts="a:1,b:1"
    )
    subprocess.run(command, check=True, cwd=tmp_path, timeout=10)
    assert out.read_text() == f"{value}|1|a:1,b:1"
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path / "pwned2").exists()


def test_bad_variable_names_are_refused() -> None:
    with pytest.raises(ValueError, match="not a shell variable name"):
        script_command("s.sh", timeout=1, env=[EnvVar(name="A-B", value="x")], hosts="")
