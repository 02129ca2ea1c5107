"""The shell lexer: source text into words (with their quoting) and operator tokens.

A word is kept as :class:`~.ast.Part` pieces that remember whether they were quoted, because
quoting decides what field splitting and globbing may later do to them. Digits written right
before a redirection operator (``2>``) become an ``io`` token naming the descriptor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from etctl.testing._kubelet.shell.ast import Part, ShellSyntaxError, Word

__all__ = ["OPERATORS", "Lexer", "Token", "name_char"]

OPERATORS = ("&&", "||", ">>", ">&", "<&", ">|", "&>", ";", "|", "&", "(", ")", "<", ">")
_SPECIAL_PARAMS = frozenset("?#@*$!-0123456789")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: a word (its parts), an operator or io number (its text), or a newline."""

    kind: Literal["word", "op", "newline", "io"]
    word: Word = ()
    text: str = ""


def name_char(char: str, first: bool) -> bool:
    """True when ``char`` may appear in a variable name (first position or later)."""
    return char == "_" or char.isalpha() or (not first and char.isdigit())


class Lexer:
    """Splits one source text into tokens (see :meth:`run`).

    Args:
        source: the script.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.pos = 0
        self.tokens: list[Token] = []
        self.parts: list[Part] = []
        self.started = False

    def _add(self, kind: Literal["text", "param", "command"], value: str, quoted: bool) -> None:
        self.started = True
        if kind == "text" and self.parts:
            last = self.parts[-1]
            if last.kind == "text" and last.quoted == quoted:
                self.parts[-1] = Part("text", last.value + value, quoted)
                return
        self.parts.append(Part(kind, value, quoted))

    def _end_word(self) -> None:
        if self.started:
            self.tokens.append(Token("word", tuple(self.parts)))
        self.parts = []
        self.started = False

    def run(self) -> list[Token]:
        """All the tokens of the source.

        Raises:
            ShellSyntaxError: an unterminated quote or expansion, or an unsupported form.
        """
        source = self.source
        while self.pos < len(source):
            char = source[self.pos]
            if char in " \t":
                self._end_word()
                self.pos += 1
            elif char == "\n":
                self._end_word()
                self.tokens.append(Token("newline"))
                self.pos += 1
            elif char == "#" and not self.started:
                end = source.find("\n", self.pos)
                self.pos = len(source) if end < 0 else end
            elif char == "\\":
                self._backslash()
            elif char == "'":
                end = source.find("'", self.pos + 1)
                if end < 0:
                    raise ShellSyntaxError("unterminated quoted string")
                self._add("text", source[self.pos + 1 : end], quoted=True)
                self.pos = end + 1
            elif char == '"':
                self._double_quoted()
            elif char == "$":
                self._dollar(quoted=False)
            elif char == "`":
                raise ShellSyntaxError("command substitution with backquotes is not supported")
            elif self._operator():
                continue
            else:
                self._add("text", char, quoted=False)
                self.pos += 1
        self._end_word()
        return self.tokens

    def _backslash(self) -> None:
        following = self.source[self.pos + 1 : self.pos + 2]
        self.pos += 2
        if following == "\n":
            return  # line continuation
        self._add("text", following or "\\", quoted=True)

    def _operator(self) -> bool:
        for op in OPERATORS:
            if self.source.startswith(op, self.pos):
                break
        else:
            return False
        digits = self.parts and all(p.kind == "text" and not p.quoted for p in self.parts)
        text = "".join(p.value for p in self.parts)
        if op[0] in "<>" and digits and text.isdigit():
            self.tokens.append(Token("io", text=text))
            self.parts = []
            self.started = False
        else:
            self._end_word()
        self.tokens.append(Token("op", text=op))
        self.pos += len(op)
        return True

    def _double_quoted(self) -> None:
        source = self.source
        self.pos += 1
        self._add("text", "", quoted=True)
        while True:
            if self.pos >= len(source):
                raise ShellSyntaxError("unterminated quoted string")
            char = source[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\" and source[self.pos + 1 : self.pos + 2] in ("$", "`", '"', "\\", "\n"):
                following = source[self.pos + 1]
                if following != "\n":
                    self._add("text", following, quoted=True)
                self.pos += 2
            elif char == "$":
                self._dollar(quoted=True)
            elif char == "`":
                raise ShellSyntaxError("command substitution with backquotes is not supported")
            else:
                self._add("text", char, quoted=True)
                self.pos += 1

    def _dollar(self, *, quoted: bool) -> None:
        source = self.source
        following = source[self.pos + 1 : self.pos + 2]
        if following == "{":
            end = source.find("}", self.pos + 2)
            if end < 0:
                raise ShellSyntaxError("missing '}'")
            self._add("param", source[self.pos + 2 : end], quoted)
            self.pos = end + 1
        elif following == "(":
            if source.startswith("((", self.pos + 1):
                raise ShellSyntaxError("arithmetic expansion is not supported")
            end = _matching_paren(source, self.pos + 2)
            self._add("command", source[self.pos + 2 : end], quoted)
            self.pos = end + 1
        elif following and name_char(following, first=True):
            end = self.pos + 1
            while end < len(source) and name_char(source[end], first=False):
                end += 1
            self._add("param", source[self.pos + 1 : end], quoted)
            self.pos = end
        elif following and following in _SPECIAL_PARAMS:
            self._add("param", following, quoted)
            self.pos += 2
        else:
            self._add("text", "$", quoted)
            self.pos += 1


def _matching_paren(source: str, start: int) -> int:
    """The index of the ``)`` closing a ``$(`` whose body starts at ``start``."""
    depth = 1
    pos = start
    quote = ""
    while pos < len(source):
        char = source[pos]
        if quote:
            if char == "\\" and quote == '"':
                pos += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "\\":
            pos += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return pos
        pos += 1
    raise ShellSyntaxError("missing ')'")
