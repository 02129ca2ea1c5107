"""``test`` / ``[``: evaluating conditional expressions.

File tests ``-e -f -d -s -r -w -x -h -L`` (there are no links: ``-h``/``-L`` are false),
string tests ``-n -z = == !=``, integer comparisons ``-eq -ne -lt -le -gt -ge``, ``!``,
``-a``, ``-o`` and parentheses. The classic argument-count rules decide ambiguous cases
(``[ -n ]`` is a one-argument test: true). Status 0 is true, 1 false, 2 an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.fs import join

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Shell

__all__ = ["evaluate"]

_FILE_TESTS = frozenset(
    {"-e", "-f", "-d", "-s", "-r", "-w", "-x", "-h", "-L", "-b", "-c", "-p", "-S"}
)
_STRING_TESTS = frozenset({"-n", "-z"})
_BINARY = frozenset({"=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


class _TestError(Exception):
    pass


class _Evaluator:
    def __init__(self, shell: Shell, args: list[str]) -> None:
        self.shell = shell
        self.args = args
        self.pos = 0

    def _peek(self, offset: int = 0) -> str | None:
        index = self.pos + offset
        return self.args[index] if index < len(self.args) else None

    def expression(self) -> bool:
        value = self._and()
        while self._peek() == "-o":
            self.pos += 1
            value = self._and() or value
        return value

    def _and(self) -> bool:
        value = self._not()
        while self._peek() == "-a":
            self.pos += 1
            value = self._not() and value
        return value

    def _not(self) -> bool:
        if self._peek() == "!" and self.pos + 1 < len(self.args):
            self.pos += 1
            return not self._not()
        return self._primary()

    def _primary(self) -> bool:
        current = self._peek()
        if current is None:
            raise _TestError("argument expected")
        if current == "(" and ")" in self.args[self.pos :]:
            self.pos += 1
            value = self.expression()
            if self._peek() != ")":
                raise _TestError("')' expected")
            self.pos += 1
            return value
        following = self._peek(1)
        if following in _BINARY and self._peek(2) is not None:
            self.pos += 3
            return self._binary(current, following, self.args[self.pos - 1])
        if current in _FILE_TESTS | _STRING_TESTS and following is not None:
            self.pos += 2
            return self._unary(current, following)
        self.pos += 1
        return current != ""

    def _unary(self, op: str, operand: str) -> bool:
        if op == "-n":
            return operand != ""
        if op == "-z":
            return operand == ""
        stat = self.shell.fs.stat(join(self.shell.cwd, operand)) if operand else None
        if stat is None:
            return False
        checks = {
            "-e": True,
            "-f": stat.kind == "file",
            "-d": stat.is_dir,
            "-s": stat.size > 0,
            "-r": True,
            "-w": True,
            "-x": bool(stat.mode & 0o111),
            "-c": stat.kind == "device",
        }
        return checks.get(op, False)

    def _binary(self, left: str, op: str, right: str) -> bool:
        if op in ("=", "=="):
            return left == right
        if op == "!=":
            return left != right
        a, b = _number(left), _number(right)
        return {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[op]


def _number(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise _TestError(f"{text}: bad number") from None


def evaluate(shell: Shell, args: list[str], io: IO) -> int:
    """Evaluate ``args`` as a ``test`` expression; returns the exit status."""
    if not args:
        return 1
    evaluator = _Evaluator(shell, args)
    try:
        value = evaluator.expression()
        if evaluator.pos != len(args):
            raise _TestError(f"{args[evaluator.pos]}: unexpected operator")
    except _TestError as exc:
        io.error(f"{shell.args[0]}: test: {exc}\n")
        return 2
    return 0 if value else 1
