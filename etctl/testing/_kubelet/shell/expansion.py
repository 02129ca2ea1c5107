"""Word expansion: parameters, command substitution, field splitting and globbing.

:func:`expand` turns a parsed word into fields the way ``sh`` does: parameters and command
substitutions are replaced; the results of *unquoted* expansions are split on blanks and
newlines (``IFS`` is not consulted); a field with an unquoted ``*``, ``?`` or ``[...]`` is then
matched against the filesystem, one path component at a time, and replaced by the sorted
matches (left as written when nothing matches; dot files only match a leading ``.``). A quoted
``"$@"`` gives one field per positional parameter. :func:`expand_text` expands without splitting
or globbing (redirection targets, assignments).
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from etctl.testing._kubelet.shell.ast import Word
from etctl.testing._kubelet.shell.fs import join
from etctl.testing._kubelet.shell.syntax import inner_word

if TYPE_CHECKING:
    from etctl.testing._kubelet.shell.interpreter import Shell

__all__ = ["ExpansionError", "expand", "expand_text", "glob", "parameter"]

_GLOB = frozenset("*?[")
_FLAGS = {"errexit": "e", "nounset": "u", "xtrace": "x"}


class ExpansionError(Exception):
    """An expansion failed (an unset variable under ``-u``, ``${X:?}``, a bad substitution)."""


def parameter(shell: Shell, expression: str) -> str:
    """The value of ``${expression}`` (``NAME``, ``NAME:-default``, ``#NAME``, ``?``...).

    Raises:
        ExpansionError: an unset variable under ``set -u``, or a bad substitution.
    """
    if expression.startswith("#") and len(expression) > 1:
        return str(len(parameter(shell, expression[1:])))
    name, op, word = _split_parameter(expression)
    value = _lookup(shell, name)
    if not op:
        if value is None and "nounset" in shell.options and name not in ("@", "*"):
            raise ExpansionError(f"{name}: parameter not set")
        return value or ""
    empty = not value if op.startswith(":") else value is None
    kind = op[-1]
    if kind == "+":
        return "" if empty else expand_text(shell, inner_word(word))
    if not empty:
        return value or ""
    alternative = expand_text(shell, inner_word(word))
    if kind == "=":
        shell.env[name] = alternative
    elif kind == "?":
        raise ExpansionError(f"{name}: {alternative or 'parameter not set'}")
    return alternative


def _lookup(shell: Shell, name: str) -> str | None:
    positional = shell.args[1:]
    special = {
        "?": str(shell.status),
        "#": str(len(positional)),
        "@": " ".join(positional),
        "*": " ".join(positional),
        "$": "1",
        "!": "",
        "-": "".join(sorted(_FLAGS[o] for o in shell.options if o in _FLAGS)),
    }
    if name in special:
        return special[name]
    if name.isdigit():
        index = int(name)
        return shell.args[index] if index < len(shell.args) else None
    if not name or not (name[0].isalpha() or name[0] == "_"):
        raise ExpansionError(f"{{{name}}}: bad substitution")
    return shell.env.get(name)


def expand_text(shell: Shell, word: Word) -> str:
    """A word expanded to one string: no field splitting, no globbing."""
    out = []
    for part in word:
        if part.kind == "text":
            out.append(part.value)
        elif part.kind == "param":
            out.append(parameter(shell, part.value))
        else:
            out.append(shell.substitute(part.value))
    return "".join(out)


def expand(shell: Shell, word: Word) -> list[str]:
    """A word expanded to fields: splitting of unquoted expansions, then globbing."""
    if len(word) == 1 and word[0].kind == "param" and word[0].quoted and word[0].value == "@":
        return list(shell.args[1:])
    fields: list[list[tuple[str, bool]]] = [[]]
    for part in word:
        if part.kind == "text":
            fields[-1].append((part.value, not part.quoted))
            continue
        value = (
            parameter(shell, part.value) if part.kind == "param" else shell.substitute(part.value)
        )
        if part.quoted:
            fields[-1].append((value, False))
        else:
            _split_into(fields, value)
    out: list[str] = []
    for segments in fields:
        if not segments:
            continue
        if any(active and _GLOB & set(s) for s, active in segments):
            matches = glob(shell, segments)
            if matches:
                out.extend(matches)
                continue
        out.append("".join(s for s, _ in segments))
    return out


def glob(shell: Shell, segments: list[tuple[str, bool]]) -> list[str]:
    """Paths matching a pattern (quoted segments match literally), sorted."""
    components: list[list[tuple[str, bool]]] = [[]]
    for text, active in segments:
        for index, piece in enumerate(text.split("/")):
            if index:
                components.append([])
            components[-1].append((piece, active))
    absolute = not "".join(s for s, _ in components[0])
    candidates = ["/" if absolute else ""]
    for component in components[1:] if absolute else components:
        literal = "".join(s for s, _ in component)
        if not literal:
            continue
        magic = any(active and _GLOB & set(s) for s, active in component)
        pattern = "".join(s if active else _escape_glob(s) for s, active in component)
        following: list[str] = []
        for base in candidates:
            prefix = f"{base.rstrip('/')}/" if base else ""
            if not magic:
                if shell.fs.stat(join(shell.cwd, prefix + literal)) is not None:
                    following.append(prefix + literal)
                continue
            directory = join(shell.cwd, base or ".")
            stat = shell.fs.stat(directory)
            if stat is None or not stat.is_dir:
                continue
            for entry in shell.fs.listdir(directory):
                if entry.startswith(".") and not literal.startswith("."):
                    continue
                if fnmatch.fnmatchcase(entry, pattern):
                    following.append(prefix + entry)
        candidates = following
    return sorted(c for c in candidates if c not in ("", "/"))


def _split_into(fields: list[list[tuple[str, bool]]], value: str) -> None:
    """Field-split an unquoted expansion onto the fields being built."""
    pieces = value.split()
    if not pieces:
        return
    if value[0].isspace() and fields[-1]:
        fields.append([])
    for index, piece in enumerate(pieces):
        if index:
            fields.append([])
        fields[-1].append((piece, True))
    if value[-1].isspace():
        fields.append([])


def _split_parameter(expression: str) -> tuple[str, str, str]:
    for op in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
        index = expression.find(op, 1)
        if index > 0:
            name = expression[:index]
            if name.isdigit() or name.replace("_", "a").isalnum():
                return name, op, expression[index + len(op) :]
    return expression, "", ""


def _escape_glob(text: str) -> str:
    return "".join(f"[{c}]" if c in _GLOB else c for c in text)
