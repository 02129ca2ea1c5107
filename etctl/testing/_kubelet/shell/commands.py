"""Shell builtins for output, control and the environment of a command.

``echo`` (``-n``, ``-e``, ``-E``), ``printf`` (``%s %b %c %d %i %u %o %x %X %e %f %g %%`` with
flags, width and precision; the format is reused while arguments remain), ``true``, ``false``,
``:``, ``exit``, ``cd``, ``pwd``, ``hostname``, ``basename``, ``dirname``, ``sleep`` and
``timeout`` (both virtual: they return at once) and ``test``/``[``. Messages follow busybox,
the shell of small images.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.fs import join

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Builtin, Shell

__all__ = ["COMMANDS", "escapes"]

_OCTAL = re.compile(r"\\0?([0-7]{1,3})")
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    '"': '"',
    "'": "'",
}
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")
_OPTIONS = {"e": "errexit", "u": "nounset", "x": "xtrace"}


def escapes(text: str) -> tuple[str, bool]:
    r"""Backslash escapes of ``echo -e``/``printf`` resolved; True when ``\c`` stopped output."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        following = text[index + 1]
        if following == "c":
            return "".join(out), True
        if following in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[following])
            index += 2
        elif following == "x" and re.match(r"[0-9a-fA-F]{1,2}", text[index + 2 :]):
            digits = re.match(r"[0-9a-fA-F]{1,2}", text[index + 2 :])
            assert digits is not None
            out.append(chr(int(digits.group(0), 16)))
            index += 2 + len(digits.group(0))
        elif (octal := _OCTAL.match(text, index)) is not None:
            out.append(chr(int(octal.group(1), 8)))
            index = octal.end()
        else:
            out.append(char)
            index += 1
    return "".join(out), False


def echo(shell: Shell, argv: list[str], io: IO) -> int:
    """``echo [-neE] [ARG...]``."""
    args = argv[1:]
    newline, interpret = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        for flag in args[0][1:]:
            if flag == "n":
                newline = False
            else:
                interpret = flag == "e"
        args = args[1:]
    text = " ".join(args)
    if interpret:
        text, stop = escapes(text)
        if stop:
            io.write(text)
            return 0
    io.write(text + ("\n" if newline else ""))
    return 0


_CONVERSION = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?([diouxXcsbeEfgG%])")


def printf(shell: Shell, argv: list[str], io: IO) -> int:
    """``printf FORMAT [ARG...]``."""
    if len(argv) < 2:
        io.error("printf: usage: printf FORMAT [ARGUMENT]...\n")
        return 1
    fmt = argv[1]
    args = _Arguments(argv[2:])
    status = 0
    out: list[str] = []
    while True:
        start = args.used
        pieces: list[str] = []
        position = 0
        for match in _CONVERSION.finditer(fmt):
            pieces.append(escapes(fmt[position : match.start()])[0])
            position = match.end()
            flags, width, precision, kind = match.groups()
            if kind == "%":
                pieces.append("%")
                continue
            if width == "*":
                width = args.take() or "0"
            if precision == "*":
                precision = args.take() or "0"
            value = args.take()
            rendered, ok = _convert(flags, width, precision, kind, value)
            if not ok:
                io.error(f"printf: invalid number '{value}'\n")
                status = 1
            pieces.append(rendered)
        tail, stop = escapes(fmt[position:])
        pieces.append(tail)
        out.append("".join(pieces))
        if stop or args.used == start or args.used >= len(args.values):
            break
    io.write("".join(out))
    return status


class _Arguments:
    """The arguments ``printf`` consumes, in order (missing ones read as empty)."""

    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.used = 0

    def take(self) -> str | None:
        self.used += 1
        return self.values[self.used - 1] if self.used <= len(self.values) else None


def _convert(
    flags: str, width: str | None, precision: str | None, kind: str, value: str | None
) -> tuple[str, bool]:
    spec = "%" + flags + (width or "") + (f".{precision}" if precision is not None else "")
    if kind in "sb":
        text = value or ""
        if kind == "b":
            text = escapes(text)[0]
        return (spec + "s") % text, True
    if kind == "c":
        return (spec + "s") % (value or "")[:1], True
    try:
        if kind in "eEfgG":
            number: float | int = float(value) if value else 0.0
            return (spec + kind) % number, True
        number = _integer(value or "0")
    except ValueError:
        return (spec + ("d" if kind in "diu" else kind)) % 0, False
    return (spec + ("d" if kind in "iu" else kind)) % number, True


def _integer(text: str) -> int:
    if text[:1] in ("'", '"'):
        return ord(text[1:2] or "\0")
    return int(text, 0) if text.lower().startswith(("0x", "-0x")) else int(text)


def true(shell: Shell, argv: list[str], io: IO) -> int:
    """``true``, ``:``."""
    return 0


def false(shell: Shell, argv: list[str], io: IO) -> int:
    """``false``."""
    return 1


def exit_(shell: Shell, argv: list[str], io: IO) -> int:
    """``exit [N]``."""
    from etctl.testing._kubelet.shell.interpreter import Exit  # noqa: PLC0415 - cycle

    if len(argv) < 2:
        raise Exit(shell.status)
    try:
        code = int(argv[1])
    except ValueError:
        io.error(f"{shell.args[0]}: exit: Illegal number: {argv[1]}\n")
        raise Exit(2) from None
    raise Exit(code & 0xFF)


def _loop_control(kind: str, shell: Shell, argv: list[str], io: IO) -> int:
    from etctl.testing._kubelet.shell.interpreter import LoopControl  # noqa: PLC0415 - cycle

    levels = 1
    if len(argv) > 1:
        try:
            levels = int(argv[1])
        except ValueError:
            levels = 0
        if levels < 1:
            io.error(f"{shell.args[0]}: {kind}: Illegal number: {argv[1]}\n")
            return 2
    raise LoopControl(kind, levels)


