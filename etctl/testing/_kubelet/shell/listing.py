"""Shell builtins that describe files: ``ls [-1aAdlR]`` and ``stat [-c FORMAT]``.

Modes are the ones the filesystem recorded (``chmod``, volume ``mode``/``defaultMode``);
ownership is always ``root``; ``ls -l`` prints busybox's columns, ``stat -c`` understands
``%a %A %F %n %s %U %G %u %g %y %%``.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.files import parse_options
from etctl.testing._kubelet.shell.fs import ENOENT, Stat, join, mode_string

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Builtin, Shell

__all__ = ["COMMANDS"]


def _long(stat: Stat, name: str) -> str:
    when = stat.mtime.strftime("%b %e %H:%M")
    links = 2 if stat.is_dir else 1
    return f"{mode_string(stat)} {links:4} root     root     {stat.size:>9} {when} {name}\n"


def ls(shell: Shell, argv: list[str], io: IO) -> int:
    """``ls [-1aAdlR] [PATH...]``."""
    parsed = parse_options(argv, "1aAdlRFh", io, "ls")
    if parsed is None:
        return 1
    flags, operands = parsed
    names = operands or ["."]
    status = 0
    files: list[tuple[str, Stat]] = []
    directories: list[tuple[str, str]] = []
    for name in names:
        path = join(shell.cwd, name)
        stat = shell.fs.stat(path)
        if stat is None:
            io.error(f"ls: {name}: {ENOENT}\n")
            status = 1
        elif stat.is_dir and "d" not in flags:
            directories.append((name, path))
        else:
            files.append((name, stat))
    for name, stat in files:
        io.write(_long(stat, name) if "l" in flags else name + "\n")
    headers = len(names) > 1 or "R" in flags
    while directories:
        name, path = directories.pop(0)
        if headers:
            io.write(f"{name}:\n")
        directories.extend(_list_directory(shell, name, path, flags, io))
        if headers and directories:
            io.write("\n")
    return status


def _list_directory(
    shell: Shell, name: str, path: str, flags: set[str], io: IO
) -> list[tuple[str, str]]:
    """Print one directory's entries; returns its subdirectories (for ``-R``)."""
    entries = shell.fs.listdir(path)
    if "a" in flags:
        entries = [".", "..", *entries]
    elif "A" not in flags:
        entries = [e for e in entries if not e.startswith(".")]
    below: list[tuple[str, str]] = []
    for entry in entries:
        child = posixpath.normpath(posixpath.join(path, entry))
        stat = shell.fs.stat(child)
        if stat is None:
            continue
        io.write(_long(stat, entry) if "l" in flags else entry + "\n")
        if "R" in flags and stat.is_dir and entry not in (".", ".."):
            below.append((posixpath.join(name, entry), child))
    return below


def _file_type(stat: Stat) -> str:
    if stat.is_dir:
        return "directory"
    if stat.kind == "device":
        return "character special file"
    return "regular file" if stat.size else "regular empty file"


def stat_(shell: Shell, argv: list[str], io: IO) -> int:
    """``stat [-c FORMAT] PATH...``."""
    args = argv[1:]
    fmt: str | None = None
    if args[:1] == ["-c"] and len(args) > 1:
        fmt, args = args[1], args[2:]
    elif args and args[0].startswith("--format="):
        fmt, args = args[0].split("=", 1)[1], args[1:]
    if not args:
        io.error("stat: missing operand\n")
        return 1
    status = 0
    for name in args:
        stat = shell.fs.stat(join(shell.cwd, name))
        if stat is None:
            io.error(f"stat: can't stat '{name}': {ENOENT}\n")
            status = 1
            continue
        values = {
            "a": f"{stat.mode:o}",
            "A": mode_string(stat),
            "F": _file_type(stat),
            "n": name,
            "s": str(stat.size),
            "U": "root",
            "G": "root",
            "u": "0",
            "g": "0",
            "y": stat.mtime.strftime("%Y-%m-%d %H:%M:%S.000000000 +0000"),
            "%": "%",
        }
        if fmt is None:
            io.write(
                f"  File: {name}\n  Size: {stat.size}\t{_file_type(stat)}\n"
                f"Access: ({stat.mode:04o}/{mode_string(stat)})  Uid: (    0/    root)   "
                f"Gid: (    0/    root)\nModify: {values['y']}\n"
            )
        else:
            io.write(_format(fmt, values) + "\n")
    return status


def _format(fmt: str, values: dict[str, str]) -> str:
    return re.sub(r"%(.)", lambda m: values.get(m.group(1), m.group(0)), fmt)


COMMANDS: dict[str, Builtin] = {"ls": ls, "stat": stat_}
