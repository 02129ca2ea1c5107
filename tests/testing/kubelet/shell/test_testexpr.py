"""``test`` and ``[``."""

from __future__ import annotations

import pytest

from etctl.testing._kubelet.shell import Shell


@pytest.mark.parametrize(
    ("expression", "status"),
    [
        ("-f /etc/config/hostfile", 0),
        ("-d /etc/config", 0),
        ("-e /nope", 1),
        ("-s /etc/config/hostfile", 0),
        ("-x /etc/config/hostfile", 1),
        ("-n ''", 1),
        ("-z ''", 0),
        ("abc", 0),
        ("''", 1),
        ("-n", 0),
        ("a = a", 0),
        ("a != a", 1),
        ("3 -lt 10", 0),
        ("3 -ge 10", 1),
        ("! -e /nope", 0),
        ("-e /nope -o -d /tmp", 0),
        ("-d /tmp -a -e /nope", 1),
        ("'(' a = b ')' -o x", 0),
    ],
)
def test_expressions(shell: Shell, expression: str, status: int) -> None:
    assert shell.run(f"test {expression}").exit_code == status
    assert shell.run(f"[ {expression} ]").exit_code == status


def test_errors(shell: Shell) -> None:
    assert shell.run("test").exit_code == 1
    bad = shell.run("[ 1 -eq x ]")
    assert (bad.exit_code, bad.errors) == (2, "sh: test: x: bad number\n")
    unclosed = shell.run("[ 1 = 1")
    assert (unclosed.exit_code, unclosed.errors) == (2, "[: missing ]\n")
    extra = shell.run("test a b")
    assert extra.exit_code == 2
