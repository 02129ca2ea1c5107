"""Server-side apply: merging an applied configuration and tracking field ownership.

An apply merges the applied configuration into the live object and makes ``manager`` the owner
(operation ``Apply``) of exactly the fields the configuration sets, recorded in
``metadata.managedFields`` as kube-apiserver encodes them (``fieldsV1``). As in
structured-merge-diff:

- maps merge recursively (unless ``x-kubernetes-map-type: atomic``); lists merge by key when they
  are associative (the merge keys of :mod:`.patchmeta` for built-in kinds, or
  ``x-kubernetes-list-type: map`` / ``set`` in a custom resource's schema) and are replaced
  whole otherwise;
- a field this manager applied before and now omits is removed, unless another manager owns it;
- a field the apply changes that another manager owns is a conflict (:class:`ApplyConflict`,
  409) unless ``force``, which moves ownership; setting the value another manager already set
  shares ownership instead;
- the first apply to an object without ``managedFields`` credits its existing fields to the
  ``before-first-apply`` manager, so applies conflict with fields set by plain writes.

:func:`record_update` records a non-apply write (create, update, patch) as an ``Update`` entry of
its manager, taking ownership of what the write added or changed. The embedded server calls it
for every non-apply write, as kube-apiserver does, so an apply after a client-side apply or a plain
update sees the right owners. Not modelled: per-version conversion of field sets, subresource
entries and the reset of status fields on the main resource (the server strips those itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from etctl.runtime import KubeObject
from etctl.testing._apiserver._fieldpath import (
    Path,
    decode_checked,
    encode,
    path_sort_key,
    path_string,
)
from etctl.testing._apiserver._patcherror import bad_request
from etctl.testing._apiserver._ssamerge import (
    Comparison,
    Shape,
    compare,
    field_set,
    merge,
    remove,
    root_shape,
    with_named_parents,
)

__all__ = ["BEFORE_FIRST_APPLY", "ApplyConflict", "record_update", "server_side_apply"]

BEFORE_FIRST_APPLY = "before-first-apply"
"""The Update manager credited with the fields of an object applied to for the first time."""
# Paths the field manager never records (structured-merge-diff's "strip" set).
_UNTRACKED: frozenset[Path] = frozenset(
    {(("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),)}
    | {
        (("f", "metadata"), ("f", name))
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    }
)


class ApplyConflict(Exception):
    """An apply would change fields other managers own (HTTP 409, reason Conflict).

    Attributes:
        conflicts: ``(manager, field path)`` pairs in the server's order, paths printed as
            ``.spec.replicas``.
        message: the ``Status.message`` kube-apiserver sends.
        causes: the ``Status.details.causes`` entries (type ``conflict``, one per field).
    """

    def __init__(self, conflicts: list[tuple[str, str]], *, shown: list[str] | None = None) -> None:
        self.conflicts = conflicts
        # How each conflict's manager is printed: Update managers carry " using <apiVersion>".
        names = shown if shown is not None else [f'"{m}"' for m, _ in conflicts]
        self.causes = [
            {"type": "conflict", "message": f"conflict with {name}", "field": path}
            for name, (_, path) in zip(names, conflicts, strict=True)
        ]
        self.message = _conflict_message(names, [p for _, p in conflicts])
        super().__init__(self.message)


def _conflict_message(names: list[str], paths: list[str]) -> str:
    if len(paths) == 1:
        return f"Apply failed with 1 conflict: conflict with {names[0]}: {paths[0]}"
    lines: list[str] = []
    for name in dict.fromkeys(names):
        lines.append(f"conflicts with {name}:")
        lines.extend(f"- {p}" for n, p in zip(names, paths, strict=True) if n == name)
    return f"Apply failed with {len(paths)} conflicts: " + "\n".join(lines)


@dataclass
class _Entry:
    """One ``managedFields`` entry: a manager's fields under one operation.

    ``raw`` is the stored entry it was decoded from, kept while it is exactly what
    :meth:`encode` would produce (checked when decoding) and the entry has not changed since:
    :meth:`encode` then returns it instead of encoding the field set again. Every change goes
    through :meth:`lose` or :meth:`change`, which drop it.
    """

    manager: str
    operation: str
    api_version: str
    time: str | None
    fields: set[Path]
    subresource: str = ""
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, str, str]:
        # Appliers are one manager whatever version they apply; updaters are one per version.
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    @property
    def shown(self) -> str:
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def lose(self, paths: set[Path]) -> None:
        """Drop ``paths`` from the field set (another manager took them, or they went)."""
        if not self.fields.isdisjoint(paths):
            self.fields -= paths
            self.raw = None

    def change(self, fields: set[Path], *, time: str, api_version: str | None = None) -> None:
        """Replace the field set and stamp the time (and apiVersion) of the entry."""
        self.fields, self.time, self.raw = fields, time, None
        if api_version is not None:
            self.api_version = api_version

    def encode(self) -> Mapping[str, Any]:
        """The ``managedFields`` entry; the stored one itself when nothing changed.

        Entries of committed objects are never mutated (copy on write), so the new object may
        share it with the old one.
        """
        if self.raw is not None:
            return self.raw
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = encode(self.fields)
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _decode_entries(obj: Mapping[str, Any] | None) -> list[_Entry]:
    meta = (obj or {}).get("metadata") or {}
    entries: list[_Entry] = []
    for raw in meta.get("managedFields") or ():
        if not isinstance(raw, Mapping) or raw.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        try:
            fields, canonical = decode_checked(raw.get("fieldsV1") or {})
        except (ValueError, TypeError):
            continue
        entry = _Entry(
            manager=str(raw.get("manager") or ""),
            operation=str(raw.get("operation") or "Update"),
            api_version=str(raw.get("apiVersion") or ""),
            time=raw.get("time"),
            fields=fields,
            subresource=str(raw.get("subresource") or ""),
        )
        if canonical and _encodes_as(entry, raw):
            entry.raw = raw
        entries.append(entry)
    return entries


def _encodes_as(entry: _Entry, raw: Mapping[str, Any]) -> bool:
    """Whether :meth:`_Entry.encode` gives ``raw`` back, ``fieldsV1`` aside (checked apart).

    The same keys in the same order, and the same values of the same types, so that both
    serialize to the same bytes.
    """
    keys = ["manager", "operation", "apiVersion"]
    if entry.time is not None:
        keys.append("time")
    keys += ["fieldsType", "fieldsV1"]
    if entry.subresource:
        keys.append("subresource")
    return (
        type(raw) is dict
        and list(raw) == keys
        and type(raw["manager"]) is str
        and raw["operation"] == entry.operation
        and type(raw["apiVersion"]) is str
        and (entry.time is None or type(entry.time) is str)
        and raw["fieldsType"] == "FieldsV1"
        and type(raw["fieldsV1"]) is dict
        and (not entry.subresource or type(raw["subresource"]) is str)
    )


def _with_entries(obj: Mapping[str, Any], entries: list[_Entry]) -> KubeObject:
    """``obj`` with ``metadata.managedFields`` set to the (sorted, non-empty) entries."""
    kept = [e for e in entries if e.fields]
    kept.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    if kept:
        meta["managedFields"] = [e.encode() for e in kept]
    else:
        meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _without_managed_fields(obj: Mapping[str, Any]) -> KubeObject:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or "managedFields" not in meta:
        return dict(obj)
    out = dict(obj)
    out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def _changes(old: Any, new: Any, shape: Shape) -> Comparison:
    cmp = Comparison()
    compare(old, new, shape, (), cmp)
    return cmp


def _take_over(
    entries: list[_Entry], changes: Comparison, *, skip: tuple[str, str, str, str]
) -> None:
    """Other managers lose what the write changed or removed (forced ownership moves)."""
    lost = changes.modified | changes.added | changes.removed
    for entry in entries:
        if entry.key != skip:
            entry.lose(lost)


def _update_entry(
    entries: list[_Entry], changes: Comparison, *, manager: str, api_version: str, now: str
) -> None:
    key = (manager, "Update", api_version, "")
    _take_over(entries, changes, skip=key)
    owned = (changes.modified | changes.added) - _UNTRACKED
    entry = next((e for e in entries if e.key == key), None)
    if entry is None:
        if owned:
            entries.append(_Entry(manager, "Update", api_version, now, set(owned)))
        return
    updated = ((entry.fields - changes.removed) | owned) - _UNTRACKED
    if updated != entry.fields:
        entry.change(updated, time=now)


def record_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    manager: str,
    now: str,
    schema: Mapping[str, Any] | None = None,
) -> KubeObject:
    """Record a non-apply write by ``manager`` in ``new``'s ``managedFields``.

    The manager (operation ``Update``, at ``new``'s apiVersion) takes ownership of every field
    the write added or changed, which other managers lose; removed fields leave every set.

    Args:
        old: the object before the write (its ``managedFields`` are the starting point).
        new: the object the write produced (its own ``managedFields``, if any, are ignored).
        manager: the field manager (``fieldManager`` or the client's user agent).
        now: the RFC 3339 time to stamp on the manager's entry if it changed.
        schema: a custom resource's ``openAPIV3Schema`` (see :func:`server_side_apply`).

    Returns:
        ``new`` with ``metadata.managedFields`` updated.
    """
    kind = str(new.get("kind") or old.get("kind") or "")
    shape = root_shape(kind, schema)
    entries = _decode_entries(old)
    changes = _changes(_without_managed_fields(old), _without_managed_fields(new), shape)
    api_version = str(new.get("apiVersion") or "")
    _update_entry(entries, changes, manager=manager, api_version=api_version, now=now)
    return _with_entries(new, entries)


def server_side_apply(
    live: Mapping[str, Any] | None,
    applied: Mapping[str, Any],
    *,
    manager: str,
    force: bool,
    kind: str,
    now: str,
    schema: Mapping[str, Any] | None = None,
) -> KubeObject:
    """Apply a configuration as ``manager`` and return the resulting object.

    Args:
        live: the current object, or ``None`` when the apply creates it.
        applied: the applied configuration (a partial object).
        manager: the field manager (the ``fieldManager`` query parameter).
        force: take ownership of conflicting fields instead of failing.
        kind: the object's kind (built-in kinds merge lists by their merge keys).
        now: the RFC 3339 time stamped on the manager's entry.
        schema: a custom resource's ``openAPIV3Schema``; its ``x-kubernetes-list-type``,
            ``-list-map-keys`` and ``-map-type`` then decide how lists and maps merge.

    Returns:
        The merged object with ``metadata.managedFields`` updated.

    Raises:
        ApplyConflict: the apply changes fields other managers own and ``force`` is false.
        PatchError: 400 for a configuration that is not an object or sets ``managedFields``.
    """
    if not isinstance(applied, Mapping):
        raise bad_request("error decoding YAML: the applied configuration must be an object")
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, Mapping) and applied_meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    shape = root_shape(kind, schema)
    api_version = str(applied.get("apiVersion") or (live or {}).get("apiVersion") or "")
    base = _without_managed_fields(live) if live is not None else {}
    entries = _decode_entries(live)
    if live is not None and not entries:
        # Fields written before the first apply belong to an Update manager of their own.
        seed = _changes({}, base, shape)
        entries.append(
            _Entry(BEFORE_FIRST_APPLY, "Update", api_version, now, seed.added - _UNTRACKED)
        )
    applying_full = set[Path]()
    field_set(applied, shape, (), applying_full)
    applying = applying_full - _UNTRACKED
    key = (manager, "Apply", "", "")
    mine = next((e for e in entries if e.key == key), None)
    others = [e for e in entries if e.key != key]
    result = merge(base, dict(applied), shape)
    if mine is not None:
        # What this manager applied before and nobody (itself included) owns any more goes.
        kept = with_named_parents(applying_full.union(*(e.fields for e in others)), shape)
        for path in sorted(with_named_parents(mine.fields, shape) - kept, key=len):
            result = remove(result, path)
    changes = _changes(base, result, shape)
    _check_conflicts(others, changes, force=force)
    lost = changes.modified | changes.added | changes.removed
    for entry in others:
        entry.lose(lost)
    if mine is None:
        mine = _Entry(manager, "Apply", api_version, now, applying)
        others.append(mine)
    else:
        mine.change(applying, time=now, api_version=api_version)
        others.append(mine)
    return _with_entries(result, others)


def _check_conflicts(entries: Iterable[_Entry], changes: Comparison, *, force: bool) -> None:
    if force:
        return
    touched = changes.modified | changes.added
    found: list[tuple[tuple[str, str, str, str], _Entry, Path]] = [
        (entry.key, entry, path) for entry in entries for path in entry.fields & touched
    ]
    if not found:
        return
    found.sort(key=lambda f: (f[0], path_sort_key(f[2])))
    raise ApplyConflict(
        [(entry.manager, path_string(path)) for _, entry, path in found],
        shown=[entry.shown for _, entry, _ in found],
    )
