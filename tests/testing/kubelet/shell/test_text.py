"""Text builtins: grep (fixed strings), head, tail, wc."""

from __future__ import annotations

from etctl.testing._kubelet.shell import Shell

LINES = "alpha\nbeta\nAlpha two\ngamma\n"


def _seed(shell: Shell) -> None:
    shell.run(f"printf '{LINES}' > /tmp/f; printf 'x\\n' > /tmp/g")


def test_grep_matches_fixed_strings(shell: Shell) -> None:
    _seed(shell)
    assert shell.run("grep alpha /tmp/f").output == "alpha\n"
    assert shell.run("grep -i alpha /tmp/f").output == "alpha\nAlpha two\n"
    assert shell.run("grep -v a /tmp/f").output == ""
    assert shell.run("grep -c a /tmp/f").output == "4\n"
    assert shell.run("grep -n gamma /tmp/f").output == "4:gamma\n"
    assert shell.run("grep -q beta /tmp/f").exit_code == 0
    assert shell.run("grep -q delta /tmp/f").exit_code == 1
    assert shell.run("grep 'a.*' /tmp/f").exit_code == 1
    assert shell.run("grep -e beta -e gamma /tmp/f").output == "beta\ngamma\n"
    assert shell.run("grep x /tmp/f /tmp/g").output == "/tmp/g:x\n"
    assert shell.run("grep -l x /tmp/f /tmp/g").output == "/tmp/g\n"
    assert shell.run("grep -w two /tmp/f; grep -w tw /tmp/f").output == "Alpha two\n"
    missing = shell.run("grep x /nope")
    assert (missing.exit_code, missing.errors) == (2, "grep: /nope: No such file or directory\n")
    assert shell.run("echo abc | grep b").output == "abc\n"


def test_head_and_tail(shell: Shell) -> None:
    _seed(shell)
    assert shell.run("head -n 2 /tmp/f").output == "alpha\nbeta\n"
    assert shell.run("head -1 /tmp/f").output == "alpha\n"
    assert shell.run("tail -n 1 /tmp/f").output == "gamma\n"
    assert shell.run("tail -n +3 /tmp/f").output == "Alpha two\ngamma\n"
    assert shell.run("cat /tmp/f | tail -2").output == "Alpha two\ngamma\n"
    assert (
        shell.run("head -n 1 /tmp/f /tmp/g").output
        == "==> /tmp/f <==\nalpha\n\n==> /tmp/g <==\nx\n"
    )
    assert shell.run("head -n x /tmp/f").errors == "head: invalid number 'x'\n"
    assert shell.run("tail /nope").errors == "tail: can't open '/nope': No such file or directory\n"


def test_wc(shell: Shell) -> None:
    _seed(shell)
    assert shell.run("wc -l /tmp/f").output == "4 /tmp/f\n"
    assert shell.run("cat /tmp/f | wc -l").output == "4\n"
    assert shell.run("wc -w < /tmp/f").output == "5\n"
    assert shell.run("wc /tmp/g").output == "      1       1       2 /tmp/g\n"
    assert shell.run("wc -l /tmp/f /tmp/g").output == "4 /tmp/f\n1 /tmp/g\n5 total\n"
