"""Services: defaults, validation and cluster-IP allocation.

A Service of type ClusterIP (the default) gets an address from the service range
(``10.96.0.0/12`` by default, ``10.96.0.1`` kept for the ``kubernetes`` service) unless it asks
for ``clusterIP: None`` (headless) or names a free address itself. The allocator learns which
addresses are taken from committed Services only (it subscribes to the store), so a dry run or a
create that fails validation never leaks an address, and deleting a Service frees its address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.store import Event
from etctl.testing._apiserver.strategy import Strategy, WriteContext, field_path, mapping
from etctl.testing._apiserver.validation import go_value, required_cause, unsupported_cause

__all__ = ["ClusterIPAllocator", "ServiceStrategy"]

_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


class ClusterIPAllocator:
    """Hands out service addresses; knows the taken ones from committed Services.

    Args:
        cidr: the service range.
    """

    def __init__(self, cidr: str = "10.96.0.0/12") -> None:
        self.network = ipaddress.ip_network(cidr)
        self._used: set[str] = {str(self.network.network_address + 1)}
        self._next = 2

    def observe(self, event: Event) -> None:
        """Store listener: track the addresses of committed Services."""
        if event.resource != ("", "services"):
            return
        if event.previous is not None:
            self._used.discard(_cluster_ip(event.previous))
        if event.type != "DELETED":
            address = _cluster_ip(event.object)
            if address and address != "None":
                self._used.add(address)

    def pick(self) -> str:
        """The next free address (not reserved until a Service holding it is committed)."""
        size = self.network.num_addresses - 2
        for _ in range(size):
            candidate = str(self.network.network_address + self._next)
            self._next = self._next + 1 if self._next < size else 2
            if candidate not in self._used:
                return candidate
        msg = "range is full"
        raise RuntimeError(msg)

    def check(self, address: str) -> str | None:
        """Why ``address`` cannot be given to a new Service, or None if it can."""
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            return "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        if parsed not in self.network:
            return (
                f"failed to allocate IP {address}: the provided IP ({address}) is not in the valid "
                f"range. The range of valid IPs is {self.network}"
            )
        if address in self._used:
            return f"failed to allocate IP {address}: provided IP is already allocated"
        return None


def _cluster_ip(obj: ObjectView) -> str:
    return str(mapping(obj.get("spec")).get("clusterIP") or "")


def _ports(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    value = spec.get("ports")
    return [p for p in value if isinstance(p, dict)] if isinstance(value, list) else []


class ServiceStrategy(Strategy):
    """Behaviour of ``services``."""

    field_labels = frozenset({"metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"})
    default_field_error = False

    def __init__(self, allocator: ClusterIPAllocator) -> None:
        self.allocator = allocator

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name, namespace, cluster IP and type."""
        spec = mapping(obj.get("spec"))
        out = super().fields(obj)
        out["spec.clusterIP"] = str(spec.get("clusterIP") or "")
        out["spec.type"] = str(spec.get("type") or "")
        return out

    def defaults(self, obj: KubeObject) -> None:
        """Type, session affinity, port protocols and target ports."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in _ports(spec):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])
        if spec["type"] != "ExternalName":
            spec.setdefault("internalTrafficPolicy", "Cluster")

    def prepare_create(self, obj: KubeObject, ctx: WriteContext) -> None:
        """Allocate the cluster IP (unless headless or external) and set the IP families."""
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
            return
        requested = spec.get("clusterIP") or ""
        if not requested:
            ips = spec.get("clusterIPs")
            requested = ips[0] if isinstance(ips, list) and ips else ""
        if not requested:
            requested = self.allocator.pick()
        spec["clusterIP"] = requested
        spec["clusterIPs"] = [requested]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """A new Service has an empty load-balancer status."""
        obj["status"] = {"loadBalancer": {}}

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Type, ports and a free cluster IP."""
        causes = self._validate(obj)
        address = _cluster_ip(obj)
        if address and address != "None":
            problem = self.allocator.check(address)
            if problem:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        "spec.clusterIPs",
                        f"Invalid value: {go_value([address])}: {problem}",
                    )
                )
        return causes

    def prepare_update(self, new: KubeObject, old: ObjectView, ctx: WriteContext) -> None:
        """An update that leaves the cluster IP out keeps the allocated one."""
        spec = new.get("spec")
        old_spec = mapping(old.get("spec"))
        if isinstance(spec, dict):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if key not in spec and key in old_spec:
                    spec[key] = old_spec[key]

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As on create, and the cluster IP may not change."""
        causes = self._validate(new)
        if _cluster_ip(new) != _cluster_ip(old):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "spec.clusterIP",
                    f"Invalid value: {go_value(_cluster_ip(new))}: field is immutable",
                )
            )
        return causes

    def _validate(self, obj: ObjectView) -> list[Cause]:
        spec = mapping(obj.get("spec"))
        causes: list[Cause] = []
        kind = spec.get("type")
        if kind not in _TYPES:
            causes.append(unsupported_cause("spec.type", kind, _TYPES))
        ports = _ports(spec)
        if not ports and spec.get("clusterIP") != "None" and kind != "ExternalName":
            causes.append(required_cause("spec.ports"))
        names: set[str] = set()
        for index, port in enumerate(ports):
            number = port.get("port")
            if not isinstance(number, int) or not 1 <= number <= 65535:
                causes.append(
                    Cause(
                        "FieldValueInvalid",
                        field_path("spec", "ports", index, "port"),
                        f"Invalid value: {go_value(number)}: "
                        "must be between 1 and 65535, inclusive",
                    )
                )
            protocol = port.get("protocol")
            if protocol not in _PROTOCOLS:
                path = field_path("spec", "ports", index, "protocol")
                causes.append(unsupported_cause(path, protocol, _PROTOCOLS))
            name = str(port.get("name") or "")
            if len(ports) > 1 and not name:
                causes.append(required_cause(field_path("spec", "ports", index, "name")))
            elif name and name in names:
                causes.append(
                    Cause(
                        "FieldValueDuplicate",
                        field_path("spec", "ports", index, "name"),
                        f"Duplicate value: {go_value(name)}",
                    )
                )
            names.add(name)
        return causes
