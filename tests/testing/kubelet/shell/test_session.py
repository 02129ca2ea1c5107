"""Session builtins: export, unset, env and sh."""

from __future__ import annotations

from etctl.testing._kubelet.shell import Shell


def test_export_unset_env(shell: Shell) -> None:
    assert shell.run("export A=1 B; env | grep -e A= -e B=").output == "A=1\nB=\n"
    assert shell.run("unset A; echo [$A]").output == "[]\n"
    assert shell.run("env -i X=1 env").output == "X=1\n"
    assert shell.run("env -u NAME env | grep -c NAME").output == "0\n"
    assert shell.run("export -p | grep NAME").output == "export NAME='world'\n"


def test_sh_runs_scripts_in_a_subshell(shell: Shell) -> None:
    result = shell.run("A=outer; sh -c 'A=inner; echo $A $0 $@' zero one two; echo $A")
    assert result.output == "inner zero one two\nouter\n"
    assert shell.run("echo 'echo from stdin' | sh").output == "from stdin\n"
    assert shell.run("bash -ec 'false; echo no'").exit_code == 1
    missing = shell.run("sh /tmp/none.sh")
    assert (missing.exit_code, missing.errors) == (
        127,
        "sh: can't open '/tmp/none.sh': No such file or directory\n",
    )
