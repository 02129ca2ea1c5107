"""Server-side strategic merge patch (``k8s.io/apimachinery/pkg/util/strategicpatch``).

Lists are merged by the merge keys and strategies of :mod:`.patchmeta`; the ``$patch``
(``replace``, ``delete``), ``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and
``$setElementOrder/<field>`` directives behave as in kube-apiserver, and so does list ordering
(patched items in patch order, live-only items in live order, interleaved). A patch value placed
where nothing was has its directives resolved against emptiness and its nulls dropped, as decoding
the result into the typed object would. Errors carry the real statuses: 400 for a malformed
directive, 422 for lists of lists, a reason-less 500 for the rest (a missing merge key, say).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from etctl._apimachinery.gofmt import go_type_name, go_v
from etctl.runtime import KubeObject
from etctl.testing._apiserver._patcherror import MISSING, PatchError, bad_request, unclassified
from etctl.testing._apiserver.patchmeta import FieldMeta, meta_for_kind

__all__ = ["apply_strategic_merge_patch"]

_PATCH: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_PRIMITIVES: Final = "$deleteFromPrimitiveList"
_SET_ORDER: Final = "$setElementOrder"
_NO_LIST_OF_LISTS = "lists of lists are not supported"


_GO_TYPES: Final = {
    type(None): "<nil>",
    bool: "bool",
    int: "int64",
    float: "float64",
    str: "string",
    list: "[]interface {}",
}


def _go_type(value: Any) -> str:
    """``reflect.TypeOf`` of a decoded JSON value, as Go prints it."""
    return _GO_TYPES.get(type(value), "map[string]interface {}")


def _bad_arg(expected: str, value: Any) -> PatchError:
    return unclassified(f"expected a {expected}, but received a {_go_type(value)}")


def _go_eq(left: Any, right: Any) -> bool:
    """Go's ``==`` on two decoded scalars: same dynamic type and value."""
    if isinstance(left, dict | list) or isinstance(right, dict | list):
        return False
    return type(left) is type(right) and left == right


def _token(value: Any) -> object:
    """A hashable stand-in with Go's ``map[interface{}]`` key identity."""
    if isinstance(value, dict | list):
        return (object, id(value))
    return (type(value), value)


def _no_merge_key(item: Any, key: str) -> PatchError:
    return unclassified(f"map: {go_v(item)} does not contain declared merge key: {key}")


def _extract_key(directive: str, prefix: str) -> str:
    head, slash, field = directive.partition("/")
    if not slash or head != prefix:
        if prefix == _DELETE_PRIMITIVES:
            raise bad_request("invalid patch format of primitive list")
        raise bad_request("invalid patch format of setElementOrder list")
    return field


def _element_kind(*lists: Sequence[Any]) -> str:
    """The one element type of the lists ("map", "scalar type name"), or raise as Go does."""
    first: str | None = None
    for items in lists:
        for item in items:
            kind = _go_type(item)
            if first is None:
                if isinstance(item, list):
                    raise PatchError(_NO_LIST_OF_LISTS, status=422, reason="Invalid")
                first = kind
            elif kind != first:
                shown = "[" + " ".join(go_v(list(x)) for x in lists) + "]"
                raise unclassified(f"list element types are not identical: {shown}")
    if first is None:
        raise unclassified("no elements in any of the given slices")
    return first


def _is_map_kind(kind: str) -> bool:
    return kind.startswith("map[")


def _fresh(value: Any, meta: FieldMeta) -> Any:
    """A patch value placed where nothing was: directives resolved against emptiness.

    List elements that carry ``$patch`` have nothing to act on and are dropped; objects lose
    their null members, as decoding the patched object into its type would drop them.
    """
    if isinstance(value, dict):
        return _merge_map(None, value, meta)
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return [
            _merge_map(None, v, meta) if isinstance(v, dict) else v
            for v in value
            if not (isinstance(v, dict) and _PATCH in v)
        ]
    return value


def _index(order: Sequence[Any], item: Any, key: str) -> int:
    want = item.get(key) if key and isinstance(item, dict) else item
    for i, candidate in enumerate(order):
        have = candidate.get(key) if key and isinstance(candidate, dict) else candidate
        if (have is None and want is None) or _go_eq(have, want):
            return i
    return -1


def _check_merge_keys(key: str, *lists: Sequence[Any]) -> None:
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                raise _bad_arg("map[string]interface {}", item)
            if key not in item:
                raise _no_merge_key(item, key)


def _sort_by(items: list[Any], order: Sequence[Any], key: str, is_map: bool) -> list[Any]:
    deleted: list[Any] = []
    if is_map:
        _check_merge_keys(key, items, order)
        deleted = [i for i in items if i.get(_PATCH) == "delete"]
        items = [i for i in items if i.get(_PATCH) != "delete"]
    ranked = [(_index(order, item, key), n, item) for n, item in enumerate(items)]
    ranked.sort(key=lambda r: (r[0] if r[0] >= 0 else len(order), r[1]))
    return [item for _, _, item in ranked] + deleted


