"""Label selectors: the ``labelSelector`` query syntax and metav1.LabelSelector, parsed and matched.

A :class:`LabelSelector` is a conjunction of requirements
(:class:`~etctl.runtime._selectors.requirements.Requirement`), kept in canonical order (by key), or
the selector that matches nothing. The parser is a
recursive descent over apimachinery's tokens with its error messages; parsed selectors are cached
by text, since servers and caches see the same few selector strings again and again.

Invariant: ``LabelSelector.parse(str(s)) == s``; the empty selector matches everything, the
nothing selector (a ``None`` metav1.LabelSelector) matches no object and prints as ``""``.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from etctl.runtime._selectors.requirements import SET_OPERATORS, Operator, Requirement, canonical
from etctl.runtime._selectors.syntax import SelectorError, go_quote, key_error

__all__ = ["LabelSelector"]


# --- the label selector lexer and parser ---------------------------------------------------------


class _Tok(enum.Enum):
    END = enum.auto()
    IDENT = enum.auto()
    OPEN = enum.auto()
    CLOSE = enum.auto()
    COMMA = enum.auto()
    NOT = enum.auto()
    EQ = enum.auto()
    EQEQ = enum.auto()
    NEQ = enum.auto()
    GT = enum.auto()
    LT = enum.auto()
    IN = enum.auto()
    NOTIN = enum.auto()


_SYMBOLS = {
    "(": _Tok.OPEN,
    ")": _Tok.CLOSE,
    ",": _Tok.COMMA,
    "!": _Tok.NOT,
    "=": _Tok.EQ,
    "==": _Tok.EQEQ,
    "!=": _Tok.NEQ,
    ">": _Tok.GT,
    "<": _Tok.LT,
}
_KEYWORDS = {"in": _Tok.IN, "notin": _Tok.NOTIN}
_SPECIAL = frozenset("=!(),><")
_SPACE = frozenset(" \t\r\n")
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_OPERATOR_OF = {
    _Tok.IN: Operator.IN,
    _Tok.NOTIN: Operator.NOT_IN,
    _Tok.EQ: Operator.EQUALS,
    _Tok.EQEQ: Operator.DOUBLE_EQUALS,
    _Tok.NEQ: Operator.NOT_EQUALS,
    _Tok.GT: Operator.GREATER_THAN,
    _Tok.LT: Operator.LESS_THAN,
}


def _lex(text: str) -> list[tuple[_Tok, str]]:
    """Split a label selector into tokens; the last one is always END."""
    items: list[tuple[_Tok, str]] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _SPACE:
            pos += 1
        # Go's lexer reads a NUL byte as the end of the input.
        if pos >= size or text[pos] == "\0":
            items.append((_Tok.END, ""))
            return items
        if text[pos] in _SPECIAL:
            # Longest run of symbols that is still a known token ("!=" but "=" then "!").
            end = pos + 1
            while end < size and text[pos : end + 1] in _SYMBOLS:
                end += 1
            literal = text[pos:end]
            items.append((_SYMBOLS[literal], literal))
            pos = end
            continue
        end = pos
        while end < size and text[end] not in _SPECIAL and text[end] not in _SPACE:
            if text[end] == "\0":
                break
            end += 1
        literal = text[pos:end]
        items.append((_KEYWORDS.get(literal, _Tok.IDENT), literal))
        pos = end


class _Parser:
    """A recursive-descent parser over the token list, mirroring apimachinery's contexts."""

    def __init__(self, text: str) -> None:
        self._items = _lex(text)
        self._pos = 0

    def _peek(self, *, values: bool = True) -> tuple[_Tok, str]:
        tok, lit = self._items[self._pos]
        # In value context the keywords "in" and "notin" are plain identifiers.
        if values and tok in (_Tok.IN, _Tok.NOTIN):
            tok = _Tok.IDENT
        return tok, lit

    def _take(self, *, values: bool = True) -> tuple[_Tok, str]:
        item = self._peek(values=values)
        self._pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._peek()
            if tok is _Tok.END:
                return requirements
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            tok, lit = self._take()
            if tok is _Tok.END:
                return requirements
            if tok is not _Tok.COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self._peek()
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        negated = False
        tok, key = self._take()
        if tok is _Tok.NOT:
            negated = True
            tok, key = self._take()
        if tok is not _Tok.IDENT:
            raise SelectorError(f"found '{key}', expected: identifier")
        problem = key_error(key, "<nil>")
        if problem:
            raise SelectorError(problem)
        if negated:
            return Requirement.new(key, Operator.DOES_NOT_EXIST)
        if self._peek()[0] in (_Tok.END, _Tok.COMMA):
            return Requirement.new(key, Operator.EXISTS)
        tok, lit = self._take(values=False)
        operator = _OPERATOR_OF.get(tok)
        if operator is None:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        values = self._set_values() if operator in SET_OPERATORS else self._exact_value()
        return Requirement.new(key, operator, sorted(values))

    def _set_values(self) -> set[str]:
        tok, lit = self._take()
        if tok is not _Tok.OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._peek()
        if tok is _Tok.CLOSE:
            self._take()
            return {""}
        if tok not in (_Tok.IDENT, _Tok.COMMA):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            tok, lit = self._take()
            if tok is _Tok.IDENT:
                values.add(lit)
                after, after_lit = self._peek()
                if after is _Tok.CLOSE:
                    self._take()
                    return values
                if after is not _Tok.COMMA:
                    raise SelectorError(f"found '{after_lit}', expected: ',' or ')'")
            elif tok is _Tok.COMMA:
                # Empty slots around commas ("(,a)", "(a,)", "(a,,b)") are the empty value.
                after = self._peek()[0]
                if not values or after in (_Tok.CLOSE, _Tok.COMMA):
                    values.add("")
                if after is _Tok.CLOSE:
                    self._take()
                    return values
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_Tok.END, _Tok.COMMA):
            return {""}
        tok, lit = self._take()
        if tok is not _Tok.IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return {lit}


