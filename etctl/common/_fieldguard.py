"""A status write guarded by the fields its writer owns, not by the whole object's version.

A job's status has two writers in one operator: the job controller (conditions, replica counts,
times, the plugin's fields) and, for an elastic kind, the scaling controller (the membership and
the scaler being run). Each field has exactly one of them as its writer. Guarding each write by
the job's ``resourceVersion`` made every write of one refuse the other's concurrent write of
*other* fields: a 409, a requeue and the whole reconcile again, for nothing a stale read could
have got wrong. What a stale read can get wrong is the writer's own fields: a counter incremented
twice, a condition list rewritten from an older one, a decision written over a newer one. So the
guard covers exactly those.

The write is an RFC 6902 JSON patch of ``/status`` (what kube-apiserver accepts for a custom
resource and its status subresource):

1. ``test`` of ``/metadata/uid``: the object read, not a successor of the same name;
2. ``test`` of every field the writer owns, as it was read (a field absent when read is not
   tested: JSON patch cannot test an absence; it is a field this writer never wrote to this
   object, or wrote from a read a stale cache could not have shown);
3. an ``add`` of each field the write changes, its whole new value: the merge patch the writer
   computed, applied to the field as read (a field the patch removes is added, then removed, so
   one that went meanwhile is no error).

A job whose status is still absent when read cannot be patched below ``/status`` (JSON patch has
no "add if absent", and an ``add`` of ``/status`` would replace what another writer wrote since),
so its first write is a merge patch guarded by the uid only: RFC 7386 merges it into whatever the
status holds by then, and both writers' first writes land whole, in either order.

One writer's reconciles see its own last write of its fields even before the cache does
(:func:`overlaid`): the cache reads this process's writes, but two writers' overlapping writes of
one object reach it only through the watch, and a read without its own last write would fail its
own guard.

A failed ``test`` is answered 422 by kube-apiserver (``the server rejected our request due to an
error in our request``), as an invalid object is: :func:`stale_fields` tells them apart from the
object read again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from etctl.runtime import ObjectView, objects

__all__ = ["field_ops", "guarded_ops", "merged", "overlaid", "stale_fields", "value_at"]


def _pointer(*parts: str) -> str:
    """The RFC 6901 JSON pointer of ``parts``."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _status_of(obj: ObjectView) -> Mapping[str, Any] | None:
    status = obj.get("status")
    return status if isinstance(status, Mapping) and status else None


def merged(old: Any, patch: Any) -> Any:
    """``old`` with the RFC 7386 merge patch ``patch`` applied (None: the field goes)."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(old) if isinstance(old, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def guarded_ops(
    obj: ObjectView, status: Mapping[str, Any], owned: Collection[str]
) -> list[dict[str, Any]] | None:
    """The JSON patch writing the status merge patch ``status`` to ``obj`` (see the module docs).

    Args:
        obj: the object as read (its uid, and its owned fields as the guard).
        status: the merge patch of the status the writer computed (top-level keys are fields).
        owned: the status fields the writer owns.

    Returns:
        The operations, or None when ``obj`` has no status yet (the caller merges instead).
    """
    stored = _status_of(obj)
    if stored is None:
        return None
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/uid", "value": objects.uid(obj)}]
    ops += [
        {"op": "test", "path": _pointer("status", name), "value": stored[name]}
        for name in sorted(owned)
        if stored.get(name) is not None
    ]
    for name, change in status.items():
        value = merged(stored.get(name), change)
        path = _pointer("status", name)
        if value is not None:
            ops.append({"op": "add", "path": path, "value": value})
        elif stored.get(name) is not None:
            # An add first: a field gone meanwhile (one the guard does not test) is no error.
            ops += [{"op": "add", "path": path, "value": None}, {"op": "remove", "path": path}]
    return ops


def value_at(obj: ObjectView, path: Sequence[str]) -> Any:
    """The value at ``path`` (JSON keys from the root), or None when it is absent."""
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node


def field_ops(obj: ObjectView, path: Sequence[str], value: Any) -> list[dict[str, Any]] | None:
    """The JSON patch setting the field at ``path`` to ``value``, guarded by its value as read.

    None when a map on the way is absent (the caller merges instead): JSON patch cannot add
    below a missing member.
    """
    if value_at(obj, path[:-1]) is None:
        return None
    pointer = _pointer(*path)
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/uid", "value": objects.uid(obj)}]
    if (current := value_at(obj, path)) is not None:
        ops.append({"op": "test", "path": pointer, "value": current})
    ops.append({"op": "add", "path": pointer, "value": value})
    return ops


def stale_fields(read: ObjectView, fresh: ObjectView, owned: Collection[str]) -> list[str]:
    """The owned fields whose value in ``fresh`` differs from ``read``'s (a failed guard)."""
    before = _status_of(read) or {}
    after = _status_of(fresh) or {}
    return [
        name
        for name in sorted(owned)
        if before.get(name) is not None and before.get(name) != after.get(name)
    ]


def overlaid(obj: ObjectView, written: ObjectView, owned: Collection[str]) -> ObjectView:
    """``obj`` showing the ``owned`` status fields as ``written`` while ``obj`` is older than it.

    ``written`` is the answer of the writer's last write of those fields. ``obj`` itself once it
    is that version or a later one (what it shows of the fields is then the truth, another
    writer's later change included), or another object (a successor of the same name); a copy
    otherwise. Older is told by the versions as integers (what kube-apiserver's are); versions
    that are not integers are never overlaid. Sound because the writer is the only one of these
    fields in its process: a version before its write has its fields as they were before it,
    which the write replaced.
    """
    if objects.uid(obj) != objects.uid(written):
        return obj
    have, wrote = objects.resource_version(obj), objects.resource_version(written)
    if not (have.isdigit() and wrote.isdigit() and int(have) < int(wrote)):
        return obj
    status = _status_of(obj) or {}
    values = _status_of(written) or {}
    shown = {k: v for k, v in status.items() if k not in owned}
    shown.update({k: v for k, v in values.items() if k in owned})
    return {**obj, "status": shown}
