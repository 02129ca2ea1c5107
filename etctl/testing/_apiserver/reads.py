"""Reads over HTTP: ``get`` and ``list`` of a resource, in the representation the client asks for.

A ``get`` answers one object (or the ``autoscaling/v1`` Scale of a custom resource); a ``list``
answers one page of a consistent snapshot, with ``resourceVersion``, ``continue`` and
``remainingItemCount`` as the real server sets them. Either comes as JSON objects, a
``meta.k8s.io`` Table (what ``kubectl get`` asks for) or PartialObjectMetadata, chosen from
``Accept`` (:mod:`~etctl.testing._apiserver.representation`). A list refuses
``sendInitialEvents``, which only a watch takes. Objects of a custom resource converted by a
webhook are converted to the requested version (a list's in one review) before they are rendered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from etctl.runtime import Clock, KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.representation import (
    Representation,
    json_response,
    list_items,
    partial,
)
from etctl.testing._apiserver.request import RequestInfo, parse_int
from etctl.testing._apiserver.selection import parse_selection
from etctl.testing._apiserver.tables import render_table
from etctl.testing._apiserver.validation import forbidden_cause

if TYPE_CHECKING:
    from etctl.testing._apiserver.storage import Storage

__all__ = ["serve_read"]


async def serve_read(
    request: web.Request,
    storage: Storage,
    resource: ResourceInfo,
    info: RequestInfo,
    *,
    clock: Clock,
) -> web.StreamResponse:
    """Answer a ``get`` or ``list`` of ``resource`` in the representation ``Accept`` asks for."""
    query = request.rel_url.query
    representation = Representation.from_accept(request.headers.get("Accept", ""))
    api_version = resource.api_version(info.version)
    if info.verb == "get":
        if info.subresource == "scale":
            obj = storage.get_scale(resource, info.version, info.name, namespace=info.namespace)
            return json_response(obj)
        stored = storage.load(resource, info.namespace, info.name)
        obj = await storage.at_version(resource, stored, info.version)
        return json_response(
            _render(resource, info, [obj], representation, query=query, clock=clock, single=True)
        )
    selection = parse_selection(
        resource,
        namespace=info.namespace,
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
    )
    if "sendInitialEvents" in query:
        raise st.invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            [forbidden_cause("sendInitialEvents", "sendInitialEvents is forbidden for list")],
        )
    converter = storage.converts(resource)
    result = storage.list_selected(
        resource,
        # Converted objects are read at the storage version, then converted in one review.
        resource.storage_version.name if converter is not None else info.version,
        selection,
        limit=max(parse_int(query, "limit") or 0, 0),
        continue_token=query.get("continue", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
    )
    items = result.items
    if converter is not None:
        items = await converter.convert_all(resource, items, info.version)
    meta: dict[str, Any] = {"resourceVersion": result.resource_version}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining_item_count is not None:
        meta["remainingItemCount"] = result.remaining_item_count
    if representation.kind == "object":
        return json_response(
            {
                "kind": resource.list_kind,
                "apiVersion": api_version,
                "metadata": meta,
                "items": list_items(items, custom=resource.custom),
            }
        )
    return json_response(
        _render(
            resource,
            info,
            items,
            representation,
            query=query,
            clock=clock,
            list_meta=meta,
        )
    )


def _render(
    resource: ResourceInfo,
    info: RequestInfo,
    objects: list[KubeObject],
    representation: Representation,
    *,
    query: Mapping[str, str],
    clock: Clock,
    single: bool = False,
    list_meta: dict[str, Any] | None = None,
) -> Any:
    if representation.kind == "Table":
        table = render_table(
            resource,
            info.version,
            objects,
            now=clock.now(),
            include_object=query.get("includeObject", ""),
            list_meta=list_meta if list_meta is not None else _single_meta(objects[0]),
        )
        table["apiVersion"] = representation.api_version
        return table
    if representation.kind == "PartialObjectMetadata":
        if single:
            return partial(objects[0], representation.api_version)
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": representation.api_version,
            "metadata": list_meta or {},
            "items": [partial(o, representation.api_version) for o in objects],
        }
    return objects[0]  # the JSON object of a get (a list in JSON never renders)


def _single_meta(obj: KubeObject) -> dict[str, Any]:
    return {"resourceVersion": str((obj.get("metadata") or {}).get("resourceVersion") or "")}
