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
    result = shell.run("case x in esac")
    assert result.exit_code == 2
    assert result.errors.startswith("sh: syntax error: 'case' is not supported")


def test_if_elif_else_pick_the_first_branch_whose_condition_holds(shell: Shell) -> None:
    script = "if [ $1 = a ]; then echo A; elif [ $1 = b ]; then echo B; else echo other; fi"
    assert shell.child(["sh", "a"]).run(script).output == "A\n"
    assert shell.child(["sh", "b"]).run(script).output == "B\n"
    assert shell.child(["sh", "c"]).run(script).output == "other\n"
    assert shell.run("if false; then echo no; fi").exit_code == 0


def test_for_loops_over_words_and_positional_parameters(shell: Shell) -> None:
    assert shell.run("for i in $(seq 3) x; do echo $i; done").output == "1\n2\n3\nx\n"
    looped = shell.child(["sh", "p", "q"]).run("for a; do echo $a; done")
    assert looped.output == "p\nq\n"
    multiline = shell.run("for i in a b\ndo\n  echo $i\ndone\necho end")
    assert multiline.output == "a\nb\nend\n"


def test_break_and_continue_steer_the_enclosing_loops(shell: Shell) -> None:
    script = (
        "for i in 1 2 3 4; do "
        "if [ $i = 2 ]; then continue; fi; "
        "if [ $i = 4 ]; then break; fi; "
        "echo $i; done"
    )
    assert shell.run(script).output == "1\n3\n"
    nested = "for a in x y; do for b in 1 2; do echo $a$b; break 2; done; done"
    assert shell.run(nested).output == "x1\n"
    assert shell.run("break; echo after").exit_code == 0


def test_while_and_until_loop_on_their_condition(shell: Shell) -> None:
    shell.run("echo > /tmp/n")
    counted = shell.run(
        "while [ $(wc -l < /tmp/n) -lt 3 ]; do echo x >> /tmp/n; done; wc -l < /tmp/n"
    )
    assert counted.output.strip() == "3"
    assert shell.run("until true; do echo never; done").output == ""


def test_set_e_spares_conditions_and_a_runaway_loop_ends_the_shell(shell: Shell) -> None:
    guarded = shell.run("set -e; if false; then :; fi; while false; do :; done; echo ok")
    assert guarded.output == "ok\n"
    runaway = shell.run("while true; do :; done; echo after")
    assert runaway.exit_code == 2
    assert "a loop ran 100000 times" in runaway.errors


def test_training_operators_master_wait_runs_as_written(shell: Shell) -> None:
    # The init container training-operator gives a PyTorchJob's workers, verbatim.
    script = (
        "err=1;for i in $(seq 100); do if nslookup job-master-0; then err=0 && break; fi;"
        "echo waiting for master; sleep 2; done; exit $err"
    )
    missing = shell.run(script)
    assert missing.exit_code == 1
    assert missing.output.count("waiting for master") == 100
    found = Shell(shell.fs, resolver=lambda name: (f"{name}.default.svc", ("10.0.0.9",)))
    assert found.run(script).exit_code == 0


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
