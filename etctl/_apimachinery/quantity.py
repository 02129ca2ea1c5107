"""Resource quantities as ``k8s.io/apimachinery/pkg/api/resource`` parses and prints them.

:func:`parse` accepts what ``Quantity.UnmarshalJSON`` accepts (a JSON number, or a string such as
``500m``, ``2Gi``, ``1e3``) and fails with the same messages; the amount is an exact
:class:`~fractions.Fraction`. :func:`canonical` is ``Quantity.String()``: the amount in the
format it was written in (decimal SI, binary SI or decimal exponent), rounded up to nano units,
with the largest suffix that keeps the number whole (``1000m`` is ``1``, ``1024Mi`` is ``1Gi``,
``0.5`` is ``500m``); a binary amount below 1Ki, or not whole, prints as decimal SI.

The one parser of quantities: the embedded API server validates pods and CRD values with it, the
simulated kubelet and scheduler add requests with it, the JobController sums a gang's
``minResources`` with it (:class:`ResourceList`), and the CLI reads its flags with it
(:func:`amount`, whose error says what a quantity looks like). Exponents are bounded (a value such
as ``1e999999999`` would otherwise take the process's memory for an exact fraction).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

__all__ = [
    "ERR_FORMAT",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "PATTERN",
    "Quantity",
    "QuantityError",
    "ResourceList",
    "amount",
    "canonical",
    "parse",
]

ERR_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The OpenAPI ``pattern`` of a quantity string, as Kubernetes publishes it for ``Quantity``."""

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

# The largest exponent taken (``1e100``): an exact fraction of a larger one costs unbounded memory.
_MAX_EXPONENT = 100

_SPLIT = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$")
_EXPONENT = re.compile(r"^[eE]([-+]?[0-9]+)$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}


class QuantityError(ValueError):
    """Not a quantity; the message is the one ``resource.ParseQuantity`` gives."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact amount and the format it was written in."""

    amount: Fraction
    format: Format

    def __str__(self) -> str:
        return canonical(self)


def parse(value: Any) -> Quantity:
    """A quantity from its JSON value.

    Raises:
        QuantityError: the value is not a quantity (the real server's decoding error).
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(ERR_FORMAT)
    text = value if isinstance(value, str) else repr(value)
    text = text.strip()
    if not text:
        raise QuantityError(ERR_FORMAT)
    match = _SPLIT.match(text)
    if match is None:
        raise QuantityError(ERR_FORMAT)
    number, suffix = match.groups()
    if not _NUMBER.match(number):
        raise QuantityError(ERR_NUMERIC)
    amount = Fraction(number)
    if suffix in _BINARY:
        return Quantity(amount * 1024 ** _BINARY[suffix], "BinarySI")
    if suffix in _DECIMAL:
        return Quantity(amount * Fraction(10) ** _DECIMAL[suffix], "DecimalSI")
    exponent = _EXPONENT.match(suffix)
    if exponent is None or abs(int(exponent.group(1))) > _MAX_EXPONENT:
        raise QuantityError(ERR_SUFFIX)
    return Quantity(amount * Fraction(10) ** int(exponent.group(1)), "DecimalExponent")


def amount(value: Any) -> Fraction:
    """The exact amount of a quantity a person wrote (a flag, a pod's requests).

    Raises:
        QuantityError: not a quantity; the message names the value and shows what one looks like.
    """
    try:
        return parse(value).amount
    except QuantityError:
        msg = f"{value!r} is not a quantity (for example 4, 500m or 2Gi)"
        raise QuantityError(msg) from None


def _round_up_to_nano(amount: Fraction) -> Fraction:
    nanos = amount * 10**9
    return Fraction(math.ceil(nanos), 10**9)


def canonical(quantity: Quantity) -> str:
    """``Quantity.String()``: the canonical text of the quantity."""
    amount = _round_up_to_nano(quantity.amount)
    if amount == 0:
        return "0"
    fmt = quantity.format
    if fmt == "BinarySI":
        if amount.denominator == 1 and abs(amount) >= 1024:
            whole = amount.numerator
            power = 0
            while power < 6 and whole % 1024 == 0:
                whole //= 1024
                power += 1
            return f"{whole}{_BINARY_SUFFIX.get(power, '')}"
        fmt = "DecimalSI"
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)
    # Whole nano units, then the largest exponent (a multiple of 3) that keeps the mantissa whole.
    mantissa = magnitude.numerator * (10**9 // magnitude.denominator)
    exponent = -9
    while mantissa % 1000 == 0 and (fmt == "DecimalExponent" or exponent < 18):
        mantissa //= 1000
        exponent += 3
    if fmt == "DecimalExponent":
        return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
    return f"{sign}{mantissa}{_DECIMAL_SUFFIX[exponent]}"


class ResourceList:
    """A sum of quantities by resource name (``cpu``, ``memory``, ``nvidia.com/gpu``).

    Sums are exact; :meth:`to_dict` writes each in canonical form, binary SI when every quantity
    added under that name was binary (``1536Mi`` stays, ``2048Mi`` is ``2Gi``), decimal SI
    otherwise (``2000`` is ``2k``). Lists compare by value, so ``1000m`` equals ``1``.

    Args:
        items: initial quantities by resource name.
    """

    __slots__ = ("_binary", "_values")

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Fraction] = {}
        self._binary: dict[str, bool] = {}
        if items:
            self.add(items)

    def add(self, items: Mapping[str, Any]) -> None:
        """Add every quantity of ``items`` to this list.

        Raises:
            QuantityError: a value is not a quantity (see :func:`amount`).
        """
        for name, raw in items.items():
            value = amount(raw)
            binary = parse(raw).format == "BinarySI"
            self._values[name] = self._values.get(name, Fraction(0)) + value
            self._binary[name] = self._binary.get(name, True) and binary

    def names(self) -> list[str]:
        """The resource names, sorted."""
        return sorted(self._values)

    def to_dict(self) -> dict[str, str]:
        """The canonical string of every quantity, by resource name (sorted)."""
        return {
            name: canonical(
                Quantity(self._values[name], "BinarySI" if self._binary[name] else "DecimalSI")
            )
            for name in self.names()
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceList):
            return NotImplemented
        return self._values == other._values

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __bool__(self) -> bool:
        return bool(self._values)

    def __repr__(self) -> str:
        return f"ResourceList({self.to_dict()!r})"
