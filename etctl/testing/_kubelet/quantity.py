"""Resource quantities (``500m``, ``2Gi``, ``1e3``) as exact numbers, and pod resource totals.

Kubernetes writes amounts of CPU, memory, pods and extended resources as *quantities*: a decimal
number with an optional binary (``Ki``, ``Mi``...) or decimal (``m``, ``k``, ``M``...) suffix, or
an exponent. :func:`parse_quantity` turns one into a :class:`~fractions.Fraction`, so sums and
comparisons are exact (a node with ``2`` CPUs fits four pods asking ``500m`` each, not three).

What a pod asks for is what the scheduler and the kubelet's admission both compare:
:func:`pod_requests` is the larger of the sum over containers and the largest init container, plus
the pod overhead, as the real scheduler computes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = [
    "Resources",
    "format_cpu",
    "format_quantity",
    "parse_quantity",
    "pod_requests",
    "resource_list",
]

Resources = dict[str, Fraction]
"""Amounts per resource name (``cpu`` in cores, ``memory`` in bytes, ``pods`` as a count)."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


def parse_quantity(value: Any) -> Fraction:
    """The exact amount a quantity names.

    Raises:
        ValueError: not a quantity.
    """
    if isinstance(value, bool):
        msg = f"not a quantity: {value!r}"
        raise ValueError(msg)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        msg = f"not a quantity: {value!r}"
        raise ValueError(msg)
    number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent:
        return amount * Fraction(10) ** int(exponent[1:])
    suffix = suffix or ""
    if suffix in _BINARY:
        return amount * _BINARY[suffix]
    return amount * _DECIMAL[suffix]


def format_quantity(amount: Fraction) -> str:
    """A quantity in the canonical form the API server writes (``2``, ``500m``, ``1Gi``)."""
    if amount.denominator != 1:
        milli = amount * 1000
        if milli.denominator == 1:
            return f"{milli.numerator}m"
        return str(float(amount))
    whole = amount.numerator
    if whole == 0:
        return "0"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        base = _BINARY[suffix]
        if whole % base == 0:
            return f"{whole // base}{suffix}"
    return str(whole)


def format_cpu(amount: Fraction) -> str:
    """CPU as the real components print it in messages: millicores, as an integer."""
    return str(int(amount * 1000))


def resource_list(values: Mapping[str, Any] | None) -> Resources:
    """A ``ResourceList`` (``{"cpu": "500m"}``) as exact amounts; bad values are skipped."""
    out: Resources = {}
    for key, raw in (values or {}).items():
        try:
            out[str(key)] = parse_quantity(raw)
        except ValueError:
            continue
    return out


def _requests(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    requests = resource_list(resources.get("requests"))
    for key, amount in resource_list(resources.get("limits")).items():
        requests.setdefault(key, amount)
    return requests


def pod_requests(spec: Mapping[str, Any]) -> Resources:
    """What a pod asks of a node: max(sum of containers, largest init container) + overhead."""
    total: Resources = {}
    for container in spec.get("containers") or []:
        if isinstance(container, Mapping):
            for key, amount in _requests(container).items():
                total[key] = total.get(key, Fraction(0)) + amount
    for container in spec.get("initContainers") or []:
        if isinstance(container, Mapping):
            for key, amount in _requests(container).items():
                total[key] = max(total.get(key, Fraction(0)), amount)
    for key, amount in resource_list(spec.get("overhead")).items():
        total[key] = total.get(key, Fraction(0)) + amount
    return total
