"""Listing builtins: ls and stat."""

from __future__ import annotations

from etctl.testing._kubelet.shell import Shell


def test_ls(shell: Shell) -> None:
    shell.run("touch /tmp/b /tmp/a /tmp/.hidden; mkdir /tmp/d")
    assert shell.run("ls /tmp").output == "a\nb\nd\n"
    assert shell.run("ls -A /tmp").output == ".hidden\na\nb\nd\n"
    assert shell.run("ls -a /tmp").output.startswith(".\n..\n.hidden\n")
    assert shell.run("ls /tmp/a /etc/config").output == "/tmp/a\n/etc/config:\nhostfile\n"
    assert shell.run("ls -d /tmp").output == "/tmp\n"
    assert shell.run("ls /").output == "data\netc\ntmp\n"
    assert shell.run("ls /none").errors == "ls: /none: No such file or directory\n"
    recursive = shell.run("ls -R /etc").output
    assert recursive == "/etc:\nconfig\n\n/etc/config:\nhostfile\n"


def test_stat_default_format(shell: Shell) -> None:
    output = shell.run("stat /etc/config/hostfile").output
    assert output.startswith("  File: /etc/config/hostfile\n  Size: 34\tregular file\n")
    assert "Access: (0444/-r--r--r--)" in output
