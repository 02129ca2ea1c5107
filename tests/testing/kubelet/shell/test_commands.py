"""Builtins: echo, printf, variables, env, cd, hostname, sleep, timeout, sh."""

from __future__ import annotations

import pytest

from etctl.testing._kubelet.shell import Shell


@pytest.mark.parametrize(
    ("script", "output"),
    [
        ("echo a b", "a b\n"),
        ("echo -n a", "a"),
        ("echo 'a\\tb'", "a\\tb\n"),
        ("echo -e 'a\\tb\\x41\\0101\\c ignored'", "a\tbAA"),
        ("printf '%s|%5s|%-3s|\\n' a b c", "a|    b|c  |\n"),
        ("printf '%d %03i %x %o %c %%\\n' 7 5 255 8 word", "7 005 ff 10 w %\n"),
        ("printf '%.2f %e\\n' 3.14159 1000", "3.14 1.000000e+03\n"),
        ("printf '%s,' a b c", "a,b,c,"),
        ("printf '%b' 'x\\ny'", "x\ny"),
        ("printf 'no args\\n' extra", "no args\n"),
        ("printf '%d\\n' \"'A\"", "65\n"),
    ],
)
def test_output(shell: Shell, script: str, output: str) -> None:
    result = shell.run(script)
    assert (result.exit_code, result.output, result.errors) == (0, output, "")


def test_printf_reports_bad_numbers(shell: Shell) -> None:
    result = shell.run("printf '%d\\n' x")
    assert (result.exit_code, result.output, result.errors) == (
        1,
        "0\n",
        "printf: invalid number 'x'\n",
    )


def test_cd_and_pwd(shell: Shell) -> None:
    assert shell.run("cd /etc/config; pwd; cd ..; pwd; cd -; pwd").output == (
        "/etc/config\n/etc\n/etc/config\n"
    )
    failed = shell.run("cd /nowhere")
    assert (failed.exit_code, failed.errors) == (
        2,
        "sh: cd: can't cd to /nowhere: No such file or directory\n",
    )


def test_hostname_basename_dirname(shell: Shell) -> None:
    assert shell.run("hostname; basename /a/b.txt .txt; dirname /a/b.txt").output == (
        "pod-0\nb\n/a\n"
    )
    refused = shell.run("hostname other")
    assert refused.errors == "hostname: sethostname: Operation not permitted\n"


def test_sleep_and_timeout_take_no_time(shell: Shell) -> None:
    assert shell.run("sleep 3600; sleep 1m 2h; timeout 5 echo done").output == "done\n"
    assert shell.run("sleep soon").errors == "sleep: invalid number 'soon'\n"
    bad = shell.run("timeout x echo")
    assert (bad.exit_code, bad.errors) == (125, "timeout: invalid time interval 'x'\n")
    assert shell.run("timeout -s KILL 1 sh -c 'exit 3'").exit_code == 3


def test_exit_with_a_bad_number(shell: Shell) -> None:
    result = shell.run("exit x")
    assert (result.exit_code, result.errors) == (2, "sh: exit: Illegal number: x\n")


def test_seq_counts_as_coreutils_does(shell: Shell) -> None:
    assert shell.run("seq 3").output == "1\n2\n3\n"
    assert shell.run("seq 2 4").output == "2\n3\n4\n"
    assert shell.run("seq 5 -2 1").output == "5\n3\n1\n"
    assert shell.run("seq 0").output == ""
    assert shell.run("seq").exit_code == 1
    assert shell.run("seq 1 0 3").errors == "seq: invalid Zero increment value: '0'\n"


def test_lookups_without_a_resolver_find_only_etc_hosts(shell: Shell) -> None:
    shell.run("printf '10.0.0.5\\tpod-0\\n' > /etc/hosts")
    assert shell.run("getent hosts pod-0").output == "10.0.0.5        pod-0\n"
    assert shell.run("getent hosts other").exit_code == 2
    assert shell.run("nslookup pod-0").exit_code == 1
    assert shell.run("getent passwd root").exit_code == 1
