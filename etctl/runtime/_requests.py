"""What each client verb puts on the wire, and how answers are decoded.

Pure functions and value types, no I/O: query strings for list, watch and writes, ``DeleteOptions``
bodies, patch bodies with the retry safety each patch format allows, and JSON decoding of answers
into :data:`~etctl.runtime.KubeObject` dicts.

Invariants: a caller's object is never mutated (when ``apiVersion``/``kind`` must be filled in, a
shallow copy is sent); query values are strings (booleans spelled ``true``/``false`` as the API
server's parser expects).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from etctl.errors import TransportError
from etctl.runtime._collector import paused_collection
from etctl.runtime._exchange import HttpResponse
from etctl.runtime._objects import KubeObject, ObjectView
from etctl.runtime._resources import Resource
from etctl.runtime._retry import RetrySafety

__all__ = [
    "ObjectList",
    "PatchType",
    "PropagationPolicy",
    "decode_object",
    "delete_options",
    "flag",
    "list_page",
    "list_query",
    "patch_body",
    "typed",
    "watch_query",
    "write_query",
]

PropagationPolicy = Literal["Foreground", "Background", "Orphan"]
"""What a delete does to the object's dependents."""

QueryList = list[tuple[str, str]]

_PAUSE_ABOVE = 64 * 1024
"""Bodies longer than this are decoded with the cycle collector paused (a list page). One object's
few hundred allocations trigger at most a young-generation collection, cheaper than the pause."""


class PatchType(enum.Enum):
    """The patch formats the API server accepts, as their content types."""

    MERGE = "application/merge-patch+json"
    """RFC 7386 JSON merge patch: a partial object; ``null`` deletes a field; lists are replaced."""
    JSON = "application/json-patch+json"
    """RFC 6902 JSON patch: a list of operations (a leading ``test`` op makes it conditional)."""
    STRATEGIC = "application/strategic-merge-patch+json"
    """Strategic merge patch: lists merged by key (built-in kinds only; CRs answer 415)."""
    APPLY = "application/apply-patch+yaml"
    """Server-side apply: the fields this field manager owns (JSON is valid YAML)."""


@dataclass(frozen=True, slots=True)
class ObjectList:
    """The result of a list: the objects and the resourceVersion to watch from.

    Attributes:
        items: the objects (each with ``apiVersion`` and ``kind`` filled in).
        resource_version: the list's ``metadata.resourceVersion``.
        continue_token: for one page of a paged list, the token of the next page ("" at the end).
    """

    items: list[KubeObject]
    resource_version: str
    continue_token: str = ""


def flag(value: bool) -> str:
    """A boolean as the API server's query parser spells it."""
    return "true" if value else "false"


def decode_object(raw: HttpResponse) -> KubeObject:
    """The JSON object in a 2xx answer (an empty body decodes to ``{}``).

    Raises:
        TransportError: the body is not a JSON object (the server broke the protocol).
    """
    body = raw.body
    try:
        if len(body) > _PAUSE_ABOVE:
            with paused_collection():  # a large body is one allocation burst with no cycles
                value = orjson.loads(body)
        else:
            value = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError as exc:
        msg = f"the API server sent an undecodable body: {raw.body[:200]!r}"
        raise TransportError(msg) from exc
    if not isinstance(value, dict):
        msg = f"the API server sent {type(value).__name__} where an object was expected"
        raise TransportError(msg)
    return value


def list_page(res: Resource, body: KubeObject) -> ObjectList:
    """One decoded page of a list; items get the ``apiVersion``/``kind`` lists leave out."""
    metadata = body.get("metadata") or {}
    items = body.get("items") or []
    for item in items:
        if "kind" not in item:
            item["apiVersion"] = res.api_version
            item["kind"] = res.kind
    return ObjectList(
        items, str(metadata.get("resourceVersion") or ""), str(metadata.get("continue") or "")
    )


