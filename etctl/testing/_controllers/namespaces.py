"""The namespace controller: a terminating namespace is emptied, finalized and removed.

Deleting a namespace only marks it ``Terminating`` (the API server's part). This controller does
the rest, as kube-controller-manager's namespace controller does:

1. every object of every namespaced resource in it (custom resources included) is deleted, with
   background propagation;
2. while objects remain (pods finishing their grace period, objects held by finalizers), the
   namespace stays ``Terminating`` and its status conditions say why:
   ``NamespaceContentRemaining`` (``pods. has 2 resource instances``) and
   ``NamespaceFinalizersRemaining`` (``example.com/hold in 1 resource instances``), beside
   ``NamespaceDeletionDiscoveryFailure``, ``NamespaceDeletionGroupVersionParsingFailure`` and
   ``NamespaceDeletionContentFailure`` (``False`` here unless a delete is refused);
3. once it is empty, the ``kubernetes`` finalizer is removed through ``/finalize`` and the
   namespace is deleted for good (if no other finalizer holds it).

Work is event driven: any change to an object in a terminating namespace re-examines that
namespace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from etctl.errors import ApiError, NotFound
from etctl.log import get_logger
from etctl.runtime import NAMESPACES, KubeObject, ObjectView, objects
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.store import NAMESPACES as _NAMESPACES
from etctl.testing._apiserver.store import Event
from etctl.testing._controllers.host import QueueController

__all__ = ["FINALIZER", "NamespaceController"]

log = get_logger(__name__)

FINALIZER = "kubernetes"


def _terminating(obj: ObjectView) -> bool:
    return bool(objects.meta(obj).get("deletionTimestamp"))


def _spec_finalizers(obj: ObjectView) -> list[str]:
    spec = obj.get("spec")
    found = spec.get("finalizers") if isinstance(spec, Mapping) else None
    return [str(f) for f in found or []]


class NamespaceController(QueueController[str]):
    """Empties, finalizes and removes terminating namespaces.

    Args:
        storage: the server's storage.
    """

    def __init__(self, storage: Storage) -> None:
        super().__init__(storage, task_name="namespace-controller")
        self._terminating: set[str] = set()

    def _resume(self) -> None:
        """Pick up namespaces already terminating."""
        for _key, namespace in self.storage.store.items(_NAMESPACES):
            if _terminating(namespace):
                self._mark(str(objects.meta(namespace).get("name")))

    def _mark(self, name: str) -> None:
        self._terminating.add(name)
        self._queue.add(name)

    def observe(self, event: Event) -> None:
        """Queue a namespace when it terminates or when an object in it changes."""
        obj = event.object
        if event.resource == _NAMESPACES:
            name = str(objects.meta(obj).get("name") or "")
            if event.type == "DELETED":
                self._terminating.discard(name)
            elif _terminating(obj):
                self._mark(name)
            return
        namespace = str(objects.meta(obj).get("namespace") or "")
        if namespace in self._terminating:
            self._queue.add(namespace)

    # -- work -----------------------------------------------------------------------------------

    def _handle(self, name: str) -> None:
        namespace: ObjectView | None = self.storage.store.get(_NAMESPACES, name)
        if namespace is None or not _terminating(namespace):
            self._terminating.discard(name)
            return
        try:
            if FINALIZER in _spec_finalizers(namespace):
                remaining, finalizers, failures = self._delete_content(name)
                namespace = self._write_conditions(namespace, remaining, finalizers, failures)
                if remaining:
                    return
                namespace = self._finalize(namespace)
            if not _spec_finalizers(namespace) and not objects.meta(namespace).get("finalizers"):
                self.storage.delete(NAMESPACES, name)
        except NotFound:
            self._terminating.discard(name)
        except ApiError as exc:
            log.warning("namespace deletion step failed", namespace=name, error=str(exc))

    def _delete_content(self, name: str) -> tuple[Counter[str], Counter[str], list[str]]:
        """Delete what is in the namespace; count what remains, and its finalizers."""
        remaining: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        failures: list[str] = []
        options = DeleteOptions(propagation_policy="Background")
        for info in self.storage.registry:
            if not info.namespaced:
                continue
            for _key, obj in self.storage.store.items(info.key, name):
                metadata = objects.meta(obj)
                if metadata.get("deletionTimestamp"):
                    continue
                try:
                    self.storage.delete_in(
                        info, str(metadata.get("name")), namespace=name, options=options
                    )
                except NotFound:
                    continue
                except ApiError as exc:
                    failures.append(f"{info.plural}.{info.group}: {exc.message}")
            left = self.storage.store.items(info.key, name)
            if left:
                remaining[f"{info.plural}.{info.group}"] = len(left)
                for _key, obj in left:
                    finalizers.update(str(f) for f in objects.meta(obj).get("finalizers") or [])
        return remaining, finalizers, failures

    def _write_conditions(
        self,
        namespace: ObjectView,
        remaining: Counter[str],
        finalizers: Counter[str],
        failures: list[str],
    ) -> ObjectView:
        content = ", ".join(f"{r} has {n} resource instances" for r, n in sorted(remaining.items()))
        held = ", ".join(f"{f} in {n} resource instances" for f, n in sorted(finalizers.items()))
        wanted = [
            (
                "NamespaceDeletionDiscoveryFailure",
                False,
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                False,
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            (
                "NamespaceDeletionContentFailure",
                bool(failures),
                "ContentDeletionFailed" if failures else "ContentDeleted",
                f"Failed to delete all resource types, {len(failures)} remaining: "
                + ", ".join(failures)
                if failures
                else "All content successfully deleted, may be waiting on finalization",
            ),
            (
                "NamespaceContentRemaining",
                bool(remaining),
                "SomeResourcesRemain" if remaining else "ContentRemoved",
                f"Some resources are remaining: {content}"
                if remaining
                else "All content successfully removed",
            ),
            (
                "NamespaceFinalizersRemaining",
                bool(finalizers),
                "SomeFinalizersRemain" if finalizers else "ContentHasNoFinalizers",
                f"Some content in the namespace has finalizers remaining: {held}"
                if finalizers
                else "All content-preserving finalizers finished",
            ),
        ]
        status = namespace.get("status")
        before = {
            str(c.get("type")): c
            for c in (status.get("conditions") if isinstance(status, Mapping) else None) or []
            if isinstance(c, Mapping)
        }
        now = self.storage.now()
        conditions: list[dict[str, Any]] = []
        for kind, value, reason, message in wanted:
            text = "True" if value else "False"
            old = before.get(kind)
            transition = now
            if old is not None and old.get("status") == text and old.get("lastTransitionTime"):
                transition = str(old["lastTransitionTime"])
            conditions.append(
                {
                    "type": kind,
                    "status": text,
                    "lastTransitionTime": transition,
                    "reason": reason,
                    "message": message,
                }
            )
        # The write decodes (deep-copies) the body: rebuilding the edited levels is enough.
        status = {**(namespace.get("status") or {}), "conditions": conditions}
        updated: KubeObject = {**namespace, "status": status}
        return self.storage.update(NAMESPACES, updated, subresource="status")

    def _finalize(self, namespace: ObjectView) -> ObjectView:
        finalizers = [f for f in _spec_finalizers(namespace) if f != FINALIZER]
        spec = {**(namespace.get("spec") or {}), "finalizers": finalizers}
        updated: KubeObject = {**namespace, "spec": spec}
        return self.storage.update(NAMESPACES, updated, subresource="finalize")
