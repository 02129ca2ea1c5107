"""Shell builtins that change files: ``cat cp mv rm mkdir chmod touch tee``.

Options understood: ``cat [-]``, ``cp [-rRafpv]``, ``mv [-fv]``, ``rm [-rRfv]``,
``mkdir [-p] [-m MODE]``, ``chmod [-R] MODE`` (octal, or symbolic ``[ugoa]*[+-=][rwxX]*``
clauses separated by commas), ``touch [-c]`` and ``tee [-a]``. A new file copied by ``cp``
takes its source's mode under a ``022`` umask (``-p``/``-a`` keep it exactly). Messages follow
busybox.
"""

from __future__ import annotations

import posixpath
import re
from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.fs import ENOENT, ENOTDIR, FsError, join

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Builtin, Shell

__all__ = ["COMMANDS", "apply_mode", "parse_options", "split_options"]

_SYMBOLIC = re.compile(r"^([ugoa]*)([-+=])([rwxX]*)$")
_WHO = {"u": 0o700, "g": 0o070, "o": 0o007}


def split_options(argv: list[str], known: str) -> tuple[set[str], list[str], str | None]:
    """Leading short options (from ``known``), the operands, and an unknown option if any."""
    flags: set[str] = set()
    operands: list[str] = []
    args = argv[1:]
    while args:
        arg = args.pop(0)
        if arg == "--":
            operands.extend(args)
            break
        if arg.startswith("-") and len(arg) > 1 and not operands:
            for letter in arg[1:]:
                if letter not in known:
                    return flags, operands, letter
                flags.add(letter)
        else:
            operands.append(arg)
    return flags, operands, None


def parse_options(
    argv: list[str], known: str, io: IO, command: str
) -> tuple[set[str], list[str]] | None:
    """:func:`split_options`, reporting an unknown option as busybox does (None after that)."""
    flags, operands, bad = split_options(argv, known)
    if bad:
        io.error(f"{command}: invalid option -- '{bad}'\n")
        return None
    return flags, operands


def _path(shell: Shell, name: str) -> str:
    return join(shell.cwd, name)


def cat(shell: Shell, argv: list[str], io: IO) -> int:
    """``cat [FILE|-]...``."""
    names = argv[1:] or ["-"]
    status = 0
    for name in names:
        if name == "-":
            io.write(io.read())
            continue
        path = _path(shell, name)
        stat = shell.fs.stat(path)
        if stat is not None and stat.is_dir:
            io.error("cat: read error: Is a directory\n")
            status = 1
            continue
        try:
            io.write(shell.fs.read(path))
        except FsError as exc:
            io.error(f"cat: can't open '{name}': {exc.message}\n")
            status = 1
    return status


def tee(shell: Shell, argv: list[str], io: IO) -> int:
    """``tee [-a] [FILE...]``: stdin to stdout and to each file."""
    parsed = parse_options(argv, "ai", io, "tee")
    if parsed is None:
        return 1
    flags, names = parsed
    data = io.read()
    status = 0
    for name in names:
        try:
            shell.fs.write(_path(shell, name), data, append="a" in flags)
        except FsError as exc:
            io.error(f"tee: {name}: {exc.message}\n")
            status = 1
    io.write(data)
    return status


def _copy(shell: Shell, source: str, target: str, *, recursive: bool, keep_mode: bool) -> None:
    stat = shell.fs.stat(source)
    if stat is None:
        raise FsError(ENOENT)
    if stat.is_dir:
        if not recursive:
            raise IsADirectoryError
        if shell.fs.stat(target) is None:
            shell.fs.mkdir(target)
        for entry in shell.fs.listdir(source):
            _copy(
                shell,
                posixpath.join(source, entry),
                posixpath.join(target, entry),
                recursive=True,
                keep_mode=keep_mode,
            )
        return
    existed = shell.fs.stat(target) is not None
    shell.fs.write(target, shell.fs.read(source))
    if keep_mode:
        shell.fs.chmod(target, stat.mode)
    elif not existed:
        shell.fs.chmod(target, stat.mode & 0o755)  # a new file: the source's mode, umask 022


