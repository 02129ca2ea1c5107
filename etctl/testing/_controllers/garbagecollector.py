"""The garbage collector: dependents follow their owners out, as kube-controller-manager's GC.

Every object with ``ownerReferences`` is a *dependent* of the objects those references name (by
uid; the reference's apiVersion, kind and name say where to look). The collector keeps a graph of
owner uid to dependents, fed by every committed change, and queues work when it matters:

* **background**: when an owner is gone, each dependent is checked; one whose owners are all
  absent is deleted (with the propagation its own finalizers ask for);
* **foreground**: an owner deleted with ``propagationPolicy=Foreground`` carries the
  ``foregroundDeletion`` finalizer; all its dependents are deleted (foreground in turn when they
  have dependents), and the finalizer is removed once no dependent with
  ``blockOwnerDeletion: true`` remains, which lets the owner go;
* **orphan**: an owner carrying the ``orphan`` finalizer has its references removed from every
  dependent, then the finalizer is removed;
* **dangling references**: an owner is absent when no object of that apiVersion/kind and name
  exists in the dependent's namespace (or cluster-wide, for cluster-scoped kinds) or when the one
  found has another uid, so a dependent created with a reference to a nonexistent owner is
  deleted, as the real collector does.

A dependent with several owners survives while one of them is present and not waiting for its
dependents (references to absent or foreground-deleting owners are then removed from it). An
owner reference of a kind the server does not serve, or a namespaced owner of a cluster-scoped
dependent, cannot be resolved and keeps its dependent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from etctl.errors import ApiError, NotFound
from etctl.log import get_logger
from etctl.runtime import KubeObject, ObjectView, objects
from etctl.testing._apiserver.deletion import FOREGROUND, ORPHAN, DeleteOptions
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.store import Event, GroupResource, object_key
from etctl.testing._controllers.host import QueueController

__all__ = ["GarbageCollector"]

log = get_logger(__name__)

Action = Literal["attempt", "foreground", "orphan"]
Verdict = Literal["solid", "dangling", "waiting"]


@dataclass(frozen=True, slots=True)
class _Ref:
    uid: str
    api_version: str
    kind: str
    name: str
    block: bool


@dataclass(frozen=True, slots=True)
class _Node:
    resource: GroupResource
    namespace: str
    name: str
    uid: str
    refs: tuple[_Ref, ...]
    finalizers: tuple[str, ...]
    deleting: bool

    @property
    def key(self) -> str:
        return object_key(self.namespace, self.name)

    @property
    def foreground(self) -> bool:
        return self.deleting and FOREGROUND in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.deleting and ORPHAN in self.finalizers


def _node(resource: GroupResource, obj: ObjectView) -> _Node:
    metadata = objects.meta(obj)
    refs = tuple(
        _Ref(
            uid=str(r.get("uid") or ""),
            api_version=str(r.get("apiVersion") or ""),
            kind=str(r.get("kind") or ""),
            name=str(r.get("name") or ""),
            block=r.get("blockOwnerDeletion") is True,
        )
        for r in metadata.get("ownerReferences") or []
        if isinstance(r, Mapping) and r.get("uid")
    )
    return _Node(
        resource=resource,
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        refs=refs,
        finalizers=tuple(str(f) for f in metadata.get("finalizers") or []),
        deleting=bool(metadata.get("deletionTimestamp")),
    )


def _version(obj: ObjectView) -> str:
    return str(obj.get("apiVersion") or "v1").rpartition("/")[2]


class GarbageCollector(QueueController[tuple[Action, str]]):
    """Deletes dependents whose owners are gone, for every resource the server serves.

    Args:
        storage: the server's storage.
    """

    def __init__(self, storage: Storage) -> None:
        super().__init__(storage, task_name="garbage-collector")
        self._nodes: dict[str, _Node] = {}
        self._dependents: dict[str, set[str]] = {}

    def _resume(self) -> None:
        """Build the graph from what is stored."""
        for info in self.storage.registry:
            for _key, obj in self.storage.store.items(info.key):
                self._update(info.key, obj, None)

    # -- the graph ------------------------------------------------------------------------------

    def dependents(self, owner_uid: str) -> list[str]:
        """The uids of the objects that name ``owner_uid`` as an owner."""
        return sorted(self._dependents.get(owner_uid, ()))

    def observe(self, event: Event) -> None:
        """Update the graph with one change and queue the work it calls for."""
        obj = event.object
        object_uid = str(objects.meta(obj).get("uid") or "")
        if not object_uid:
            return
        if event.type == "DELETED":
            node = self._nodes.pop(object_uid, None)
            if node is not None:
                self._unlink(node)
                for ref in node.refs:
                    owner = self._nodes.get(ref.uid)
                    if owner is not None and owner.foreground:
                        self._queue.add(("foreground", owner.uid))
            for dependent in self._dependents.get(object_uid, ()):
                self._queue.add(("attempt", dependent))
            return
        self._update(event.resource, obj, self._nodes.get(object_uid))

    def _update(self, resource: GroupResource, obj: ObjectView, old: _Node | None) -> None:
        node = _node(resource, obj)
        self._nodes[node.uid] = node
        if old is None or old.refs != node.refs:
            if old is not None:
                self._unlink(old)
            for ref in node.refs:
                self._dependents.setdefault(ref.uid, set()).add(node.uid)
            if node.refs:
                self._queue.add(("attempt", node.uid))
        if node.foreground and (old is None or not old.foreground):
            self._queue.add(("foreground", node.uid))
            for dependent in self._dependents.get(node.uid, ()):
                self._queue.add(("attempt", dependent))
        if node.orphaning:
            self._queue.add(("orphan", node.uid))

    def _unlink(self, node: _Node) -> None:
        for ref in node.refs:
            dependents = self._dependents.get(ref.uid)
            if dependents is not None:
                dependents.discard(node.uid)
                if not dependents:
                    del self._dependents[ref.uid]

    # -- work -----------------------------------------------------------------------------------

    def _handle(self, item: tuple[Action, str]) -> None:
        action, object_uid = item
        node = self._nodes.get(object_uid)
        if node is None:
            return
        obj = self.storage.store.get(node.resource, node.key)
        if obj is None or objects.meta(obj).get("uid") != object_uid:
            return
        try:
            if action == "attempt":
                self._attempt(node, obj)
            elif action == "foreground":
                self._foreground(node, obj)
            else:
                self._orphan(node, obj)
        except NotFound:
            return
        except ApiError as exc:
            log.warning("garbage collection step failed", action=action, error=str(exc))

    def _attempt(self, node: _Node, obj: ObjectView) -> None:
        """Delete the dependent if it has no owner left, or trim references to absent owners."""
        if node.deleting:
            if node.foreground:
                self._queue.add(("foreground", node.uid))
            return
        if not node.refs:
            return
        verdicts = {ref.uid: self._classify(ref, node) for ref in node.refs}
        if "solid" in verdicts.values():
            drop = {uid for uid, verdict in verdicts.items() if verdict != "solid"}
            if drop:
                self._remove_refs(node, obj, drop)
            return
        if "waiting" in verdicts.values() and self._dependents.get(node.uid):
            policy = "Foreground"
        elif ORPHAN in node.finalizers:
            policy = "Orphan"
        elif FOREGROUND in node.finalizers:
            policy = "Foreground"
        else:
            policy = "Background"
        info = self.storage.registry.get(*node.resource)
        if info is not None:
            options = DeleteOptions(propagation_policy=policy, uid=node.uid)
            self.storage.delete_in(info, node.name, namespace=node.namespace, options=options)

    def _classify(self, ref: _Ref, node: _Node) -> Verdict:
        group = ref.api_version.rpartition("/")[0]
        info = self.storage.registry.by_kind(group, ref.kind)
        if info is None or (info.namespaced and not node.namespace):
            return "solid"  # unresolvable: the real collector keeps such dependents too
        namespace = node.namespace if info.namespaced else ""
        owner = self.storage.store.get(info.key, object_key(namespace, ref.name))
        if owner is None or objects.meta(owner).get("uid") != ref.uid:
            return "dangling"
        owner_meta = objects.meta(owner)
        if owner_meta.get("deletionTimestamp") and FOREGROUND in (
            owner_meta.get("finalizers") or []
        ):
            return "waiting"
        return "solid"

    def _foreground(self, node: _Node, obj: ObjectView) -> None:
        """Delete the owner's dependents; let it go once no blocking dependent remains."""
        if not node.foreground:
            return
        blocking = []
        for dependent_uid in self.dependents(node.uid):
            dependent = self._nodes.get(dependent_uid)
            if dependent is None:
                continue
            if any(ref.uid == node.uid and ref.block for ref in dependent.refs):
                blocking.append(dependent)
        if not blocking:
            self._remove_finalizer(node, obj, FOREGROUND)
            return
        for dependent in blocking:
            if not dependent.foreground:
                self._queue.add(("attempt", dependent.uid))

    def _orphan(self, node: _Node, obj: ObjectView) -> None:
        """Remove the owner from its dependents, then the ``orphan`` finalizer."""
        if not node.orphaning:
            return
        for dependent_uid in self.dependents(node.uid):
            dependent = self._nodes.get(dependent_uid)
            if dependent is None:
                continue
            current = self.storage.store.get(dependent.resource, dependent.key)
            if current is not None:
                self._remove_refs(dependent, current, {node.uid})
        self._remove_finalizer(node, obj, ORPHAN)

    # -- writes ---------------------------------------------------------------------------------

    def _write(self, node: _Node, updated: KubeObject) -> None:
        info = self.storage.registry.get(*node.resource)
        if info is None:
            return
        self.storage.update_in(
            info, _version(updated), node.name, updated, namespace=node.namespace
        )

    def _remove_refs(self, node: _Node, obj: ObjectView, owners: set[str]) -> None:
        # The write decodes (deep-copies) the body: only the edited metadata needs a copy here.
        metadata: dict[str, Any] = dict(obj["metadata"])
        updated: KubeObject = {**obj, "metadata": metadata}
        kept = [r for r in metadata.get("ownerReferences") or [] if r.get("uid") not in owners]
        if kept:
            metadata["ownerReferences"] = kept
        else:
            metadata.pop("ownerReferences", None)
        self._write(node, updated)

    def _remove_finalizer(self, node: _Node, obj: ObjectView, finalizer: str) -> None:
        metadata: dict[str, Any] = dict(obj["metadata"])
        updated: KubeObject = {**obj, "metadata": metadata}
        metadata["finalizers"] = [f for f in metadata.get("finalizers") or [] if f != finalizer]
        self._write(node, updated)
