"""The simulated kubelet's knobs: its nodes and its timings.

:class:`NodeConfig` describes one node (name, allocatable resources, labels, taints);
:class:`KubeletConfig` the whole simulated data plane: the nodes, which scheduler names the
built-in scheduler serves, how long configMap/secret updates take to reach pod volumes, how often
node leases are renewed, and where pod sandboxes live. Both are frozen: a running kubelet never
sees its configuration change under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["GPU", "KubeletConfig", "NodeConfig"]

GPU = "nvidia.com/gpu"
"""The extended resource name of NVIDIA GPUs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeConfig:
    """One simulated node.

    Attributes:
        name: the Node's name.
        cpu: allocatable CPU (a quantity: ``"8"``, ``"7500m"``).
        memory: allocatable memory (``"32Gi"``).
        pods: how many pods the node runs at most.
        gpus: allocatable ``nvidia.com/gpu`` (0 leaves the resource out).
        ephemeral_storage: allocatable ephemeral storage.
        labels: labels beside the well-known ``kubernetes.io/*`` ones.
        taints: taints (``{"key": ..., "value": ..., "effect": ...}``).
        unschedulable: ``spec.unschedulable`` (cordoned).
    """

    name: str
    cpu: str = "8"
    memory: str = "32Gi"
    pods: int = 110
    gpus: int = 0
    ephemeral_storage: str = "100Gi"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    unschedulable: bool = False

    def allocatable(self) -> dict[str, str]:
        """The node's allocatable resources as a ``ResourceList``."""
        out = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": str(self.pods),
            "ephemeral-storage": self.ephemeral_storage,
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }
        if self.gpus:
            out[GPU] = str(self.gpus)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeletConfig:
    """The simulated kubelet and scheduler.

    Attributes:
        nodes: the nodes the kubelet registers and runs pods on.
        scheduler_names: the ``spec.schedulerName`` values the built-in scheduler binds; None
            binds pods of any scheduler name.
        volume_sync_delay: seconds (on the clock) before a configMap or secret update reaches
            the pod volumes that show it (0: at once; the real kubelet takes up to a minute).
        lease_interval: seconds between node lease renewals.
        root: where pod sandboxes are created (a fresh temporary directory when None).
        log_lines: lines kept per container instance (older lines are dropped).
        node_ip_prefix: the first three octets of node addresses.
    """

    nodes: tuple[NodeConfig, ...] = (NodeConfig(name="node-0"),)
    scheduler_names: frozenset[str] | None = None
    volume_sync_delay: float = 0.0
    lease_interval: float = 10.0
    root: Path | None = None
    log_lines: int = 10_000
    node_ip_prefix: str = "172.18.0"

    @classmethod
    def uniform(
        cls,
        count: int,
        *,
        cpu: str = "8",
        memory: str = "32Gi",
        pods: int = 110,
        gpus: int = 0,
        prefix: str = "node-",
        labels: Mapping[str, str] | None = None,
        **options: Any,
    ) -> KubeletConfig:
        """``count`` identical nodes named ``<prefix>0``, ``<prefix>1``...

        Raises:
            ValueError: ``count`` is negative.
        """
        if count < 0:
            msg = "a kubelet needs zero or more nodes"
            raise ValueError(msg)
        nodes = tuple(
            NodeConfig(
                name=f"{prefix}{index}",
                cpu=cpu,
                memory=memory,
                pods=pods,
                gpus=gpus,
                labels=dict(labels or {}),
            )
            for index in range(count)
        )
        return cls(nodes=nodes, **options)
