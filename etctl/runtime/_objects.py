"""Plain-dict Kubernetes objects and the accessors every layer shares.

etctl's runtime moves objects as the JSON the API server sent (``dict``), never as generated model
classes: they cost several times the memory and the decode time. :data:`KubeObject` names that
shape; these helpers read metadata from it without repeating ``obj.get("metadata", {})`` everywhere.

Objects handed out by the cache are shared, not copied: treat them as read-only (they are typed as
``Mapping``) and :func:`copy.deepcopy` one before changing it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from etctl.runtime._resources import Resource

__all__ = [
    "KubeObject",
    "ObjectView",
    "Tombstone",
    "annotations",
    "controller_ref",
    "controller_of",
    "generation",
    "is_controlled_by",
    "is_terminating",
    "key_of",
    "labels",
    "make_controller_ref",
    "meta",
    "name",
    "namespace",
    "owner_references",
    "resource_version",
    "split_key",
    "uid",
]

KubeObject = dict[str, Any]
"""An object as decoded from the API server's JSON."""

ObjectView = Mapping[str, Any]
"""A read-only view of an object (what the cache hands out)."""

_EMPTY: Mapping[str, Any] = {}


def meta(obj: ObjectView) -> Mapping[str, Any]:
    """``obj.metadata`` or an empty mapping."""
    value = obj.get("metadata")
    # Decoded objects hold plain dicts: an exact type check spares the ABC machinery of
    # isinstance(..., Mapping) on the informers' per-event path.
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return _EMPTY


def name(obj: ObjectView) -> str:
    """``metadata.name`` (empty string when missing)."""
    return str(meta(obj).get("name") or "")


def namespace(obj: ObjectView) -> str:
    """``metadata.namespace`` (empty string for cluster-scoped objects)."""
    return str(meta(obj).get("namespace") or "")


def uid(obj: ObjectView) -> str:
    """``metadata.uid`` (empty string when missing)."""
    return str(meta(obj).get("uid") or "")


def resource_version(obj: ObjectView) -> str:
    """``metadata.resourceVersion`` (empty string when missing)."""
    return str(meta(obj).get("resourceVersion") or "")


def generation(obj: ObjectView) -> int:
    """``metadata.generation`` (0 when missing)."""
    value = meta(obj).get("generation")
    return value if isinstance(value, int) else 0


def labels(obj: ObjectView) -> Mapping[str, str]:
    """``metadata.labels`` or an empty mapping."""
    value = meta(obj).get("labels")
    return value if isinstance(value, Mapping) else _EMPTY


def annotations(obj: ObjectView) -> Mapping[str, str]:
    """``metadata.annotations`` or an empty mapping."""
    value = meta(obj).get("annotations")
    return value if isinstance(value, Mapping) else _EMPTY


def owner_references(obj: ObjectView) -> Sequence[Mapping[str, Any]]:
    """``metadata.ownerReferences`` or an empty sequence."""
    value = meta(obj).get("ownerReferences")
    if not isinstance(value, list):
        return ()
    return [ref for ref in value if type(ref) is dict or isinstance(ref, Mapping)]


def controller_of(obj: ObjectView) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, if any (there is at most one)."""
    for ref in owner_references(obj):
        if ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: ObjectView, owner: ObjectView) -> bool:
    """True when ``obj``'s controller reference points at ``owner``'s uid."""
    ref = controller_of(obj)
    return ref is not None and bool(uid(owner)) and ref.get("uid") == uid(owner)


def controller_ref(obj: ObjectView) -> str | None:
    """The uid of ``obj``'s controller owner, if any (the cache indexes objects by it)."""
    ref = controller_of(obj)
    value = ref.get("uid") if ref else None
    return str(value) if value else None


def make_controller_ref(
    owner: ObjectView, resource: "Resource", *, block_owner_deletion: bool = True
) -> dict[str, Any]:
    """An ownerReference making ``owner`` (an object of ``resource``) the controller of a child."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "name": name(owner),
        "uid": uid(owner),
        "controller": True,
        "blockOwnerDeletion": block_owner_deletion,
    }


def is_terminating(obj: ObjectView) -> bool:
    """True when ``obj`` carries a ``deletionTimestamp``: it is on its way out.

    Finalizers or a grace period may keep it visible for a while; nothing should count on it.
    """
    return bool(meta(obj).get("deletionTimestamp"))


def key_of(obj: ObjectView) -> str:
    """The cache key: ``namespace/name``, or ``name`` for cluster-scoped objects."""
    metadata = meta(obj)
    ns = str(metadata.get("namespace") or "")
    nm = str(metadata.get("name") or "")
    return f"{ns}/{nm}" if ns else nm


def split_key(key: str) -> tuple[str, str]:
    """Split a cache key into ``(namespace, name)``; namespace is ``""`` when cluster-scoped."""
    ns, sep, nm = key.partition("/")
    return (ns, nm) if sep else ("", ns)


@dataclass(frozen=True, slots=True)
class Tombstone:
    """An object deleted while the watch was down: only its last known state is known.

    client-go calls this ``DeletedFinalStateUnknown``. Delete handlers receive either the deleted
    object or a Tombstone; :attr:`obj` is the last state the cache held.
    """

    key: str
    obj: ObjectView
