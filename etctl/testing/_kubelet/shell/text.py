"""Shell builtins that read text: ``grep``, ``head``, ``tail`` and ``wc``.

``grep [-qvcinhHlFE] [-e PATTERN] PATTERN [FILE...]`` matches *fixed strings* only: a pattern
is never read as a regular expression (``-F`` is implied; ``-E`` is accepted and ignored, so
``grep -E 'a|b'`` looks for the text ``a|b``). ``head``/``tail`` take ``-n N`` (``tail -n +N``
starts at line N) or ``-N``; ``wc`` counts ``-l`` lines, ``-w`` words and ``-c`` bytes.
Reading ``-`` or no file reads stdin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.fs import FsError, join

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Builtin, Shell

__all__ = ["COMMANDS"]


def _inputs(
    shell: Shell, names: list[str], io: IO, command: str
) -> Iterator[tuple[str, bytes | None]]:
    """``(name, content)`` per operand; content None (after an error line) when unreadable."""
    for name in names or ["-"]:
        if name == "-":
            yield "(standard input)", io.read()
            continue
        path = join(shell.cwd, name)
        stat = shell.fs.stat(path)
        if stat is not None and stat.is_dir:
            io.error(f"{command}: {name}: Is a directory\n")
            yield name, None
            continue
        try:
            yield name, shell.fs.read(path)
        except FsError as exc:
            quoted = f"can't open '{name}'" if command in ("head", "tail", "wc") else name
            io.error(f"{command}: {quoted}: {exc.message}\n")
            yield name, None


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _grep_options(argv: list[str], io: IO) -> tuple[set[str], list[str], list[str]] | None:
    """Flags, patterns and files of a ``grep`` command line (None after an error line)."""
    args = argv[1:]
    flags: set[str] = set()
    patterns: list[str] = []
    operands: list[str] = []
    while args:
        arg = args.pop(0)
        if arg == "--":
            operands.extend(args)
            break
        if arg == "-e" and args:
            patterns.append(args.pop(0))
        elif arg.startswith("-") and len(arg) > 1 and not operands:
            for letter in arg[1:]:
                if letter not in "qvcinhHlFEsw":
                    io.error(f"grep: invalid option -- '{letter}'\n")
                    return None
                flags.add(letter)
        else:
            operands.append(arg)
    if not patterns:
        if not operands:
            io.error("grep: no pattern given\n")
            return None
        patterns.append(operands.pop(0))
    return flags, patterns, operands


def grep(shell: Shell, argv: list[str], io: IO) -> int:
    """``grep [-qvcinhHlFE] [-e PATTERN] PATTERN [FILE...]`` (fixed strings)."""
    parsed = _grep_options(argv, io)
    if parsed is None:
        return 2
    flags, patterns, operands = parsed
    fold = "i" in flags
    wanted = [p.lower() if fold else p for p in patterns]
    prefix = "H" in flags or (len(operands) > 1 and "h" not in flags)
    matched = False
    status_error = False
    for name, data in _inputs(shell, operands, io, "grep"):
        if data is None:
            status_error = "s" not in flags or status_error
            continue
        count = 0
        for number, raw in enumerate(data.decode(errors="replace").splitlines(), start=1):
            line = raw.lower() if fold else raw
            hit = any(_contains(line, p, whole="w" in flags) for p in wanted)
            if hit == ("v" in flags):
                continue
            count += 1
            matched = True
            if "q" in flags:
                return 0
            if "c" in flags or "l" in flags:
                continue
            lead = f"{name}:" if prefix else ""
            lead += f"{number}:" if "n" in flags else ""
            io.write(f"{lead}{raw}\n")
        if "c" in flags:
            io.write(f"{name}:{count}\n" if prefix else f"{count}\n")
        elif "l" in flags and count:
            io.write(f"{name}\n")
    if status_error:
        return 2
    return 0 if matched else 1


def _contains(line: str, pattern: str, *, whole: bool) -> bool:
    if not whole:
        return pattern in line
    start = line.find(pattern)
    while start >= 0:
        before = line[start - 1 : start]
        after = line[start + len(pattern) : start + len(pattern) + 1]
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = line.find(pattern, start + 1)
    return False


def _count(argv: list[str], io: IO, command: str) -> tuple[int, bool, list[str]] | None:
    """``-n N``/``-N``/``-nN``: the count, whether it was ``+N``, and the operands."""
    args = argv[1:]
    count, plus = 10, False
    operands: list[str] = []
    while args:
        arg = args.pop(0)
        text: str | None = None
        if arg == "-n" and args:
            text = args.pop(0)
        elif arg.startswith("-n") and len(arg) > 2:
            text = arg[2:]
        elif arg[:1] == "-" and arg[1:].isdigit():
            text = arg[1:]
        elif arg.startswith("-") and arg != "-":
            io.error(f"{command}: invalid option -- '{arg[1:2]}'\n")
            return None
        else:
            operands.append(arg)
            continue
        plus = text.startswith("+")
        try:
            count = int(text.lstrip("+-"))
        except ValueError:
            io.error(f"{command}: invalid number '{text}'\n")
            return None
    return count, plus, operands


def _excerpt(
    shell: Shell,
    argv: list[str],
    io: IO,
    command: str,
    pick: Callable[[list[bytes], int, bool], list[bytes]],
) -> int:
    """Write the lines ``pick`` chooses of each input, headed by its name when there are several."""
    parsed = _count(argv, io, command)
    if parsed is None:
        return 1
    count, plus, operands = parsed
    status = 0
    for index, (name, data) in enumerate(_inputs(shell, operands, io, command)):
        if data is None:
            status = 1
            continue
        if len(operands) > 1:
            io.write(("\n" if index else "") + f"==> {name} <==\n")
        io.write(b"".join(pick(_lines(data), count, plus)))
    return status


def head(shell: Shell, argv: list[str], io: IO) -> int:
    """``head [-n N] [FILE...]``."""
    return _excerpt(shell, argv, io, "head", lambda lines, count, _plus: lines[:count])


def _tail_lines(lines: list[bytes], count: int, plus: bool) -> list[bytes]:
    """The last ``count`` lines, or from line ``count`` on (``+N``)."""
    if plus:
        return lines[max(count - 1, 0) :]
    return lines[-count:] if count else []


def tail(shell: Shell, argv: list[str], io: IO) -> int:
    """``tail [-n [+]N] [FILE...]``."""
    return _excerpt(shell, argv, io, "tail", _tail_lines)


def wc(shell: Shell, argv: list[str], io: IO) -> int:
    """``wc [-lwc] [FILE...]``."""
    flags: set[str] = set()
    operands: list[str] = []
    for arg in argv[1:]:
        if arg.startswith("-") and len(arg) > 1:
            for letter in arg[1:]:
                if letter not in "lwcm":
                    io.error(f"wc: invalid option -- '{letter}'\n")
                    return 1
                flags.add("c" if letter == "m" else letter)
        else:
            operands.append(arg)
    shown = [f for f in "lwc" if f in flags] or ["l", "w", "c"]
    status = 0
    totals = {"l": 0, "w": 0, "c": 0}
    rows = 0
    for name, data in _inputs(shell, operands, io, "wc"):
        if data is None:
            status = 1
            continue
        counts = {"l": data.count(b"\n"), "w": len(data.split()), "c": len(data)}
        for key in totals:
            totals[key] += counts[key]
        rows += 1
        numbers = " ".join(str(counts[f]) if len(shown) == 1 else f"{counts[f]:>7}" for f in shown)
        io.write(numbers + (f" {name}" if operands else "") + "\n")
    if rows > 1:
        numbers = " ".join(str(totals[f]) if len(shown) == 1 else f"{totals[f]:>7}" for f in shown)
        io.write(f"{numbers} total\n")
    return status


COMMANDS: dict[str, Builtin] = {"grep": grep, "head": head, "tail": tail, "wc": wc}