def _transfers(
    shell: Shell, operands: list[str], io: IO, name: str
) -> list[tuple[str, str, str]] | None:
    """``SOURCE... DEST`` as (operand, source path, target path) triples; None after an error.

    Several sources, or a destination that is a directory, put each source into it by its
    base name; otherwise the one source becomes the destination.
    """
    if len(operands) < 2:
        io.error(f"{name}: missing {'file operand' if not operands else 'destination'}\n")
        return None
    target = _path(shell, operands[-1])
    stat = shell.fs.stat(target)
    into = stat is not None and stat.is_dir
    if len(operands) > 2 and not into:
        io.error(f"{name}: '{operands[-1]}' is not a directory\n")
        return None
    moves = []
    for operand in operands[:-1]:
        source = _path(shell, operand)
        dest = posixpath.join(target, posixpath.basename(source)) if into else target
        moves.append((operand, source, dest))
    return moves


def cp(shell: Shell, argv: list[str], io: IO) -> int:
    """``cp [-rRafpv] SOURCE... DEST``."""
    parsed = parse_options(argv, "rRafpvdLP", io, "cp")
    if parsed is None:
        return 1
    flags, operands = parsed
    transfers = _transfers(shell, operands, io, "cp")
    if transfers is None:
        return 1
    recursive = bool(flags & {"r", "R", "a"})
    status = 0
    for name, source, dest in transfers:
        try:
            _copy(shell, source, dest, recursive=recursive, keep_mode=bool(flags & {"a", "p"}))
        except IsADirectoryError:
            io.error(f"cp: omitting directory '{name}'\n")
            status = 1
        except FsError as exc:
            verb = "stat" if exc.message == ENOENT and shell.fs.stat(source) is None else "create"
            shown = name if verb == "stat" else operands[-1]
            io.error(f"cp: can't {verb} '{shown}': {exc.message}\n")
            status = 1
    return status


def mv(shell: Shell, argv: list[str], io: IO) -> int:
    """``mv [-fv] SOURCE... DEST``."""
    parsed = parse_options(argv, "fvin", io, "mv")
    if parsed is None:
        return 1
    _flags, operands = parsed
    transfers = _transfers(shell, operands, io, "mv")
    if transfers is None:
        return 1
    status = 0
    for name, source, dest in transfers:
        try:
            shell.fs.rename(source, dest)
        except FsError as exc:
            io.error(f"mv: can't rename '{name}': {exc.message}\n")
            status = 1
    return status


def _remove_tree(shell: Shell, path: str) -> None:
    stat = shell.fs.stat(path)
    if stat is not None and stat.is_dir:
        for entry in shell.fs.listdir(path):
            _remove_tree(shell, posixpath.join(path, entry))
    shell.fs.remove(path)


def rm(shell: Shell, argv: list[str], io: IO) -> int:
    """``rm [-rRfv] PATH...``."""
    parsed = parse_options(argv, "rRfvdi", io, "rm")
    if parsed is None:
        return 1
    flags, operands = parsed
    force = "f" in flags
    if not operands and not force:
        io.error("rm: missing operand\n")
        return 1
    status = 0
    for name in operands:
        path = _path(shell, name)
        stat = shell.fs.stat(path)
        if stat is None:
            if not force:
                io.error(f"rm: can't remove '{name}': {ENOENT}\n")
                status = 1
            continue
        if stat.is_dir and not flags & {"r", "R"}:
            io.error(f"rm: '{name}' is a directory\n")
            status = 1
            continue
        try:
            _remove_tree(shell, path)
        except FsError as exc:
            io.error(f"rm: can't remove '{name}': {exc.message}\n")
            status = 1
    return status


