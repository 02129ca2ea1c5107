"""Transforms: what an informer does to each object before caching it.

A :data:`Transform` takes an object as decoded from the API server and returns what the cache
keeps. It runs once per object (per list item and per watch event), before the store, so the
store, its indexes, handlers and readers only ever see transformed objects. A transform may change
and return its argument (the decoded object belongs to nobody else yet), must keep
``metadata.name``, ``namespace``, ``uid`` and ``resourceVersion``, and must not fail: an informer
that catches a failing transform logs it and caches the object untransformed.

What the informer uses by default is :func:`strip_managed_fields`. It is safe: the server ignores
a write that omits ``metadata.managedFields`` (or sends an empty list) and keeps the field manager
records it has, so an object read from the cache, deep-copied, changed and written back with a
PUT or a patch never clears them. Only a controller that reads field ownership itself needs them.
For a running pod they are a third of the JSON and far more of its decoded size, being a deep
tree of small dicts.

:func:`strip_last_applied` is *not* a default: ``kubectl.kubernetes.io/last-applied-configuration``
is the base of ``kubectl apply``'s three-way merge, and a controller that replaced (PUT) an object
from a cache without it would delete the annotation on the server, after which the user's next
``kubectl apply`` can no longer prune fields they removed from their manifest. Objects that
controllers create (pods, services) do not carry it anyway; user-applied objects (the jobs) do,
and are few. Opt in when every write is a patch.
"""

from __future__ import annotations

from collections.abc import Callable

from etctl.runtime._objects import KubeObject

__all__ = [
    "LAST_APPLIED",
    "Transform",
    "compose",
    "strip_last_applied",
    "strip_managed_fields",
]

Transform = Callable[[KubeObject], KubeObject]
"""Maps a decoded object to what the cache keeps (see the module docstring for the rules)."""

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""The annotation client-side ``kubectl apply`` keeps its last applied manifest in."""


def strip_managed_fields(obj: KubeObject) -> KubeObject:
    """Drop ``metadata.managedFields`` (the informer's default transform)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def strip_last_applied(obj: KubeObject) -> KubeObject:
    """Drop the ``last-applied-configuration`` annotation (and the annotations if then empty)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        notes = metadata.get("annotations")
        if isinstance(notes, dict) and LAST_APPLIED in notes:
            del notes[LAST_APPLIED]
            if not notes:
                del metadata["annotations"]
    return obj


def compose(*transforms: Transform) -> Transform:
    """One transform that applies ``transforms`` left to right."""
    steps = tuple(transforms)
    if len(steps) == 1:
        return steps[0]

    def chained(obj: KubeObject) -> KubeObject:
        for step in steps:
            obj = step(obj)
        return obj

    return chained
