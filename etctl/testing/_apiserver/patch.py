"""The three PATCH bodies kube-apiserver accepts besides apply: merge, JSON and strategic merge.

- :func:`apply_merge_patch`: RFC 7386, as ``evanphx/json-patch`` (v4) implements it for
  ``application/merge-patch+json``: ``null`` deletes, objects merge, everything else replaces;
  nulls inside newly added objects are dropped.
- :func:`apply_json_patch`: RFC 6902 (``application/json-patch+json``) with that library's
  behaviour where it departs from the RFC (``replace`` of a missing object member adds it,
  negative array indices count from the end for ``add`` and ``remove``, a path is split on every
  ``/`` and its first segment ignored).
- :func:`apply_strategic_merge_patch`: ``k8s.io/apimachinery/pkg/util/strategicpatch`` applied
  server side, with the merge keys and strategies of :mod:`.patchmeta`, the ``$patch``,
  ``$retainKeys``, ``$deleteFromPrimitiveList/`` and ``$setElementOrder/`` directives and the
  same list ordering rules. Fields the table does not know merge like a merge patch (lists
  replaced), except that directives are still honoured.

Invariants: inputs are never mutated; results are new containers along every changed path and
share unchanged subtrees with the input (and with the patch). Every failure raises
:class:`PatchError` carrying the HTTP status, reason and message kube-apiserver answers with:
400 BadRequest for a malformed patch document, 422 Invalid for a JSON patch that does not apply
(whose real message is generic; ``detail`` keeps the library's explanation), 413 for too many
operations, and a reason-less 500 for the strategic merge failures the real server does not
classify (a missing merge key, say).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl._apimachinery.gofmt import go_json, go_quote
from etctl.runtime import KubeObject
from etctl.testing._apiserver._jsonpatch import MAX_JSON_PATCH_OPERATIONS, apply_json_patch
from etctl.testing._apiserver._patcherror import PatchError, bad_request
from etctl.testing._apiserver._strategic import apply_strategic_merge_patch

__all__ = [
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchError",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
]


def _prune_nulls(value: Any) -> Any:
    """Drop null members from objects, recursively (also inside arrays); share what is clean."""
    if isinstance(value, dict):
        if all(v is not None and not isinstance(v, dict | list) for v in value.values()):
            return value
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if not any(isinstance(v, dict | list) for v in value):
            return value
        return [_prune_nulls(v) for v in value]
    return value


def _merge_docs(current: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(current)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
            continue
        existing = current.get(key)
        if isinstance(existing, dict):
            # An object merges with an object; any other patch value replaces it unpruned.
            out[key] = _merge_docs(existing, value) if isinstance(value, dict) else value
        else:
            out[key] = _prune_nulls(value)
    return out


def apply_merge_patch(target: Mapping[str, Any], patch: Any) -> KubeObject:
    """Apply an RFC 7386 JSON merge patch to ``target``.

    Args:
        target: the current object.
        patch: the decoded patch document.

    Returns:
        The patched object (a new dict).

    Raises:
        PatchError: 400 when the patch is not an object or array, 422 when it is an array
            (the result would not be an object).
    """
    if isinstance(patch, dict):
        return _merge_docs(target, patch)
    if isinstance(patch, list):
        rendered = go_json(_prune_nulls(patch))
        cause = (
            f"Invalid value: {go_quote(rendered)}: couldn't get version/kind; json parse error: "
            "json: cannot unmarshal array into Go value of type struct { APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
        )
        raise PatchError(
            f' "" is invalid: patch: {cause}',
            status=422,
            reason="Invalid",
            causes=[{"reason": "FieldValueInvalid", "message": cause, "field": "patch"}],
        )
    raise bad_request("Invalid JSON Patch")
