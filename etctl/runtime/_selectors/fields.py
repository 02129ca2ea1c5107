"""Field selectors: the ``fieldSelector`` query syntax, parsed and matched as apimachinery does.

A :class:`FieldSelector` is a conjunction of equality and inequality terms on selectable fields
(``metadata.name=x,status.phase!=Failed``), kept sorted, so equal selectors compare equal and print
the same (values escaped). Field selectors compare strings only: a field the caller does not supply
reads as ``""``, so ``x!=a`` matches an object without ``x``. Which fields are selectable is the
caller's business.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from etctl.runtime._selectors.syntax import SelectorError

__all__ = ["FieldSelector", "FieldTerm"]


_FIELD_OPERATORS = ("!=", "==", "=")
_ESCAPES = str.maketrans({"\\": "\\\\", ",": "\\,", "=": "\\="})


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not backslash-escaped (escapes are kept for the value parser)."""
    terms: list[str] = []
    start, escaped = 0, False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _unescape(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go formats the offending rune with %v, which prints its code point.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class FieldTerm:
    """One field selector term: ``field=value`` or (``negated``) ``field!=value``."""

    field: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether the supplied field values satisfy the term (a missing field reads as "")."""
        return (fields.get(self.field, "") == self.value) != self.negated

    def __str__(self) -> str:
        return f"{self.field}{'!=' if self.negated else '='}{self.value.translate(_ESCAPES)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A conjunction of field terms, as in ``?fieldSelector=metadata.name=x,spec.nodeName!=``.

    Attributes:
        terms: the terms in canonical (sorted) order; none for the empty selector.
    """

    terms: tuple[FieldTerm, ...] = ()
    _fields: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.terms, key=str))
        object.__setattr__(self, "terms", ordered)
        object.__setattr__(self, "_fields", frozenset(t.field for t in ordered))

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        r"""Parse the ``fieldSelector`` query syntax.

        Values may escape ``\``, ``,`` and ``=`` with a backslash; field names may not contain
        operators. Whitespace is significant, as in apimachinery.

        Raises:
            SelectorError: with the API server's message for the first problem found.
        """
        return _parse_fields(text)

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> FieldSelector:
        """A selector requiring every given field to equal the given value."""
        return cls(tuple(FieldTerm(k, v) for k, v in fields.items()))

    @property
    def fields(self) -> frozenset[str]:
        """The field names the selector reads (for the server to check they are supported)."""
        return self._fields

    @property
    def empty(self) -> bool:
        """True when the selector restricts nothing."""
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether an object with these (caller-extracted) field values is selected."""
        return all(t.matches(fields) for t in self.terms)

    def requires_exact_match(self, name: str) -> str | None:
        """The value the selector requires ``name`` to equal, if any (``metadata.name=x``)."""
        for term in self.terms:
            if term.field == name and not term.negated:
                return term.value
        return None

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.terms)


@functools.lru_cache(maxsize=1024)
def _parse_fields(text: str) -> FieldSelector:
    terms: list[FieldTerm] = []
    for part in sorted(_split_terms(text)) if text else ():
        if not part:
            continue
        for index in range(len(part)):
            op = next((o for o in _FIELD_OPERATORS if part.startswith(o, index)), None)
            if op is not None:
                value = _unescape(part[index + len(op) :])
                terms.append(FieldTerm(part[:index], value, negated=op == "!="))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(terms))