# --- label selectors ----------------------------------------------------------------------------

_MATCH_EXPRESSION_OPS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A conjunction of label requirements, or the selector that matches nothing.

    Attributes:
        requirements: the requirements, in canonical order (by key).
        nothing: True for the selector that matches no object (a ``None`` metav1.LabelSelector).
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def everything(cls) -> LabelSelector:
        """The empty selector: matches every object."""
        return _EVERYTHING

    @classmethod
    def match_nothing(cls) -> LabelSelector:
        """The selector that matches no object."""
        return _NOTHING

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse the ``labelSelector`` query syntax (``a=b,c in (d,e),!f,g``).

        Raises:
            SelectorError: with the API server's message for the first problem found.
        """
        return _parse_labels(text)

    @classmethod
    def from_label_selector(cls, obj: Mapping[str, Any] | None) -> LabelSelector:
        """Convert a metav1.LabelSelector (``matchLabels`` and ``matchExpressions``).

        ``None`` gives the nothing selector; ``{}`` (no labels, no expressions) gives everything,
        as apimachinery's ``LabelSelectorAsSelector`` does.

        Raises:
            SelectorError: an unknown operator or a malformed key, value or value list.
        """
        if obj is None:
            return _NOTHING
        match_labels = obj.get("matchLabels") or {}
        expressions = obj.get("matchExpressions") or []
        if not match_labels and not expressions:
            return _EVERYTHING
        requirements = [
            Requirement.new(str(k), Operator.EQUALS, [str(v)])
            for k, v in sorted(match_labels.items())
        ]
        for expr in expressions:
            raw_op = expr.get("operator") or ""
            op = _MATCH_EXPRESSION_OPS.get(raw_op)
            if op is None:
                raise SelectorError(f"{go_quote(str(raw_op))} is not a valid pod selector operator")
            values = [str(v) for v in expr.get("values") or ()]
            requirements.append(Requirement.new(str(expr.get("key") or ""), op, values))
        return cls(canonical(requirements))

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """A selector requiring every given label to have the given value (not validated)."""
        if not labels:
            return _EVERYTHING
        reqs = (Requirement(k, Operator.EQUALS, (v,)) for k, v in labels.items())
        return cls(canonical(reqs))

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing (the nothing selector is not empty)."""
        return not self.requirements and not self.nothing

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object with these labels is selected."""
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The single value the selector requires for ``key`` (``=``, ``==`` or a one-value ``in``).

        Useful to narrow a lookup through an index before matching.
        """
        for req in self.requirements:
            if req.key == key:
                exact = req.operator in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN)
                return req.values[0] if exact and len(req.values) == 1 else None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


_EVERYTHING = LabelSelector()
_NOTHING = LabelSelector(nothing=True)


# Selectors are immutable, and servers and caches see the same few selector strings again and
# again (every list and watch of a controller): parse each once.
@functools.lru_cache(maxsize=1024)
def _parse_labels(text: str) -> LabelSelector:
    if not text:
        return _EVERYTHING
    return LabelSelector(canonical(_Parser(text).parse()))
