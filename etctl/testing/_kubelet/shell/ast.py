"""The shell's syntax tree: words made of parts, commands, pipelines and and-or lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "AndOr",
    "Command",
    "Compound",
    "For",
    "If",
    "Loop",
    "Part",
    "Pipeline",
    "Redirect",
    "RedirectOp",
    "Script",
    "ShellSyntaxError",
    "Word",
]


class ShellSyntaxError(Exception):
    """The script is not in the supported subset (the message says where it departs)."""


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of a word: literal text, a parameter expansion or a command substitution."""

    kind: Literal["text", "param", "command"]
    value: str
    quoted: bool


Word = tuple[Part, ...]
RedirectOp = Literal[">", ">>", "<", ">&", "<&", "&>"]


@dataclass(frozen=True, slots=True)
class Redirect:
    """``fd op target``; for ``>&``/``<&`` the target is a descriptor number or ``-``."""

    fd: int
    op: RedirectOp
    target: Word


@dataclass(frozen=True, slots=True)
class Command:
    """A simple command: assignments, words (the name first) and redirections."""

    assignments: tuple[tuple[str, Word], ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]


@dataclass(frozen=True, slots=True)
class If:
    """``if LIST then LIST [elif LIST then LIST]... [else LIST] fi``."""

    branches: tuple[tuple[Script, Script], ...]
    otherwise: Script | None = None


@dataclass(frozen=True, slots=True)
class For:
    """``for NAME [in WORD...] do LIST done`` (no ``in``: the positional parameters)."""

    name: str
    words: tuple[Word, ...] | None
    body: Script


@dataclass(frozen=True, slots=True)
class Loop:
    """``while LIST do LIST done``, or ``until`` when ``until`` is True."""

    condition: Script
    body: Script
    until: bool = False


Compound = If | For | Loop
"""A compound command."""


@dataclass(frozen=True, slots=True)
class Pipeline:
    """Commands joined by ``|``, optionally negated with ``!``."""

    commands: tuple[Command | Compound, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class AndOr:
    """Pipelines joined by ``&&`` and ``||`` (left to right, equal precedence)."""

    first: Pipeline
    rest: tuple[tuple[str, Pipeline], ...] = ()


Script = tuple[AndOr, ...]
