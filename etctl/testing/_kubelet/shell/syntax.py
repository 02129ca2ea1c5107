"""Shell syntax: the parser of the POSIX ``sh`` subset, from tokens to the syntax tree.

Supported: words with single quotes, double quotes and backslash escapes; parameter expansion
(``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``$?``, ``$#``, ``$@``, ``$*``,
``$0``-``$9``, ``$$``); command substitution ``$(...)``; comments; line continuations; the
operators ``;``, newline, ``&&``, ``||``, ``|``, ``!``; assignments before a command
(``A=1 cmd``); redirections ``>``, ``>>``, ``<``, ``>|``, ``&>``, with an optional descriptor
number (``2>``) and duplication (``2>&1``, ``>&2``); the compound commands ``if``/``elif``/
``else``, ``for`` (with or without ``in``), ``while`` and ``until`` (without redirections of
their own).

Not supported, and reported as a syntax error rather than misread: ``case``, ``{ }`` and
``( )``, functions, background jobs (``&``), here-documents, backquotes and arithmetic
expansion.
"""

from __future__ import annotations

from etctl.testing._kubelet.shell.ast import (
    AndOr,
    Command,
    Compound,
    For,
    If,
    Loop,
    Part,
    Pipeline,
    Redirect,
    RedirectOp,
    Script,
    ShellSyntaxError,
    Word,
)
from etctl.testing._kubelet.shell.lexer import Lexer, Token, name_char

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
    "Script",
    "ShellSyntaxError",
    "Word",
    "inner_word",
    "parse",
]

