"""Serving what CRDs define: registration on commit, and cleanup when a CRD is deleted.

The controller listens to committed events. A CRD that is created or updated (and not being
deleted) is registered at once, so the request that created it returns only once its resource is
served (``kubectl apply -f crd.yaml`` followed by creating an object works). A deleted CRD keeps
being served while it terminates: its objects are deleted (those with finalizers wait for them),
and once none remain the ``customresourcecleanup.apiextensions.k8s.io`` finalizer is removed, the
CRD goes away and its resource is unregistered.
"""

from __future__ import annotations

from etctl.errors import ApiError
from etctl.log import get_logger
from etctl.testing._apiserver.crds import CLEANUP_FINALIZER, is_terminating, resource_from_crd
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.storage import Storage, WriteOptions
from etctl.testing._apiserver.store import CRDS, Event

__all__ = ["CRDController"]

log = get_logger(__name__)


class CRDController:
    """Keeps the registry in step with the stored CRDs; subscribe :meth:`observe` to the store."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._terminating: dict[tuple[str, str], str] = {}

    def observe(self, event: Event) -> None:
        """Store listener."""
        if event.resource == CRDS:
            self._on_crd(event)
        elif event.type == "DELETED" and event.resource in self._terminating:
            self._try_finalize(event.resource)

    def _on_crd(self, event: Event) -> None:
        crd = event.object
        spec = crd.get("spec") or {}
        key = (str(spec.get("group")), str((spec.get("names") or {}).get("plural")))
        if event.type == "DELETED":
            self._terminating.pop(key, None)
            self.storage.registry.unregister(*key)
            self.storage.store.close_sinks(key, "resource removed")
            self.storage.store.compact(key)
            return
        self.storage.registry.register(resource_from_crd(crd))
        if is_terminating(crd) and key not in self._terminating:
            name = str(crd["metadata"]["name"])
            self._terminating[key] = name
            self._mark_terminating(name)
            self._delete_instances(key)
            self._try_finalize(key)

    def _mark_terminating(self, name: str) -> None:
        """Rewrite the CRD so its status gains the ``Terminating`` condition."""
        info = self.storage.registry.get(*CRDS)
        crd = self.storage.store.get(CRDS, name)
        if info is None or crd is None:
            return
        # The stored CRD as is: the update decodes (copies) it and its strategy adds the condition.
        self.storage.update_in(info, "v1", name, crd, options=WriteOptions())

    def _delete_instances(self, key: tuple[str, str]) -> None:
        info = self.storage.registry.get(*key)
        if info is None:
            return
        for obj_key, obj in self.storage.store.items(key):
            meta = obj["metadata"]
            try:
                self.storage.delete_in(
                    info,
                    str(meta["name"]),
                    namespace=str(meta.get("namespace") or ""),
                    options=DeleteOptions(),
                )
            except ApiError as exc:
                log.debug("custom resource cleanup skipped an object", key=obj_key, error=str(exc))

    def _try_finalize(self, key: tuple[str, str]) -> None:
        if self.storage.store.count(key):
            return
        name = self._terminating.get(key)
        if name is None:
            return
        crd = self.storage.store.get(CRDS, name)
        if crd is None:
            return
        finalizers = list(crd["metadata"].get("finalizers") or [])
        if CLEANUP_FINALIZER not in finalizers:
            return
        info = self.storage.registry.get(*CRDS)
        assert info is not None
        kept = [f for f in finalizers if f != CLEANUP_FINALIZER]
        updated = {**crd, "metadata": {**crd["metadata"], "finalizers": kept}}
        self.storage.update_in(info, "v1", name, updated, options=WriteOptions())
