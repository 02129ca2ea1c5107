"""The interpreter: expansion, field splitting, globbing, redirections, pipes, statuses, options."""

from __future__ import annotations

from etctl.testing._kubelet.shell import Shell


def test_exit_status_and_and_or(shell: Shell) -> None:
    result = shell.run("false && echo no || echo yes; true; echo $?; false; echo $?")
    assert result.output == "yes\n0\n1\n"
    assert shell.run("exit 7; echo never").exit_code == 7
    assert shell.run("! true").exit_code == 1


def test_unknown_commands_exit_127(shell: Shell) -> None:
    result = shell.run("frobnicate --now")
    assert result.exit_code == 127
    assert result.errors == "sh: frobnicate: not found\n"


def test_builtins_answer_to_their_bin_paths(shell: Shell) -> None:
    assert shell.run("/bin/echo a; /usr/bin/env | /bin/grep -c NAME").output == "a\n1\n"


def test_redirections_to_files_and_descriptors(shell: Shell) -> None:
    result = shell.run(
        "echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f; cat /nope 2>/tmp/err; cat /tmp/err; "
        "echo to-err >&2; sh -c 'echo both; echo err >&2' > /tmp/b 2>&1; cat < /tmp/b; "
        "echo gone > /dev/null"
    )
    assert result.output == (
        "one\ntwo\ncat: can't open '/nope': No such file or directory\nboth\nerr\n"
    )
    assert result.errors == "to-err\n"


def test_a_failed_redirection_skips_the_command(shell: Shell) -> None:
    result = shell.run("echo x > /missing/dir/file; echo $?")
    assert result.output == "1\n"
    assert result.errors == "sh: can't create /missing/dir/file: No such file or directory\n"


def test_pipes_feed_each_command_the_previous_output(shell: Shell) -> None:
    result = shell.run("cat /etc/config/hostfile | grep worker | wc -l")
    assert result.output == "2\n"
    assert shell.run("false | true").exit_code == 0
    assert shell.run("set -o pipefail; false | true").exit_code == 1


def test_stdin_is_consumed_once(shell: Shell) -> None:
    assert shell.run("cat; cat", stdin=b"data\n").output == "data\n"


def test_assignments_prefixing_a_command_are_temporary(shell: Shell) -> None:
    assert shell.run("A=1 env | grep ^A=; echo [$A]; B=2; echo $B").output == "[]\n2\n"
    assert shell.run("A=1 sh -c 'echo $A'").output == "1\n"


def test_set_options(shell: Shell) -> None:
    errexit = shell.run("set -e; echo a; false; echo b")
    assert (errexit.exit_code, errexit.output) == (1, "a\n")
    guarded = shell.run("set -e; false || true; false && true; echo still")
    assert guarded.output == "still\n"
    nounset = shell.run("set -u; echo $NOPE; echo after")
    assert nounset.exit_code == 2
    assert nounset.errors == "sh: NOPE: parameter not set\n"
    traced = shell.run("set -x; echo hi")
    assert traced.errors == "+ echo hi\n"


def test_syntax_errors_exit_2(shell: Shell) -> None:
    result = shell.run("while true; do :; done")
    assert result.exit_code == 2
    assert result.errors.startswith("sh: syntax error: 'while' is not supported")


def test_script_files_run_when_executable(shell: Shell) -> None:
    shell.run("printf 'echo script $1\\nexit 5\\n' > /tmp/s.sh")
    denied = shell.run("/tmp/s.sh x")
    assert (denied.exit_code, denied.errors) == (126, "sh: /tmp/s.sh: Permission denied\n")
    ran = shell.run("chmod +x /tmp/s.sh; /tmp/s.sh x; echo $?; sh /tmp/s.sh y")
    assert ran.output == "script x\n5\nscript y\n"


def test_run_argv_runs_without_parsing(shell: Shell) -> None:
    result = shell.run_argv(["echo", "$NAME", "a;b"])
    assert result.output == "$NAME a;b\n"
    assert shell.run_argv(["sh", "-c", "exit 3"]).exit_code == 3


def test_exit_in_a_pipeline_only_ends_that_stage(shell: Shell) -> None:
    assert shell.run("exit 4 | echo after; echo end").output == "after\nend\n"


def test_runaway_recursion_stops(shell: Shell) -> None:
    shell.run("printf 'sh /tmp/r.sh\\n' > /tmp/r.sh")
    assert shell.run("sh /tmp/r.sh").exit_code == 2
