"""Keeping the simulated nodes registered, leased, heartbeating, and losing them on demand.

A :class:`NodeManager` writes what the kubelet and the node lifecycle controller write about
nodes: the Node at registration (a ``NodeReady`` event), its Lease in ``kube-node-lease``
renewed every ``lease_interval`` seconds, and its status every five minutes (which also restores
conditions someone overwrote). :meth:`NodeManager.fail` marks a node lost (conditions
``Unknown``, the ``unreachable`` taints) and :meth:`NodeManager.recover` brings it back; a lost
node's lease and heartbeat stop.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.errors import AlreadyExists, ApiError, NotFound
from etctl.log import get_logger
from etctl.runtime import LEASES, NODES, Clock, objects
from etctl.testing._apiserver.storage import Storage
from etctl.testing._kubelet.events import EventRecorder, Source
from etctl.testing._kubelet.nodes import UNREACHABLE, SimNode

__all__ = ["NODE_STATUS_INTERVAL", "UNREACHABLE", "NodeManager"]

log = get_logger(__name__)

NODE_STATUS_INTERVAL = 300.0
_LEASES = "kube-node-lease"


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


class NodeManager:
    """The Node and Lease objects of the simulated nodes.

    Args:
        storage: the server's storage.
        clock: the clock of renewals and heartbeats.
        recorder: where node events go.
        nodes: the simulated nodes by name.
        lease_interval: seconds between lease renewals.
    """

    def __init__(
        self,
        storage: Storage,
        clock: Clock,
        recorder: EventRecorder,
        nodes: Mapping[str, SimNode],
        *,
        lease_interval: float,
    ) -> None:
        self._storage = storage
        self._clock = clock
        self._recorder = recorder
        self.nodes = nodes
        self._lease_interval = lease_interval
        self._uids: dict[str, str] = {}
        self._lease_at: dict[str, float] = {}
        self._heartbeat_at: dict[str, float] = {}

    def register(self) -> None:
        """Create (or refresh the status of) every Node, and its Lease."""
        now = self._clock.monotonic()
        for node in self.nodes.values():
            self._register(node)
            self._lease_at[node.name] = now + self._lease_interval
            self._heartbeat_at[node.name] = now + NODE_STATUS_INTERVAL

    def _register(self, node: SimNode) -> None:
        stamp = self._storage.now()
        try:
            created = self._storage.create(NODES, node.object(stamp))
            self._recorder.record(
                created,
                "Normal",
                "NodeReady",
                f"Node {node.name} status is now: NodeReady",
                source=Source("kubelet", node.name),
            )
        except AlreadyExists:
            current = self._storage.get(NODES, node.name)
            previous = (current.get("status") or {}).get("conditions")
            updated = {**current, "status": node.status(stamp, previous)}
            created = self._storage.update(NODES, updated, subresource="status")
        self._uids[node.name] = objects.uid(created)
        self._renew_lease(node)

    def _renew_lease(self, node: SimNode) -> None:
        body = node.lease(self._storage.now(), self._uids.get(node.name, ""))
        try:
            current = self._storage.get(LEASES, node.name, namespace=_LEASES)
        except NotFound:
            try:
                self._storage.create(LEASES, body, namespace=_LEASES)
            except ApiError as exc:
                log.debug("node lease not created", node=node.name, error=str(exc))
            return
        updated = copy.deepcopy(current)
        updated["spec"] = body["spec"]
        self._storage.update(LEASES, updated, namespace=_LEASES)

    def upkeep(self) -> None:
        """Renew the leases and write the heartbeats that are due."""
        now = self._clock.monotonic()
        for node in self.nodes.values():
            if node.failed:
                continue
            if self._lease_at[node.name] <= now:
                self._lease_at[node.name] = now + self._lease_interval
                self._renew_lease(node)
            if self._heartbeat_at[node.name] <= now:
                self._heartbeat_at[node.name] = now + NODE_STATUS_INTERVAL
                self.write(node)

    def next_deadline(self) -> float | None:
        """When the next renewal or heartbeat is due (lost nodes have none)."""
        times = [
            when
            for name, node in self.nodes.items()
            if not node.failed
            for when in (self._lease_at.get(name), self._heartbeat_at.get(name))
            if when is not None
        ]
        return min(times) if times else None

    def write(self, node: SimNode, *, taints: bool = False) -> None:
        """Write the node's status (and, with ``taints``, its unreachable taints)."""
        try:
            current = self._storage.get(NODES, node.name)
        except NotFound:
            return
        stamp = self._storage.now()
        if taints:
            updated = copy.deepcopy(current)
            kept = [t for t in _spec(updated).get("taints") or [] if t.get("key") != UNREACHABLE]
            kept += [t for t in node.taints(stamp) if t.get("key") == UNREACHABLE]
            if kept:
                updated.setdefault("spec", {})["taints"] = kept
            else:
                updated.setdefault("spec", {}).pop("taints", None)
            current = self._storage.update(NODES, updated)
        previous = (current.get("status") or {}).get("conditions")
        updated = {**current, "status": node.status(stamp, previous)}
        self._storage.update(NODES, updated, subresource="status")

    def fail(self, name: str) -> bool:
        """Mark a node lost; False when it already was."""
        node = self.nodes[name]
        if node.failed:
            return False
        node.fail(self._storage.now())
        self.write(node, taints=True)
        return True

    def recover(self, name: str) -> bool:
        """Mark a lost node healthy again; False when it was not lost."""
        node = self.nodes[name]
        if not node.failed:
            return False
        node.recover()
        self.write(node, taints=True)
        now = self._clock.monotonic()
        self._lease_at[name] = now
        self._heartbeat_at[name] = now + NODE_STATUS_INTERVAL
        return True