def _normalize(
    patch_items: list[Any],
    server_only: list[Any],
    patch_order: Sequence[Any],
    server_order: Sequence[Any],
    key: str,
    *,
    is_map: bool,
) -> list[Any]:
    """Order a merged list: patch order for patched items, live order for the rest, interleaved."""
    right = _sort_by(patch_items, patch_order, key, is_map)
    left = _sort_by(server_only, server_order, key, is_map)
    merged: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            merged.append(left[i])
            i += 1
        elif i >= len(left):
            merged.append(right[j])
            j += 1
        else:
            li, ri = _index(server_order, left[i], key), _index(server_order, right[j], key)
            if li >= 0 and ri >= 0 and li < ri:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                j += 1
    return merged


def _partition(
    merged: list[Any], present_in: Sequence[Any], key: str
) -> tuple[list[Any], list[Any]]:
    if key:
        _check_merge_keys(key, merged)
        wanted = {_token(p.get(key)) for p in present_in if isinstance(p, dict)}
        inside = [m for m in merged if _token(m[key]) in wanted]
        outside = [m for m in merged if _token(m[key]) not in wanted]
        return inside, outside
    wanted = {_token(p) for p in present_in}
    return (
        [m for m in merged if _token(m) in wanted],
        [m for m in merged if _token(m) not in wanted],
    )


def _merge_list(
    original: list[Any], patch: list[Any], meta: FieldMeta, *, delete_list: bool
) -> list[Any]:
    if not original and not patch:
        return list(original)
    kind = _element_kind(original, patch)
    if not _is_map_kind(kind):
        if delete_list:
            doomed = {_token(p) for p in patch}
            return [o for o in original if _token(o) not in doomed]
        seen: set[object] = set()
        merged = []
        for item in (*original, *patch):
            if _token(item) not in seen:
                seen.add(_token(item))
                merged.append(item)
        inside, outside = _partition(merged, patch, "")
        return _normalize(inside, outside, patch, original, "", is_map=False)
    key = meta.merge_key
    if not key:
        raise unclassified("cannot merge lists without merge key for type struct")
    base, changes = _special_elements(original, patch, key, meta)
    merged = list(base)
    for item in changes:
        if key not in item:
            raise _no_merge_key(item, key)
        at = next((n for n, o in enumerate(merged) if key in o and _go_eq(o[key], item[key])), None)
        if at is None:
            merged.append(_fresh(item, meta))
        else:
            merged[at] = _merge_map(merged[at], item, meta)
    inside, outside = _partition(merged, changes, key)
    return _normalize(inside, outside, changes, base, key, is_map=True)