def break_(shell: Shell, argv: list[str], io: IO) -> int:
    """``break [N]``: leave the N-th enclosing loop (outside a loop it does nothing)."""
    return _loop_control("break", shell, argv, io)


def continue_(shell: Shell, argv: list[str], io: IO) -> int:
    """``continue [N]``: go on with the next pass of the N-th enclosing loop."""
    return _loop_control("continue", shell, argv, io)


def seq(shell: Shell, argv: list[str], io: IO) -> int:
    """``seq [FIRST [INCREMENT]] LAST``, integers only, one per line."""
    try:
        numbers = [int(a) for a in argv[1:]]
    except ValueError:
        io.error(f"seq: invalid argument: {' '.join(argv[1:])}\n")
        return 1
    if not 1 <= len(numbers) <= 3:
        io.error("seq: missing operand\n" if not numbers else "seq: extra operand\n")
        return 1
    first, step, last = (
        (1, 1, numbers[0])
        if len(numbers) == 1
        else (numbers[0], 1, numbers[1])
        if len(numbers) == 2
        else (numbers[0], numbers[1], numbers[2])
    )
    if step == 0:
        io.error("seq: invalid Zero increment value: '0'\n")
        return 1
    stop = last + (1 if step > 0 else -1)
    io.write("".join(f"{n}\n" for n in range(first, stop, step)))
    return 0


def cd(shell: Shell, argv: list[str], io: IO) -> int:
    """``cd [DIR]`` (``-`` goes back)."""
    target = argv[1] if len(argv) > 1 else shell.env.get("HOME", "/")
    if target == "-":
        target = shell.env.get("OLDPWD", shell.cwd)
    path = join(shell.cwd, target)
    stat = shell.fs.stat(path)
    if stat is None or not stat.is_dir:
        reason = "No such file or directory" if stat is None else "Not a directory"
        io.error(f"{shell.args[0]}: cd: can't cd to {target}: {reason}\n")
        return 2
    shell.env["OLDPWD"] = shell.cwd
    shell.cwd = path
    shell.env["PWD"] = path
    return 0


def pwd(shell: Shell, argv: list[str], io: IO) -> int:
    """``pwd``."""
    io.write(shell.cwd + "\n")
    return 0


def hostname(shell: Shell, argv: list[str], io: IO) -> int:
    """``hostname`` (setting it is not permitted in a container)."""
    if len(argv) > 1 and not argv[1].startswith("-"):
        io.error("hostname: sethostname: Operation not permitted\n")
        return 1
    io.write(shell.hostname + "\n")
    return 0


def basename(shell: Shell, argv: list[str], io: IO) -> int:
    """``basename PATH [SUFFIX]``."""
    if len(argv) < 2:
        io.error("basename: missing operand\n")
        return 1
    name = posixpath.basename(argv[1].rstrip("/")) or "/"
    if len(argv) > 2 and name.endswith(argv[2]) and name != argv[2]:
        name = name[: -len(argv[2])]
    io.write(name + "\n")
    return 0


def dirname(shell: Shell, argv: list[str], io: IO) -> int:
    """``dirname PATH``."""
    if len(argv) < 2:
        io.error("dirname: missing operand\n")
        return 1
    io.write((posixpath.dirname(argv[1].rstrip("/")) or ".") + "\n")
    return 0


def _seconds(text: str) -> float | None:
    match = _DURATION.match(text)
    if match is None:
        return None
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def sleep(shell: Shell, argv: list[str], io: IO) -> int:
    """``sleep DURATION...``: validated, then returns at once (time is virtual)."""
    if len(argv) < 2:
        io.error("sleep: missing operand\n")
        return 1
    for arg in argv[1:]:
        if _seconds(arg) is None:
            io.error(f"sleep: invalid number '{arg}'\n")
            return 1
    return 0


def timeout(shell: Shell, argv: list[str], io: IO) -> int:
    """``timeout [-s SIG] [-k DURATION] DURATION COMMAND [ARG...]``: runs the command."""
    args = argv[1:]
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag in ("-s", "-k", "--signal", "--kill-after") and args:
            args.pop(0)
        elif flag not in ("--foreground", "--preserve-status", "-v", "--verbose"):
            io.error(f"timeout: unrecognized option '{flag}'\n")
            return 125
    if len(args) < 2:
        io.error("timeout: missing operand\n")
        return 125
    if _seconds(args[0]) is None:
        io.error(f"timeout: invalid time interval '{args[0]}'\n")
        return 125
    return shell.call(args[1:], io)


def test(shell: Shell, argv: list[str], io: IO) -> int:
    """``test EXPRESSION`` and ``[ EXPRESSION ]``."""
    from etctl.testing._kubelet.shell.testexpr import evaluate  # noqa: PLC0415 - cycle

    args = argv[1:]
    if posixpath.basename(argv[0]) == "[":
        if not args or args[-1] != "]":
            io.error("[: missing ]\n")
            return 2
        args = args[:-1]
    return evaluate(shell, args, io)


COMMANDS: dict[str, Builtin] = {
    "echo": echo,
    "printf": printf,
    "true": true,
    ":": true,
    "false": false,
    "exit": exit_,
    "break": break_,
    "continue": continue_,
    "seq": seq,
    "cd": cd,
    "pwd": pwd,
    "hostname": hostname,
    "basename": basename,
    "dirname": dirname,
    "sleep": sleep,
    "timeout": timeout,
    "test": test,
    "[": test,
}
