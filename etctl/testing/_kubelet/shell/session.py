"""Shell builtins about the session: variables, options, environments and subshells.

``export [-p]``, ``unset``, ``set`` (``-e``, ``-u``, ``-x``, ``-o pipefail``, their ``+``
forms, and ``--`` to replace the positional parameters), ``env`` (``-i``, ``-u NAME``,
``NAME=VALUE``, then a command) and ``sh``/``bash``/``ash``/``dash`` (``-c SCRIPT [ARG0
[ARG...]]``, a script file, or the script on stdin; a subshell whose variables do not leak
back).
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.fs import FsError, join

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import IO, Builtin, Shell

__all__ = ["COMMANDS"]

_OPTIONS = {"e": "errexit", "u": "nounset", "x": "xtrace"}


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def export(shell: Shell, argv: list[str], io: IO) -> int:
    """``export [-p] [NAME[=VALUE]...]``."""
    names = [a for a in argv[1:] if a != "-p"]
    if not names:
        for name in sorted(shell.env):
            io.write(f"export {name}={_quote(shell.env[name])}\n")
        return 0
    for entry in names:
        name, sep, value = entry.partition("=")
        if sep:
            shell.env[name] = value
        else:
            shell.env.setdefault(name, "")
    return 0


def unset(shell: Shell, argv: list[str], io: IO) -> int:
    """``unset NAME...``."""
    for name in argv[1:]:
        if name not in ("-v", "-f"):
            shell.env.pop(name, None)
    return 0


def set_(shell: Shell, argv: list[str], io: IO) -> int:
    """``set [-eux] [+eux] [-o pipefail] [-- ARG...]``."""
    args = argv[1:]
    if not args:
        for name in sorted(shell.env):
            io.write(f"{name}={_quote(shell.env[name])}\n")
        return 0
    while args:
        arg = args.pop(0)
        if arg == "--":
            shell.args = [shell.args[0], *args]
            return 0
        if arg in ("-o", "+o") and args:
            option = args.pop(0)
            if option not in ("pipefail", "errexit", "nounset", "xtrace"):
                io.error(f"{shell.args[0]}: set: illegal option -o {option}\n")
                return 2
            (shell.options.add if arg == "-o" else shell.options.discard)(option)
            continue
        if arg[:1] not in "-+" or len(arg) < 2:
            shell.args = [shell.args[0], arg, *args]
            return 0
        for flag in arg[1:]:
            letter_option = _OPTIONS.get(flag)
            if letter_option is None:
                io.error(f"{shell.args[0]}: set: illegal option -{flag}\n")
                return 2
            (shell.options.add if arg[0] == "-" else shell.options.discard)(letter_option)
    return 0


def env(shell: Shell, argv: list[str], io: IO) -> int:
    """``env [-i] [-u NAME] [NAME=VALUE...] [COMMAND [ARG...]]``."""
    args = argv[1:]
    values = dict(shell.env)
    while args and args[0].startswith("-") and args[0] != "-":
        flag = args.pop(0)
        if flag in ("-i", "--ignore-environment"):
            values = {}
        elif flag == "-u" and args:
            values.pop(args.pop(0), None)
        else:
            io.error(f"env: unrecognized option '{flag}'\n")
            return 125
    while args and "=" in args[0] and not args[0].startswith("="):
        name, _, value = args.pop(0).partition("=")
        values[name] = value
    if not args:
        for name in sorted(values):
            io.write(f"{name}={values[name]}\n")
        return 0
    saved, shell.env = shell.env, values
    try:
        return shell.call(args, io)
    finally:
        shell.env = saved


def sh(shell: Shell, argv: list[str], io: IO) -> int:
    """``sh [-eux] [-o OPTION] (-c SCRIPT [ARG0 [ARG...]] | FILE [ARG...] | < stdin)``."""
    name = posixpath.basename(argv[0])
    args = argv[1:]
    options: set[str] = set()
    inline = False
    while args and args[0][:1] in "-+" and len(args[0]) > 1 and args[0] != "--":
        flag = args.pop(0)
        if flag in ("-o", "+o") and args:
            options.add(args.pop(0))
            continue
        for letter in flag[1:]:
            if letter == "c":
                inline = True
            elif letter in _OPTIONS:
                options.add(_OPTIONS[letter])
            elif letter not in "sil":
                io.error(f"{name}: -{letter}: invalid option\n")
                return 2
    if args and args[0] == "--":
        args.pop(0)
    if inline:
        if not args:
            io.error(f"{name}: -c requires an argument\n")
            return 2
        source = args.pop(0)
        child = shell.child([args[0] if args else name, *args[1:]])
    elif args:
        path = join(shell.cwd, args[0])
        try:
            source = shell.fs.read(path).decode(errors="replace")
        except FsError as exc:
            io.error(f"{name}: can't open '{args[0]}': {exc.message}\n")
            return 127
        child = shell.child(args)
    else:
        source = io.read().decode(errors="replace")
        child = shell.child([name])
    child.options |= options
    return child.run_io(source, io)


COMMANDS: dict[str, Builtin] = {
    "export": export,
    "unset": unset,
    "set": set_,
    "env": env,
    "sh": sh,
    "bash": sh,
    "ash": sh,
    "dash": sh,
}