_RESERVED = frozenset(
    {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
     "esac", "{", "}", "function", "select", "[[", "]]"}
)  # fmt: skip
_REDIRECT_OPS: dict[str, RedirectOp] = {
    ">": ">",
    ">|": ">",
    ">>": ">>",
    "<": "<",
    ">&": ">&",
    "<&": "<&",
    "&>": "&>",
}


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def _peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _is_op(self, *ops: str) -> bool:
        token = self._peek()
        return token is not None and token.kind == "op" and token.text in ops

    def _skip_newlines(self) -> None:
        while (token := self._peek()) is not None and token.kind == "newline":
            self.pos += 1

    def _keyword(self) -> str | None:
        """The reserved word the next token is, if any."""
        token = self._peek()
        if token is None or token.kind != "word":
            return None
        literal = _literal(token.word)
        return literal if literal in _RESERVED else None

    def _expect(self, keyword: str) -> None:
        self._skip_newlines()
        if self._keyword() != keyword:
            token = self._peek()
            found = "end of input" if token is None else (_literal(token.word) or token.text)
            raise ShellSyntaxError(f"expected '{keyword}', found {found or 'newline'}")
        self.pos += 1

    def script(self, until: frozenset[str] = frozenset()) -> Script:
        """And-or lists up to the end, or up to one of the reserved words ``until``."""
        items: list[AndOr] = []
        while True:
            self._skip_newlines()
            while self._is_op(";"):
                if not items:
                    raise ShellSyntaxError("unexpected ';'")
                self.pos += 1
                self._skip_newlines()
            if self._peek() is None or self._keyword() in until:
                if until and not items:
                    raise ShellSyntaxError(f"unexpected '{self._keyword() or 'end of input'}'")
                return tuple(items)
            items.append(self._and_or())
            token = self._peek()
            if token is None:
                return tuple(items)
            if token.kind == "newline" or (token.kind == "op" and token.text == ";"):
                self.pos += 1
                continue
            if token.kind == "op" and token.text == "&":
                raise ShellSyntaxError("background jobs ('&') are not supported")
            raise ShellSyntaxError(f"unexpected '{token.text}'")

    def _compound(self, keyword: str) -> Compound:
        self.pos += 1
        if keyword == "if":
            return self._if()
        if keyword == "for":
            return self._for()
        condition = self.script(frozenset({"do"}))
        self._expect("do")
        body = self.script(frozenset({"done"}))
        self._expect("done")
        return Loop(condition, body, until=keyword == "until")

    def _if(self) -> If:
        branches: list[tuple[Script, Script]] = []
        otherwise: Script | None = None
        while True:
            condition = self.script(frozenset({"then"}))
            self._expect("then")
            body = self.script(frozenset({"elif", "else", "fi"}))
            branches.append((condition, body))
            keyword = self._keyword()
            if keyword is None:
                raise ShellSyntaxError("expected 'fi', found end of input")
            self.pos += 1
            if keyword == "elif":
                continue
            if keyword == "else":
                otherwise = self.script(frozenset({"fi"}))
                self._expect("fi")
            return If(tuple(branches), otherwise)

    def _for(self) -> For:
        token = self._peek()
        name = _literal(token.word) if token is not None and token.kind == "word" else None
        if name is None or not all(name_char(c, first=i == 0) for i, c in enumerate(name)):
            raise ShellSyntaxError("'for' needs a variable name")
        self.pos += 1
        words: tuple[Word, ...] | None = None
        self._skip_newlines()
        token = self._peek()
        if token is not None and token.kind == "word" and _literal(token.word) == "in":
            self.pos += 1
            found: list[Word] = []
            while (token := self._peek()) is not None and token.kind == "word":
                found.append(token.word)
                self.pos += 1
            words = tuple(found)
        if self._is_op(";"):
            self.pos += 1
        self._expect("do")
        body = self.script(frozenset({"done"}))
        self._expect("done")
        return For(name, words, body)

    def _and_or(self) -> AndOr:
        first = self._pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while self._is_op("&&", "||"):
            op = self.tokens[self.pos].text
            self.pos += 1
            self._skip_newlines()
            rest.append((op, self._pipeline()))
        return AndOr(first, tuple(rest))

    def _pipeline(self) -> Pipeline:
        negated = False
        token = self._peek()
        if token is not None and token.kind == "word" and _literal(token.word) == "!":
            negated = True
            self.pos += 1
        commands = [self._stage()]
        while self._is_op("|"):
            self.pos += 1
            self._skip_newlines()
            commands.append(self._stage())
        return Pipeline(tuple(commands), negated)

    def _stage(self) -> Command | Compound:
        keyword = self._keyword()
        if keyword in ("if", "for", "while", "until"):
            return self._compound(keyword)
        return self._command()

    def _command(self) -> Command:
        assignments: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while (token := self._peek()) is not None:
            if token.kind == "word":
                self.pos += 1
                literal = _literal(token.word)
                if not words and literal in _RESERVED:
                    raise ShellSyntaxError(f"'{literal}' is not supported here")
                assignment = None if words else _assignment(token.word)
                if assignment is not None:
                    assignments.append(assignment)
                else:
                    words.append(token.word)
            elif token.kind == "io" or (token.kind == "op" and token.text in _REDIRECT_OPS):
                redirects.append(self._redirect())
            elif token.kind == "op" and token.text in ("(", ")"):
                raise ShellSyntaxError("subshells ('( )') are not supported")
            else:
                break
        if not words and not assignments and not redirects:
            token = self._peek()
            found = "end of input" if token is None else (token.text or "newline")
            raise ShellSyntaxError(f"unexpected {found}")
        return Command(tuple(assignments), tuple(words), tuple(redirects))

    def _redirect(self) -> Redirect:
        token = self.tokens[self.pos]
        fd: int | None = None
        if token.kind == "io":
            fd = int(token.text)
            self.pos += 1
            token = self.tokens[self.pos]
        op = _REDIRECT_OPS.get(token.text)
        if token.kind != "op" or op is None:
            raise ShellSyntaxError(f"unexpected '{token.text}'")
        self.pos += 1
        target = self._peek()
        if target is None or target.kind != "word":
            raise ShellSyntaxError(f"missing target after '{token.text}'")
        self.pos += 1
        default = 0 if op in ("<", "<&") else 1
        return Redirect(default if fd is None else fd, op, target.word)


def _literal(word: Word) -> str | None:
    """The word's text if it is one unquoted literal, else None."""
    if len(word) == 1 and word[0].kind == "text" and not word[0].quoted:
        return word[0].value
    return None


def _assignment(word: Word) -> tuple[str, Word] | None:
    first = word[0]
    if first.kind != "text" or first.quoted or "=" not in first.value:
        return None
    name, _, rest = first.value.partition("=")
    if not name or not name_char(name[0], first=True):
        return None
    if not all(name_char(c, first=False) for c in name):
        return None
    value: Word = ((Part("text", rest, False),) if rest else ()) + word[1:]
    return name, value


def inner_word(text: str) -> Word:
    """The word of a ``${VAR:-word}`` operator: quotes and expansions apply, blanks are kept.

    Raises:
        ShellSyntaxError: a quote or an expansion in it is malformed.
    """
    parts: list[Part] = []
    for index, token in enumerate(Lexer(text).run()):
        if index:
            parts.append(Part("text", " ", True))
        if token.kind == "word":
            parts.extend(token.word)
        else:
            parts.append(Part("text", token.text or "\n", True))
    return tuple(parts)


def parse(source: str) -> Script:
    """Parse a script.

    Raises:
        ShellSyntaxError: the script is outside the supported subset.
    """
    return _Parser(Lexer(source).run()).script()
