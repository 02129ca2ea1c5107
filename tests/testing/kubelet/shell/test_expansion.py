"""Word expansion: parameters, substitution, field splitting, globbing."""

from __future__ import annotations

from etctl.testing._kubelet.shell import Shell


def test_variables_expand_and_unquoted_expansions_split(shell: Shell) -> None:
    result = shell.run('echo $NAME "$SPACED" $SPACED; printf "[%s]" $SPACED "$UNSET" $UNSET')
    assert result.output == "world a  b a b\n[a][b][]"


def test_parameter_operators(shell: Shell) -> None:
    script = (
        'echo ${UNSET:-dflt} ${NAME:+alt} ${#NAME} ${X:=set}; echo $X; echo ${UNSET-"two words"}'
    )
    assert shell.run(script).output == "dflt alt 5 set\nset\ntwo words\n"
    failed = shell.run("echo ${UNSET:?is required}; echo after")
    assert (failed.exit_code, failed.output) == (2, "")
    assert failed.errors == "sh: UNSET: is required\n"


def test_command_substitution_strips_trailing_newlines(shell: Shell) -> None:
    assert shell.run('echo "<$(hostname)>" $(echo a; echo b)').output == "<pod-0> a b\n"


def test_globbing(shell: Shell) -> None:
    shell.run("touch /tmp/a.txt /tmp/b.txt /tmp/c.log")
    assert shell.run("echo /tmp/*.txt").output == "/tmp/a.txt /tmp/b.txt\n"
    assert shell.run("echo /tmp/?.log /tmp/*.none '/tmp/*.txt'").output == (
        "/tmp/c.log /tmp/*.none /tmp/*.txt\n"
    )
    assert shell.run("cd /tmp && echo [ab].txt").output == "a.txt b.txt\n"
    assert shell.run("echo /*/config").output == "/etc/config\n"