def _special_elements(
    original: list[Any], patch: list[Any], key: str, meta: FieldMeta
) -> tuple[list[Any], list[Any]]:
    """Resolve ``$patch`` elements: deletions from the live list, or a full replacement."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        directive = item.get(_PATCH, MISSING)
        if directive is MISSING:
            plain.append(item)
        elif directive == "delete":
            if key not in item:
                raise _no_merge_key(item, key)
            for o in original:
                if not isinstance(o, dict):
                    raise unclassified(f"value for key {original.index(o)} is not a map.")
            original = [o for o in original if not (key in o and _go_eq(o[key], item[key]))]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise unclassified("merging lists cannot yet be specified in the patch")
        else:
            raise unclassified(f"unknown patch type: {go_v(directive)} in map: {go_v(item)}")
    if replace:
        return [_fresh(item, meta) for item in plain], []
    return original, plain


def _apply_set_order(
    out: dict[str, Any], patch: dict[str, Any], directive: str, order: Any, meta: FieldMeta
) -> None:
    if not isinstance(order, list):
        raise _bad_arg("[]interface {}", order)
    name = _extract_key(directive, _SET_ORDER)
    original = out.get(name, MISSING)
    changes = patch.pop(name, MISSING)
    for value in (original, changes):
        if value is not MISSING and not isinstance(value, list):
            raise _bad_arg("[]interface {}", value)
    field_meta = meta.child(name)
    key = field_meta.merge_key
    _check_set_order(changes if isinstance(changes, list) else [], order, key)
    if isinstance(original, list) and isinstance(changes, list):
        if field_meta.strategy == "merge":
            merged = _merge_list(original, changes, field_meta, delete_list=False)
        else:
            merged = _fresh(changes, field_meta)
    elif isinstance(original, list):
        merged = original
    elif isinstance(changes, list):
        merged = _fresh(changes, field_meta)
    else:
        return
    live = original if isinstance(original, list) else []
    kind = _element_kind(live, changes if isinstance(changes, list) else [])
    is_map = _is_map_kind(kind)
    if is_map and not key:
        out[name] = merged
        return
    inside, outside = _partition(merged, order, key)
    out[name] = _normalize(inside, outside, order, live, key, is_map=is_map)


def _merge_key_value(item: Any, key: str) -> Any:
    if not isinstance(item, dict):
        raise _bad_arg("map[string]interface {}", item)
    if key not in item:
        raise _no_merge_key(item, key)
    return item[key]


def _check_set_order(changes: list[Any], order: list[Any], key: str) -> None:
    """The patch list must be a subsequence of ``$setElementOrder`` (deletions aside)."""
    if not order or not changes:
        return
    kept = changes
    if key:
        for item in changes:
            if not isinstance(item, dict):
                raise _bad_arg("map[string]interface {}", item)
        kept = [c for c in changes if c.get(_PATCH) != "delete"]
    p = s = 0
    while p < len(kept) and s < len(order):
        if isinstance(kept[p], dict) and _PATCH in kept[p]:
            p += 1
            continue
        if key:
            equal = _go_eq(_merge_key_value(kept[p], key), _merge_key_value(order[s], key))
        else:
            equal = _go_eq(kept[p], order[s])
        if equal:
            p += 1
        s += 1
    if p < len(kept):
        raise unclassified(
            f"The order in patch list:\n{go_v(changes)}\n doesn't match {_SET_ORDER} list:\n"
            f"{go_v(order)}\n"
        )


def _retain_keys(out: dict[str, Any], patch: dict[str, Any]) -> None:
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise bad_request("invalid patch format of retainKeys")
    allowed = {r for r in retain if isinstance(r, str)}
    for key, value in patch.items():
        if value is None or key.startswith((_DELETE_PRIMITIVES, _SET_ORDER)):
            continue
        if key not in allowed:
            raise bad_request("invalid patch format of retainKeys")
    for key in [k for k in out if k not in allowed]:
        del out[key]


def _same_kind(left: Any, right: Any) -> bool:
    return _go_type(left) == _go_type(right)


def _merge_map(
    original: Mapping[str, Any] | None, patch: Mapping[str, Any], meta: FieldMeta
) -> dict[str, Any]:
    if _PATCH in patch:
        directive = patch[_PATCH]
        if directive == "replace":
            return _merge_map(None, {k: v for k, v in patch.items() if k != _PATCH}, meta)
        if directive == "delete":
            return {}
        raise unclassified(f"unknown patch type: {go_v(directive)} in map: {go_v(patch)}")
    out = dict(original) if original is not None else {}
    rest = dict(patch)
    if _RETAIN_KEYS in rest:
        _retain_keys(out, rest)
    for directive in [k for k in rest if k.startswith(_SET_ORDER)]:
        _apply_set_order(out, rest, directive, rest.pop(directive), meta)
    # Additions and merges first, then deletions from primitive lists: deterministic, and what
    # clients that send both (kubectl apply) expect.
    deletions = [k for k in rest if k.startswith(_DELETE_PRIMITIVES)]
    for key in [k for k in rest if not k.startswith(_DELETE_PRIMITIVES)] + deletions:
        _merge_member(out, key, rest[key], meta)
    return out


def _merge_member(out: dict[str, Any], key: str, value: Any, meta: FieldMeta) -> None:
    delete_list = key.startswith(_DELETE_PRIMITIVES)
    if delete_list:
        key = _extract_key(key, _DELETE_PRIMITIVES)
    if value is None:
        out.pop(key, None)
        return
    child = meta.child(key)
    if key not in out:
        if not delete_list:
            out[key] = _fresh(value, child)
        return
    current = out[key]
    if not _same_kind(current, value):
        out[key] = _fresh(value, child)
    elif isinstance(value, dict):
        replace = child.strategy == "replace"
        out[key] = _fresh(value, child) if replace else _merge_map(current, value, child)
    elif isinstance(value, list):
        if child.strategy == "merge":
            out[key] = _merge_list(current, value, child, delete_list=delete_list)
        else:
            out[key] = _fresh(value, child)
    else:
        out[key] = value


def apply_strategic_merge_patch(target: Mapping[str, Any], patch: Any, kind: str) -> KubeObject:
    """Apply a strategic merge patch to an object of a built-in ``kind``.

    Args:
        target: the current object.
        patch: the decoded patch document (``None`` changes nothing).
        kind: the object's kind, which selects the merge keys (see :mod:`.patchmeta`).

    Returns:
        The patched object (a new dict).

    Raises:
        PatchError: 400 for a malformed document or directive, 422 for lists of lists, 500
            (reason-less, as the real server) for other failures such as a missing merge key.
    """
    if patch is None:
        return dict(target)
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {go_type_name(patch)} into Go value of type "
            "map[string]interface {}"
        )
    return _merge_map(target, patch, meta_for_kind(kind))
