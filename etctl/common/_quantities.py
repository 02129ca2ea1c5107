"""Resource quantities (``500m``, ``2Gi``, ``1e3``): exact parsing, sums and a canonical form.

The PodGroup of a gang-scheduled job asks for the resources of its first ``minMember`` pods, the
sum of their containers' requests. Quantities are parsed into exact fractions (never floats, so
``100m`` three times is exactly ``300m``), added per resource name, and written back in the form
the API server would print:

* a sum of quantities that all used binary suffixes (``Ki``, ``Mi``...) keeps the largest binary
  suffix that divides it exactly (``1536Mi`` stays, ``2048Mi`` becomes ``2Gi``);
* otherwise a whole number takes the largest decimal suffix that divides it (``2000`` is ``2k``);
  a fraction is written in ``m``, ``u`` or ``n`` units, rounded up to whole nano-units as the API
  server rounds.

:class:`ResourceList` compares by value, so ``1000m`` equals ``1``: the controller patches a
PodGroup only when what it asks for really changed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from fractions import Fraction

__all__ = ["QuantityError", "ResourceList", "format_quantity", "parse_quantity"]

_PATTERN = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exp>[+-]?[0-9]+))?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_EXPONENT = 30


class QuantityError(ValueError):
    """A string is not a resource quantity."""


def parse_quantity(value: str | int) -> tuple[Fraction, bool]:
    """The exact value of a quantity and whether it used a binary suffix.

    Raises:
        QuantityError: ``value`` is not a quantity.
    """
    if isinstance(value, bool):
        msg = f"{value!r} is not a quantity"
        raise QuantityError(msg)
    if isinstance(value, int):
        return Fraction(value), False
    match = _PATTERN.fullmatch(value.strip())
    if match is None:
        msg = f"{value!r} is not a quantity (for example 4, 500m, 2Gi)"
        raise QuantityError(msg)
    number = Fraction(match["number"])
    if match["binary"]:
        return number * 1024 ** _BINARY[match["binary"]], True
    if match["decimal"]:
        return number * Fraction(10) ** _DECIMAL[match["decimal"]], False
    if match["exp"]:
        exponent = int(match["exp"])
        if abs(exponent) > _MAX_EXPONENT:
            msg = f"{value!r}: the exponent is out of range"
            raise QuantityError(msg)
        return number * Fraction(10) ** exponent, False
    return number, False


def format_quantity(value: Fraction, *, binary: bool = False) -> str:
    """The canonical string of ``value`` (see the module docstring)."""
    if value.denominator != 1:
        nanos = math.ceil(value * 10**9)
        for suffix, scale in (("m", 10**6), ("u", 10**3), ("n", 1)):
            if nanos % scale == 0:
                return f"{nanos // scale}{suffix}"
    whole = int(value)
    if whole == 0:
        return "0"
    if binary:
        for suffix, power in sorted(_BINARY.items(), key=lambda item: -item[1]):
            if whole % 1024**power == 0:
                return f"{whole // 1024**power}{suffix}"
        return str(whole)
    for suffix, power in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3)):
        if whole % 10**power == 0:
            return f"{whole // 10**power}{suffix}"
    return str(whole)


class ResourceList:
    """A sum of quantities by resource name (``cpu``, ``memory``, ``nvidia.com/gpu``).

    Args:
        items: initial quantities by resource name.
    """

    __slots__ = ("_binary", "_values")

    def __init__(self, items: Mapping[str, str | int] | None = None) -> None:
        self._values: dict[str, Fraction] = {}
        self._binary: dict[str, bool] = {}
        if items:
            self.add(items)

    def add(self, items: Mapping[str, str | int]) -> None:
        """Add every quantity of ``items`` to this list.

        Raises:
            QuantityError: a value is not a quantity.
        """
        for name, raw in items.items():
            value, binary = parse_quantity(raw)
            if name in self._values:
                self._values[name] += value
                self._binary[name] = self._binary[name] and binary
            else:
                self._values[name] = value
                self._binary[name] = binary

    def names(self) -> Iterable[str]:
        """The resource names, sorted."""
        return sorted(self._values)

    def to_dict(self) -> dict[str, str]:
        """The canonical string of every quantity, by resource name (sorted)."""
        return {
            name: format_quantity(self._values[name], binary=self._binary[name])
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
