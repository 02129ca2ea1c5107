"""Pod admission on a node: what the kubelet refuses before running a pod.

A pod whose ``nodeName`` was set by hand never went through the scheduler, so the kubelet checks
it itself, as the real kubelet's admit handlers do: the node must match the pod's node selector
and required affinity (``NodeAffinity``), and the node's allocatable must hold the pod's
requests beside those of the pods it already runs (``OutOfpods``, ``OutOfcpu``,
``OutOfmemory``, ``OutOfnvidia.com/gpu``...). A rejected pod ends ``Failed`` with that reason and
``Pod was rejected: ...`` as its message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from etctl.runtime import ObjectView
from etctl.testing._kubelet.config import NodeConfig
from etctl.testing._kubelet.quantity import format_cpu, pod_requests, resource_list
from etctl.testing._kubelet.scheduler import node_matches

__all__ = ["admit"]


def _show(resource: str, amount: Fraction) -> str:
    return format_cpu(amount) if resource == "cpu" else str(int(amount))


def admit(
    spec: Mapping[str, Any],
    node: NodeConfig,
    node_object: ObjectView | None,
    others: Iterable[Mapping[str, Any]],
) -> tuple[str, str] | None:
    """Why a pod cannot run on a node (``(reason, message)``), or None when it can.

    Args:
        spec: the pod's spec.
        node: the node's configuration.
        node_object: the Node as stored (for its labels), if it exists.
        others: the specs of the pods the node already runs.
    """
    if node_object is not None and not node_matches(spec, node_object):
        return "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed"
    allocatable = resource_list(node.allocatable())
    running = list(others)
    capacity = allocatable.get("pods", Fraction(0))
    if len(running) + 1 > capacity:
        return "OutOfpods", (
            "Pod was rejected: Node didn't have enough resource: pods, requested: 1, "
            f"used: {len(running)}, capacity: {int(capacity)}"
        )
    used: dict[str, Fraction] = {}
    for other in running:
        for key, amount in pod_requests(other).items():
            used[key] = used.get(key, Fraction(0)) + amount
    for key, amount in sorted(pod_requests(spec).items()):
        have = allocatable.get(key, Fraction(0))
        taken = used.get(key, Fraction(0))
        if amount > 0 and amount + taken > have:
            return f"OutOf{key}", (
                f"Pod was rejected: Node didn't have enough resource: {key}, requested: "
                f"{_show(key, amount)}, used: {_show(key, taken)}, capacity: {_show(key, have)}"
            )
    return None