def mkdir(shell: Shell, argv: list[str], io: IO) -> int:
    """``mkdir [-p] [-m MODE] DIR...``."""
    args = list(argv)
    mode: int | None = None
    if "-m" in args[1:]:
        index = args.index("-m")
        if index + 1 >= len(args):
            io.error("mkdir: option requires an argument -- 'm'\n")
            return 1
        mode = apply_mode(0o777, args[index + 1])
        del args[index : index + 2]
    flags, operands, bad = split_options(args, "pv")
    if bad or mode == -1:
        io.error(f"mkdir: invalid option -- '{bad}'\n" if bad else "mkdir: invalid mode\n")
        return 1
    if not operands:
        io.error("mkdir: missing operand\n")
        return 1
    status = 0
    for name in operands:
        path = _path(shell, name)
        try:
            if "p" in flags:
                _make_parents(shell, path)
            else:
                shell.fs.mkdir(path)
            if mode is not None:
                shell.fs.chmod(path, mode)
        except FsError as exc:
            io.error(f"mkdir: can't create directory '{name}': {exc.message}\n")
            status = 1
    return status


def _make_parents(shell: Shell, path: str) -> None:
    current = ""
    for part in [p for p in path.split("/") if p]:
        current = f"{current}/{part}"
        stat = shell.fs.stat(current)
        if stat is None:
            shell.fs.mkdir(current)
        elif not stat.is_dir:
            raise FsError(ENOTDIR)


def apply_mode(current: int, spec: str) -> int:
    """A mode after ``chmod SPEC`` (octal or symbolic); -1 when ``spec`` is invalid."""
    if re.fullmatch(r"[0-7]{1,4}", spec):
        return int(spec, 8)
    mode = current
    for clause in spec.split(","):
        match = _SYMBOLIC.match(clause)
        if match is None:
            return -1
        who, op, perms = match.groups()
        mask = 0o777 if not who or "a" in who else sum(_WHO[w] for w in set(who))
        bits = 0
        for perm, value in (("r", 0o444), ("w", 0o222), ("x", 0o111)):
            if perm in perms:
                bits |= value
        if "X" in perms and (current & 0o111 or current & 0o40000):
            bits |= 0o111
        bits &= mask
        if op == "+":
            mode |= bits
        elif op == "-":
            mode &= ~bits
        else:
            mode = (mode & ~mask) | bits
    return mode & 0o7777


def chmod(shell: Shell, argv: list[str], io: IO) -> int:
    """``chmod [-R] MODE PATH...``."""
    args = argv[1:]
    recursive = False
    while args and args[0] in ("-R", "-v", "-f", "-c"):
        recursive = recursive or args.pop(0) == "-R"
    if len(args) < 2:
        io.error("chmod: missing operand\n")
        return 1
    spec, names = args[0], args[1:]
    status = 0
    for name in names:
        path = _path(shell, name)
        paths = [path]
        while paths:
            current = paths.pop()
            stat = shell.fs.stat(current)
            if stat is None:
                io.error(f"chmod: {name}: {ENOENT}\n")
                status = 1
                break
            mode = apply_mode(stat.mode, spec)
            if mode < 0:
                io.error(f"chmod: invalid mode '{spec}'\n")
                return 1
            try:
                shell.fs.chmod(current, mode)
            except FsError as exc:
                io.error(f"chmod: {name}: {exc.message}\n")
                status = 1
            if recursive and stat.is_dir:
                paths.extend(posixpath.join(current, e) for e in shell.fs.listdir(current))
    return status


def touch(shell: Shell, argv: list[str], io: IO) -> int:
    """``touch [-c] FILE...``."""
    parsed = parse_options(argv, "cam", io, "touch")
    if parsed is None:
        return 1
    flags, operands = parsed
    status = 0
    for name in operands:
        path = _path(shell, name)
        if "c" in flags and shell.fs.stat(path) is None:
            continue
        try:
            shell.fs.touch(path)
        except FsError as exc:
            io.error(f"touch: {name}: {exc.message}\n")
            status = 1
    return status


COMMANDS: dict[str, Builtin] = {
    "cat": cat,
    "tee": tee,
    "cp": cp,
    "mv": mv,
    "rm": rm,
    "mkdir": mkdir,
    "chmod": chmod,
    "touch": touch,
}