def typed(res: Resource, obj: ObjectView) -> KubeObject:
    """``obj`` as a dict carrying ``apiVersion`` and ``kind`` (a shallow copy when filled in)."""
    if isinstance(obj, dict) and "apiVersion" in obj and "kind" in obj:
        return obj
    return {"apiVersion": res.api_version, "kind": res.kind, **obj}


def _selectors(label_selector: str | None, field_selector: str | None) -> QueryList:
    query: QueryList = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


def list_query(
    *,
    label_selector: str | None,
    field_selector: str | None,
    limit: int | None,
    resource_version: str | None,
    continue_token: str,
) -> QueryList:
    """The query of one list page; a continued page carries the token and no resourceVersion."""
    query = _selectors(label_selector, field_selector)
    if limit:
        query.append(("limit", str(limit)))
    if continue_token:
        query.append(("continue", continue_token))
    elif resource_version is not None:
        query.append(("resourceVersion", resource_version))
    return query


def watch_query(
    *,
    label_selector: str | None,
    field_selector: str | None,
    resource_version: str | None,
    timeout_seconds: int | None,
    allow_bookmarks: bool,
    send_initial_events: bool | None,
) -> QueryList:
    """The query of a watch; ``send_initial_events`` brings the settings the API requires."""
    query: QueryList = [("watch", "true"), *_selectors(label_selector, field_selector)]
    if resource_version is not None:
        query.append(("resourceVersion", resource_version))
    if timeout_seconds is not None:
        query.append(("timeoutSeconds", str(timeout_seconds)))
    if allow_bookmarks or send_initial_events:
        query.append(("allowWatchBookmarks", "true"))
    if send_initial_events is not None:
        query.append(("sendInitialEvents", flag(send_initial_events)))
        if send_initial_events:
            query.append(("resourceVersionMatch", "NotOlderThan"))
    return query


def write_query(
    *, dry_run: bool, field_manager: str | None, force: bool | None = None
) -> QueryList:
    """The query of a create, replace or patch."""
    query: QueryList = []
    if dry_run:
        query.append(("dryRun", "All"))
    if field_manager:
        query.append(("fieldManager", field_manager))
    if force is not None:
        query.append(("force", flag(force)))
    return query


def delete_options(
    *,
    propagation_policy: PropagationPolicy | None,
    grace_period_seconds: int | None,
    preconditions: Mapping[str, str] | None,
    dry_run: bool,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> tuple[QueryList, KubeObject]:
    """The query and ``DeleteOptions`` body of a delete or delete-collection."""
    body: KubeObject = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        body["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        body["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        body["preconditions"] = dict(preconditions)
    if dry_run:
        body["dryRun"] = ["All"]
    return _selectors(label_selector, field_selector), body


def patch_body(
    res: Resource,
    patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    patch_type: PatchType,
) -> tuple[Any, RetrySafety]:
    """The body of a patch and how safely it may be retried.

    Merge, strategic-merge and apply patches are idempotent (applying one twice is applying it
    once); a JSON patch is only when its first operation is a ``test`` (a repeat after a lost
    success then fails the test instead of, say, appending an element twice). An apply body gets
    ``apiVersion`` and ``kind``, which the server requires.

    Raises:
        TypeError: a JSON patch that is not a list, or another patch that is not an object.
    """
    if patch_type is PatchType.JSON:
        if isinstance(patch, Mapping) or not isinstance(patch, Sequence):
            msg = "a JSON patch is a list of operations"
            raise TypeError(msg)
        guarded = bool(patch) and patch[0].get("op") == "test"
        return [dict(op) for op in patch], (
            RetrySafety.IDEMPOTENT if guarded else RetrySafety.UNSENT
        )
    if not isinstance(patch, Mapping):
        msg = f"a {patch_type.name.lower()} patch is an object"
        raise TypeError(msg)
    body = typed(res, patch) if patch_type is PatchType.APPLY else patch
    return body, RetrySafety.IDEMPOTENT
