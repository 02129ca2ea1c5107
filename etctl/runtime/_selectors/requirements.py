"""Label requirements: a key, an operator and values, validated and matched as apimachinery does.

A :class:`Requirement` is one term of a label selector (``app=web``, ``tier in (a,b)``, ``!legacy``,
``replicas>3``). :meth:`Requirement.new` validates it as ``NewRequirement`` does (key and value
syntax, the value count each operator takes) and keeps its values sorted and distinct, so equal
requirements compare equal and print the same canonical text.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from etctl.runtime._selectors.syntax import (
    SelectorError,
    aggregate,
    go_quote,
    go_string_slice,
    key_error,
    label_value_errors,
)

__all__ = ["SET_OPERATORS", "Operator", "Requirement", "canonical"]


class Operator(enum.StrEnum):
    """The operators of a label requirement, with apimachinery's names."""

    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


SET_OPERATORS = frozenset({Operator.IN, Operator.NOT_IN})
"""The operators that take a set of values (``in``, ``notin``)."""
_EXACT_OPS = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS})
_UNARY_OPS = frozenset({Operator.EXISTS, Operator.DOES_NOT_EXIST})
_ORDER_OPS = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})
_SUPPORTED_ORDER = (
    Operator.IN,
    Operator.NOT_IN,
    Operator.EQUALS,
    Operator.DOUBLE_EQUALS,
    Operator.NOT_EQUALS,
    Operator.GREATER_THAN,
    Operator.LESS_THAN,
    Operator.EXISTS,
    Operator.DOES_NOT_EXIST,
)
_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_INT64 = (-(2**63), 2**63 - 1)


def _parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: None when it would fail."""
    if not _INT_RE.match(text):
        return None
    number = int(text)
    return number if _INT64[0] <= number <= _INT64[1] else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement: a key, an operator and the (sorted, distinct) values it relates.

    Build one with :meth:`new`, which validates as apimachinery's ``NewRequirement`` does.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: Operator | str, values: Iterable[str] = ()) -> Requirement:
        """Validate and build a requirement.

        Raises:
            SelectorError: the key or a value is malformed, or the value count does not fit the
                operator (worded as ``NewRequirement``'s aggregated field errors).
        """
        try:
            op = Operator(operator)
        except ValueError:
            supported = ", ".join(go_quote(o.value) for o in _SUPPORTED_ORDER)
            raise SelectorError(
                f"operator: Unsupported value: {go_quote(str(operator))}: "
                f"supported values: {supported}"
            ) from None
        given = list(values)
        errors: list[str] = []
        key_problem = key_error(key, "key")
        if key_problem:
            errors.append(key_problem)
        if op in SET_OPERATORS and not given:
            errors.append(
                f"values: Invalid value: {go_string_slice(given)}: "
                "for 'in', 'notin' operators, values set can't be empty"
            )
        elif op in _EXACT_OPS and len(given) != 1:
            errors.append(
                f"values: Invalid value: {go_string_slice(given)}: "
                "exact-match compatibility requires one single value"
            )
        elif op in _UNARY_OPS and given:
            errors.append(
                f"values: Invalid value: {go_string_slice(given)}: "
                "values set must be empty for exists and does not exist"
            )
        elif op in _ORDER_OPS:
            if len(given) != 1:
                errors.append(
                    f"values: Invalid value: {go_string_slice(given)}: "
                    "for 'Gt', 'Lt' operators, exactly one value is required"
                )
            errors.extend(
                f"values[{i}]: Invalid value: {go_quote(v)}: "
                "for 'Gt', 'Lt' operators, the value must be an integer"
                for i, v in enumerate(given)
                if _parse_int64(v) is None
            )
        for i, value in enumerate(given):
            value_errors = label_value_errors(value)
            if value_errors:
                errors.append(
                    f"values[{i}][{key}]: Invalid value: {go_quote(value)}: "
                    + "; ".join(value_errors)
                )
        if errors:
            raise SelectorError(aggregate(errors))
        return cls(key, op, tuple(sorted(set(given))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement.

        A missing key satisfies only ``!=``, ``notin`` and ``!``.
        """
        op = self.operator
        value = labels.get(self.key)
        if op in _UNARY_OPS:
            return (value is None) == (op is Operator.DOES_NOT_EXIST)
        if op in SET_OPERATORS or op in _EXACT_OPS:
            positive = op is Operator.IN or op is Operator.EQUALS or op is Operator.DOUBLE_EQUALS
            if value is None:
                return not positive
            return (value in self.values) == positive
        if value is None or len(self.values) != 1:
            return False
        have, want = _parse_int64(value), _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op is Operator.GREATER_THAN else have < want

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(self.values)
        if op in SET_OPERATORS:
            return f"{self.key} {op.value} ({joined})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{joined}"


def canonical(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """Requirements in canonical order: by key, as apimachinery sorts them."""
    # apimachinery sorts by key only; the string is a tie-breaker that keeps equality canonical.
    return tuple(sorted(requirements, key=lambda r: (r.key, str(r))))
