"""The write verbs over HTTP: decoding bodies and options, and answering as the real server does.

Create answers 201, update 200, patch 200 (201 when server-side apply created the object),
delete 200 with the object or, for kinds that do not return it once removed, a ``Success``
Status (202 while a deletion with ``orphanDependents=false`` is pending), deletecollection a list
of what it deleted. Bodies are JSON, YAML or (built-in kinds) protobuf; options come from the
query (and, for deletes, from a ``DeleteOptions`` body). As kube-apiserver does, a handler reads
at most the server's ``max_request_body_bytes`` of a body (before it looks at the write's options)
and answers a longer one with 413 RequestEntityTooLarge.

Built-in kinds may also come as protobuf (``application/vnd.kubernetes.protobuf``: kubectl's typed
commands send it and do not fall back to JSON); ``protobody`` decodes them into the dict their JSON
would be, so every later step is the JSON path's. Answers stay JSON, which those clients accept.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

import yaml
from aiohttp import web

from etctl.testing._apiserver import patching, protobody, protowire, removal, writes
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.admissionrequest import Admission
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.limits import (
    BODY_LIMIT,
    MAX_REQUEST_BODY_BYTES,
    request_entity_too_large,
)
from etctl.testing._apiserver.patching import accepted_types, decode_patch
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.representation import (
    JSON,
    json_response,
    list_items,
    query_values,
    warning_headers,
)
from etctl.testing._apiserver.request import RequestInfo, parse_bool, parse_int, parse_optional_bool
from etctl.testing._apiserver.selection import parse_selection
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.validation import required_cause
from etctl.testing._apiserver.writeoptions import WriteOptions

__all__ = [
    "create",
    "delete",
    "delete_collection",
    "delete_options",
    "keep_body",
    "patch",
    "read_body",
    "read_raw",
    "update",
    "write_options",
]


# The body of the request being served, once read (a fault looked into it): a body is a stream,
# read once. Set (or cleared) by the HTTP layer as each request starts (keep_body).
_RAW_BODY: ContextVar[bytes | None] = ContextVar("etctl_raw_body", default=None)


async def keep_body(request: web.Request, *, read: bool) -> bytes:
    """Start serving ``request``: its body, read now and kept for the verb (``read``), or b""."""
    _RAW_BODY.set(None)
    return await read_raw(request) if read else b""


async def read_raw(request: web.Request) -> bytes:
    """The request body, read up to the server's body limit.

    Raises:
        etctl.errors.RequestEntityTooLarge: the body is longer than the limit.
    """
    cached = _RAW_BODY.get()
    if cached is not None:
        return cached
    limit = request.app.get(BODY_LIMIT, MAX_REQUEST_BODY_BYTES)
    declared = request.content_length
    if declared is not None and declared > limit:
        raise request_entity_too_large(limit)
    try:
        await request.content.readexactly(limit + 1)
    except asyncio.IncompleteReadError as short:
        _RAW_BODY.set(short.partial)
        return short.partial
    raise request_entity_too_large(limit)


async def read_body(request: web.Request) -> Any:
    """The decoded request body (JSON, YAML or protobuf), read up to the server's body limit.

    Raises:
        etctl.errors.BadRequest: the body does not parse, or is protobuf of a kind without a
            descriptor (custom resources, kinds the server does not serve).
        etctl.errors.RequestEntityTooLarge: the body is longer than the limit.
        etctl.errors.UnsupportedMediaType: neither JSON, YAML nor protobuf.
    """
    media = request.content_type or JSON
    known = (
        JSON,
        "application/yaml",
        protowire.MEDIA_TYPE,
        "application/octet-stream",
        "text/plain",
    )
    if media not in known:
        raise st.unsupported_media_type([JSON, "application/yaml", protowire.MEDIA_TYPE])
    raw = await read_raw(request)
    if media == protowire.MEDIA_TYPE:
        try:
            return protobody.decode(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise st.bad_request(f"the protobuf body does not decode: {exc}") from exc
    if media == "application/yaml":
        try:
            return yaml.safe_load(raw.decode() or "null")
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise st.bad_request(f"error converting YAML to JSON: {exc}") from exc
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise st.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc


def _dry_run_causes(values: list[str]) -> list[st.Cause]:
    return [
        st.Cause(
            "FieldValueNotSupported",
            "dryRun",
            f'Unsupported value: "{value}": supported values: "All"',
        )
        for value in values
        if value != "All"
    ]


def write_options(
    request: web.Request, kind: str, admission: Admission | None = None
) -> WriteOptions:
    """The options of a write from its query (``kind`` names them in a 422: ``CreateOptions``)."""
    query = request.rel_url.query
    dry_run = query_values(query, "dryRun")
    causes = _dry_run_causes(dry_run)
    validation = query.get("fieldValidation", "")
    if validation not in ("", "Ignore", "Warn", "Strict"):
        causes.append(
            st.Cause(
                "FieldValueNotSupported",
                "fieldValidation",
                f'Unsupported value: "{validation}": supported values: "Ignore", "Warn", "Strict"',
            )
        )
    manager = query.get("fieldManager", "")
    if len(manager) > 128:
        causes.append(
            st.Cause(
                "FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes"
            )
        )
    if causes:
        raise st.invalid("meta.k8s.io", kind, "", causes)
    return WriteOptions(
        dry_run=bool(dry_run),
        field_manager=manager,
        field_validation=validation,
        user_agent=request.headers.get("User-Agent", ""),
        admission=admission,
    )


async def create(
    storage: Storage,
    request: web.Request,
    resource: ResourceInfo,
    info: RequestInfo,
    admission: Admission | None = None,
) -> web.StreamResponse:
    """POST: create (or bind a pod)."""
    body = await read_body(request)
    options = write_options(request, "CreateOptions", admission)
    if info.subresource == "binding":
        return _bind(storage, resource, info, body, options)
    if info.name:
        raise st.method_not_allowed()
    obj = await writes.create_object(
        storage, resource, info.version, body, namespace=info.namespace, options=options
    )
    return json_response(obj, 201, warning_headers(options.warnings))


def _bind(
    storage: Storage, resource: ResourceInfo, info: RequestInfo, body: Any, options: WriteOptions
) -> web.StreamResponse:
    if not isinstance(body, Mapping):
        raise st.bad_request("the body of the request was not a JSON object")
    target = body.get("target") or {}
    meta = body.get("metadata") or {}
    causes = []
    if not target.get("name"):
        causes.append(required_cause("target.name"))
    if target.get("kind") not in (None, "", "Node"):
        causes.append(
            st.Cause(
                "FieldValueNotSupported",
                "target.kind",
                f'Unsupported value: "{target.get("kind")}": supported values: "Node"',
            )
        )
    if causes:
        raise st.invalid("", "Binding", str(meta.get("name") or info.name), causes)
    storage.bind(
        info.name,
        str(target["name"]),
        namespace=info.namespace,
        uid=meta.get("uid"),
        annotations=meta.get("annotations"),
        dry_run=options.dry_run,
    )
    return json_response(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        },
        201,
    )


async def update(
    storage: Storage,
    request: web.Request,
    resource: ResourceInfo,
    info: RequestInfo,
    admission: Admission | None = None,
) -> web.StreamResponse:
    """PUT: replace an object or a subresource."""
    body = await read_body(request)
    options = write_options(request, "UpdateOptions", admission)
    obj = await writes.update_object(
        storage,
        resource,
        info.version,
        info.name,
        body,
        namespace=info.namespace,
        subresource=info.subresource,
        options=options,
    )
    return json_response(obj, 200, warning_headers(options.warnings))


async def patch(
    storage: Storage,
    request: web.Request,
    resource: ResourceInfo,
    info: RequestInfo,
    admission: Admission | None = None,
) -> web.StreamResponse:
    """PATCH: the four patch types."""
    query = request.rel_url.query
    patch_type = request.content_type
    if patch_type not in accepted_types(resource):
        raise st.unsupported_media_type(accepted_types(resource))
    raw = await read_raw(request)
    options = write_options(request, "PatchOptions", admission)
    patch = decode_patch(raw, patch_type)
    obj, created = await patching.patch_object(
        storage,
        resource,
        info.version,
        info.name,
        patch,
        patch_type=patch_type,
        namespace=info.namespace,
        subresource=info.subresource,
        options=options,
        force=parse_bool(query, "force"),
    )
    return json_response(obj, 201 if created else 200, warning_headers(options.warnings))


async def delete_options(request: web.Request, admission: Admission | None = None) -> DeleteOptions:
    """The ``DeleteOptions`` of a request, from its body and query."""
    query = request.rel_url.query
    body: Any = {}
    if request.can_read_body:
        body = await read_body(request) or {}
    if not isinstance(body, Mapping):
        raise st.bad_request("the body of the request was not a DeleteOptions object")
    preconditions = body.get("preconditions") or {}
    grace = body.get("gracePeriodSeconds")
    if grace is None:
        grace = parse_int(query, "gracePeriodSeconds")
    dry_run = body.get("dryRun") or query_values(query, "dryRun")
    causes = _dry_run_causes(list(dry_run))
    if causes:
        raise st.invalid("meta.k8s.io", "DeleteOptions", "", causes)
    orphan = body.get("orphanDependents")
    if orphan is None:
        orphan = parse_optional_bool(query, "orphanDependents")
    return DeleteOptions(
        grace_period_seconds=grace,
        propagation_policy=body.get("propagationPolicy") or query.get("propagationPolicy") or None,
        orphan_dependents=orphan,
        uid=preconditions.get("uid"),
        resource_version=preconditions.get("resourceVersion"),
        dry_run=bool(dry_run),
        admission=admission,
    )


async def delete(
    storage: Storage,
    request: web.Request,
    resource: ResourceInfo,
    info: RequestInfo,
    admission: Admission | None = None,
) -> web.StreamResponse:
    """DELETE on one object."""
    options = await delete_options(request, admission)
    obj, removed = await removal.delete_object(
        storage,
        resource,
        info.name,
        namespace=info.namespace,
        options=options,
        version=info.version,
    )
    api_version = resource.api_version(info.version)
    obj = with_api_version(obj, api_version)
    status = 202 if not removed and options.orphan_dependents is False else 200
    if removed and not resource.return_deleted_object:
        meta = obj.get("metadata") or {}
        return json_response(
            st.success_status(
                group=resource.group,
                plural=resource.plural,
                name=info.name,
                uid=str(meta.get("uid") or ""),
            ),
            status,
        )
    return json_response(obj, status)


async def delete_collection(
    storage: Storage,
    request: web.Request,
    resource: ResourceInfo,
    info: RequestInfo,
    admission: Admission | None = None,
) -> web.StreamResponse:
    """DELETE on a collection (with selectors)."""
    query = request.rel_url.query
    options = await delete_options(request, admission)
    selection = parse_selection(
        resource,
        namespace=info.namespace,
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
    )
    items = await removal.delete_collection(
        storage, resource, info.version, selection, options=options
    )
    api_version = resource.api_version(info.version)
    return json_response(
        {
            "kind": resource.list_kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": str(storage.store.rv)},
            "items": list_items(items, custom=resource.custom),
        }
    )
