"""Simulated nodes: the Node objects the kubelet registers, keeps Ready and heartbeats.

A :class:`SimNode` is one node of the simulated data plane. It owns the node's addresses (an
``InternalIP`` from the configured prefix and a ``/24`` pod CIDR from ``10.244.0.0/16``), hands
out pod IPs from that CIDR, and renders the Node object as the real kubelet registers it:
well-known labels, capacity and allocatable, the four node conditions, addresses, the kubelet
endpoint and ``nodeInfo`` (every field ``V1NodeSystemInfo`` requires).

A node is *healthy* until :meth:`SimNode.fail` marks it lost: its conditions turn ``Unknown``
("Kubelet stopped posting node status.") and it gains the ``unreachable`` taints, as the node
lifecycle controller would write them; :meth:`SimNode.recover` undoes that.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from etctl.runtime import KubeObject
from etctl.testing._kubelet.config import NodeConfig

__all__ = ["KUBELET_VERSION", "UNREACHABLE", "SimNode", "microtime"]

KUBELET_VERSION = "v1.32.0"
_RUNTIME_VERSION = "containerd://1.7.24"
UNREACHABLE = "node.kubernetes.io/unreachable"
"""The taint of a node the control plane cannot reach."""

_CONDITIONS = (
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def microtime(timestamp: str) -> str:
    """A second-precision timestamp as a ``MicroTime`` (``...T00:00:00.000000Z``)."""
    return timestamp.removesuffix("Z") + ".000000Z"


def _stable_uuid(*parts: str) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


class SimNode:
    """One simulated node.

    Args:
        config: the node's configuration.
        index: its position among the kubelet's nodes (picks its addresses).
        ip_prefix: the first three octets of node addresses.
    """

    def __init__(self, config: NodeConfig, index: int, *, ip_prefix: str) -> None:
        self.config = config
        self.name = config.name
        self.index = index
        self.ip = f"{ip_prefix}.{index + 2}"
        self.pod_cidr = f"10.244.{index}.0/24"
        self.failed = False
        self.failed_at = ""
        self.images: set[str] = set()
        self._free_ips = [f"10.244.{index}.{host}" for host in range(2, 255)]
        self._ips: dict[str, str] = {}

    # -- pod addresses --------------------------------------------------------------------------

    def pod_ip(self, pod_uid: str) -> str:
        """The IP of the pod (allocated on first use; host-network pods use the node's)."""
        found = self._ips.get(pod_uid)
        if found is None:
            found = self._free_ips.pop(0) if self._free_ips else self.ip
            self._ips[pod_uid] = found
        return found

    def release_ip(self, pod_uid: str) -> None:
        """Give the pod's IP back to the pool."""
        released = self._ips.pop(pod_uid, None)
        if released is not None and released != self.ip:
            self._free_ips.append(released)
            self._free_ips.sort(key=lambda ip: int(ip.rsplit(".", 1)[1]))

    # -- health ---------------------------------------------------------------------------------

    def fail(self, now: str) -> None:
        """Mark the node lost (the kubelet stops posting status)."""
        if not self.failed:
            self.failed = True
            self.failed_at = now

    def recover(self) -> None:
        """Mark the node healthy again."""
        self.failed = False
        self.failed_at = ""

    # -- objects --------------------------------------------------------------------------------

    def labels(self) -> dict[str, str]:
        """Well-known node labels plus the configured ones."""
        return {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": self.name,
            "kubernetes.io/os": "linux",
            **self.config.labels,
        }

    def taints(self, now: str) -> list[dict[str, Any]]:
        """The configured taints, plus the unreachable ones while failed."""
        taints = [dict(t) for t in self.config.taints]
        if self.failed:
            taints.append({"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": self.failed_at})
            taints.append({"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": self.failed_at})
        return taints

    def conditions(self, heartbeat: str, previous: list[Any] | None = None) -> list[dict[str, Any]]:
        """The four node conditions, keeping transition times that did not change."""
        before = {c.get("type"): c for c in previous or [] if isinstance(c, dict) and c.get("type")}
        out = []
        for kind, *healthy in _CONDITIONS:
            status, reason, message = (
                ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
                if self.failed
                else healthy
            )
            old = before.get(kind)
            transition = heartbeat
            if old is not None and old.get("status") == status:
                transition = str(old.get("lastTransitionTime") or heartbeat)
            beat = heartbeat
            if self.failed and old is not None:
                beat = str(old.get("lastHeartbeatTime") or heartbeat)
            out.append(
                {
                    "type": kind,
                    "status": status,
                    "lastHeartbeatTime": beat,
                    "lastTransitionTime": transition,
                    "reason": reason,
                    "message": message,
                }
            )
        return out

    def node_info(self) -> dict[str, str]:
        """``status.nodeInfo``: every field the typed model requires."""
        return {
            "machineID": hashlib.sha256(f"machine/{self.name}".encode()).hexdigest()[:32],
            "systemUUID": _stable_uuid("system", self.name),
            "bootID": _stable_uuid("boot", self.name),
            "kernelVersion": "6.8.0-etctl",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "containerRuntimeVersion": _RUNTIME_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        }

    def status(self, heartbeat: str, previous: list[Any] | None = None) -> dict[str, Any]:
        """The node's ``status``."""
        allocatable = self.config.allocatable()
        return {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": self.conditions(heartbeat, previous),
            "addresses": [
                {"type": "InternalIP", "address": self.ip},
                {"type": "Hostname", "address": self.name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": self.node_info(),
        }

    def spec(self, now: str) -> dict[str, Any]:
        """The node's ``spec``."""
        spec: dict[str, Any] = {
            "podCIDR": self.pod_cidr,
            "podCIDRs": [self.pod_cidr],
            "providerID": f"etctl://{self.name}",
        }
        taints = self.taints(now)
        if taints:
            spec["taints"] = taints
        if self.config.unschedulable:
            spec["unschedulable"] = True
        return spec

    def object(self, now: str) -> KubeObject:
        """The Node as the kubelet registers it."""
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.name,
                "labels": self.labels(),
                "annotations": {
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                },
            },
            "spec": self.spec(now),
            "status": self.status(now),
        }

    def lease(self, now: str, node_uid: str) -> KubeObject:
        """The node's Lease in ``kube-node-lease``, renewed at ``now``."""
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": "kube-node-lease",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": node_uid}
                ],
            },
            "spec": {
                "holderIdentity": self.name,
                "leaseDurationSeconds": 40,
                "renewTime": microtime(now),
            },
        }
