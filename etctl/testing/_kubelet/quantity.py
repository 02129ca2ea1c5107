"""Pod resource totals: what a pod asks of a node, as exact amounts.

Kubernetes writes amounts of CPU, memory, pods and extended resources as *quantities*
(``500m``, ``2Gi``, ``1e3``); the one parser of them (:mod:`etctl._apimachinery.quantity`) turns
each into a :class:`~fractions.Fraction`, so sums and comparisons are exact (a node with ``2``
CPUs fits four pods asking ``500m`` each, not three).

What a pod asks for is what the scheduler and the kubelet's admission both compare:
:func:`pod_requests` is the larger of the sum over containers and the largest init container, plus
the pod overhead, as the real scheduler computes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from etctl._apimachinery import quantity

__all__ = [
    "Resources",
    "format_cpu",
    "pod_requests",
    "resource_list",
]

Resources = dict[str, Fraction]
"""Amounts per resource name (``cpu`` in cores, ``memory`` in bytes, ``pods`` as a count)."""


def format_cpu(amount: Fraction) -> str:
    """CPU as the real components print it in messages: millicores, as an integer."""
    return str(int(amount * 1000))


def resource_list(values: Mapping[str, Any] | None) -> Resources:
    """A ``ResourceList`` (``{"cpu": "500m"}``) as exact amounts; bad values are skipped."""
    out: Resources = {}
    for key, raw in (values or {}).items():
        try:
            out[str(key)] = quantity.amount(raw)
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
