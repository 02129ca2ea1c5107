"""PATCH: the four patch types, applied to the stored object and written like an update.

JSON patch, merge patch and strategic merge patch (built-in kinds only: custom resources answer
415 as the real server does) are applied to the current object read at the request's version,
or to its Scale for ``/scale``; the result then goes through the update path (so defaults,
validation, generation and no-op detection all apply). A resourceVersion the patch sets is a
precondition; one it leaves alone is the current one, so a patch never conflicts by itself.

Server-side apply (``application/apply-patch+yaml``) merges the applied configuration with the
live object through the field-manager logic, creates the object when it does not exist (201),
and answers ownership conflicts with 409 naming each conflicting manager and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from etctl.errors import Conflict, api_error_from_status
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver._fieldpath import path_string
from etctl.testing._apiserver._ssamerge import field_set, root_shape
from etctl.testing._apiserver.apply import ApplyConflict, server_side_apply
from etctl.testing._apiserver.patch import (
    PatchError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.state import ServerState
from etctl.testing._apiserver.validation import forbidden_cause, required_cause
from etctl.testing._apiserver.writeoptions import WriteOptions
from etctl.testing._apiserver.writes import Superseded, create_object, get_scale, write_patched

__all__ = [
    "APPLY",
    "JSON_PATCH",
    "MERGE_PATCH",
    "PATCH_TYPES",
    "STRATEGIC_MERGE_PATCH",
    "decode_patch",
    "patch_object",
]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_ATTEMPTS = 5
"""How often a patch is applied again to an object that changed while admission looked at it."""


def accepted_types(info: ResourceInfo) -> list[str]:
    """The patch media types ``info`` accepts, in the order the 415 message lists them."""
    if info.strategic_merge:
        return [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY]
    return [JSON_PATCH, MERGE_PATCH, APPLY]


def decode_patch(body: bytes, patch_type: str) -> Any:
    """Parse a patch body (JSON, or YAML for apply).

    Raises:
        etctl.errors.BadRequest: the body does not parse.
    """
    try:
        if patch_type == APPLY:
            return yaml.safe_load(body.decode() or "{}")
        return json.loads(body or b"null")
    except (ValueError, yaml.YAMLError) as exc:
        raise st.bad_request(f"error decoding patch: {exc}") from exc


def _patch_error(error: PatchError) -> Exception:
    body: dict[str, Any] = {"message": error.message, "reason": error.reason}
    if error.causes:
        body["details"] = {"causes": list(error.causes)}
    return api_error_from_status(error.status, body)


def _apply_conflict(error: ApplyConflict) -> Exception:
    causes = [
        {"reason": "FieldManagerConflict", "message": cause["message"], "field": cause["field"]}
        for cause in error.causes
    ]
    return Conflict(error.message, reason="Conflict", details={"causes": causes})


def _upgradable(
    error: ApplyConflict,
    live: Mapping[str, Any] | None,
    manager: str,
    kind: str,
    schema: Mapping[str, Any] | None,
) -> ApplyConflict | None:
    """The conflicts left once kubectl's client-side apply fields are allowed (None: none left).

    As kube-apiserver's last-applied manager does: when ``kubectl`` moves an object from
    client-side to server-side apply, conflicts on fields its last-applied-configuration
    annotation lists are not conflicts; the apply then takes those fields over.
    """
    annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED) if manager == "kubectl" else None
    try:
        last = json.loads(text) if text else None
    except ValueError:
        last = None
    if not isinstance(last, dict):
        return error
    paths: set[Any] = set()
    field_set(last, root_shape(kind, schema), (), paths)
    allowed = {path_string(p) for p in paths}
    shown = [str(c["message"]).removeprefix("conflict with ") for c in error.causes]
    left = [(c, s) for c, s in zip(error.conflicts, shown, strict=True) if c[1] not in allowed]
    if not left:
        return None
    return ApplyConflict([c for c, _ in left], shown=[s for _, s in left])


def _own_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with its top level and ``metadata`` copied; nested values stay shared.

    Enough before the write decodes (deep-copies) the result: until then only top-level
    ``metadata`` fields are set or removed.
    """
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = dict(meta)
    return out


def _schema(info: ResourceInfo, version: str) -> Mapping[str, Any] | None:
    served = info.version(version)
    return served.schema if served is not None and served.schema else None


def _check_options(patch_type: str, options: WriteOptions, force: bool) -> None:
    causes = []
    if patch_type == APPLY and not options.field_manager:
        causes.append(required_cause("fieldManager", "is required for apply patch"))
    if force and patch_type != APPLY:
        causes.append(forbidden_cause("force", "may not be specified for non-apply patch"))
    if causes:
        raise st.invalid("meta.k8s.io", "PatchOptions", "", causes)


async def patch_object(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    patch: Any,
    *,
    patch_type: str,
    namespace: str = "",
    subresource: str = "",
    options: WriteOptions,
    force: bool = False,
) -> tuple[KubeObject, bool]:
    """Apply one patch; returns the resulting object and whether it was created (apply only).

    A patch that sets no resourceVersion is applied again to the current object when that
    changed while admission looked at the result, as the real server's update loop does.

    Raises:
        etctl.errors.UnsupportedMediaType: the patch type is not accepted for ``info``.
        etctl.errors.NotFound: the object does not exist (patch types other than apply).
    """
    if patch_type not in accepted_types(info):
        raise st.unsupported_media_type(accepted_types(info))
    _check_options(patch_type, options, force)
    attempt = 1
    while True:
        try:
            return await _patch_once(
                state,
                info,
                version,
                name,
                patch,
                patch_type=patch_type,
                namespace=namespace,
                subresource=subresource,
                options=options,
                force=force,
            )
        except Superseded:
            if attempt >= _ATTEMPTS:
                raise
            attempt += 1
            options.applying = False


async def _patch_once(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    patch: Any,
    *,
    patch_type: str,
    namespace: str,
    subresource: str,
    options: WriteOptions,
    force: bool,
) -> tuple[KubeObject, bool]:
    key_ns = namespace if info.namespaced else ""
    existing = state.lookup(info, key_ns, name)
    if existing is not None and state.converts(info) is not None and subresource != "scale":
        existing = await state.at_version(info, existing, version)
    if patch_type == APPLY:
        result = _applied(state, info, version, patch, live=existing, options=options, force=force)
        if existing is None:
            if subresource:
                raise st.not_found(info.group, info.plural, name)
            created = await _create_applied(
                state, info, version, name, result, namespace=namespace, options=options
            )
            return created, True
    elif existing is None:
        raise st.not_found(info.group, info.plural, name)
    else:
        result = _patched(
            state,
            info,
            version,
            name,
            patch,
            patch_type=patch_type,
            existing=existing,
            namespace=namespace,
            subresource=subresource,
        )
    # Without a resourceVersion of its own, the result is checked against the object it was
    # computed from: a patch is never an unconditional update in disguise.
    meta = result.get("metadata")
    own_version = isinstance(meta, dict) and bool(meta.get("resourceVersion"))
    if isinstance(meta, dict) and not own_version:
        meta["resourceVersion"] = (existing.get("metadata") or {}).get("resourceVersion")
    try:
        written = await write_patched(
            state,
            info,
            version,
            name,
            existing=existing,
            patched=result,
            namespace=namespace,
            subresource=subresource,
            options=options,
        )
    except Superseded as changed:
        if own_version:  # the client's precondition: its conflict to resolve
            raise st.stale_conflict(info.group, info.plural, name) from changed
        raise
    return written, False


def _patched(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    patch: Any,
    *,
    patch_type: str,
    existing: KubeObject,
    namespace: str,
    subresource: str,
) -> dict[str, Any]:
    """A JSON, merge or strategic merge patch applied to the object (or its Scale).

    The top level and ``metadata`` are the caller's to edit; nested values may be shared.
    """
    if subresource == "scale":
        base: KubeObject = get_scale(state, info, version, name, namespace=namespace)
    else:
        base = with_api_version(existing, info.api_version(version))
    try:
        if patch_type == JSON_PATCH:
            patched = apply_json_patch(base, patch)
        elif patch_type == MERGE_PATCH:
            patched = apply_merge_patch(base, patch)
        else:
            patched = apply_strategic_merge_patch(base, patch, info.kind)
    except PatchError as error:
        raise _patch_error(error) from error
    if not isinstance(patched, Mapping):
        raise st.bad_request("the patched object is not a JSON object")
    return _own_metadata(patched)


def _applied(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    applied: Any,
    *,
    live: KubeObject | None,
    options: WriteOptions,
    force: bool,
) -> dict[str, Any]:
    """Server-side apply of ``applied`` onto the live object (None: nothing yet).

    The top level and ``metadata`` of the result are the caller's to edit.

    A conflict that only the upgrade of a client-side-applied object causes is forced through,
    as the real server does; any other conflict is refused unless ``force`` is set.
    """
    if not isinstance(applied, Mapping):
        raise st.bad_request("the applied configuration is not an object")
    if live is not None:
        live = with_api_version(live, info.api_version(version))
    schema = _schema(info, version)

    def apply(forced: bool) -> KubeObject:
        return server_side_apply(
            live,
            dict(applied),
            manager=options.field_manager,
            force=forced,
            kind=info.kind,
            now=state.now(),
            schema=schema,
        )

    try:
        try:
            merged = apply(force)
        except ApplyConflict as error:
            remaining = _upgradable(error, live, options.field_manager, info.kind, schema)
            if remaining is not None:
                raise remaining from error
            merged = apply(True)
    except ApplyConflict as error:
        raise _apply_conflict(error) from error
    except PatchError as error:
        raise _patch_error(error) from error
    result = _own_metadata(merged)
    result.setdefault("metadata", {})
    options.applying = True
    return result


async def _create_applied(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    result: dict[str, Any],
    *,
    namespace: str,
    options: WriteOptions,
) -> KubeObject:
    """Create the object an apply describes (its name must be the URL's)."""
    meta = result["metadata"]
    if str(meta.get("name") or "") != name:
        got = meta.get("name") or ""
        raise st.bad_request(
            f"the name of the object ({got}) does not match the name on the URL ({name})"
        )
    meta.pop("resourceVersion", None)
    return await create_object(state, info, version, result, namespace=namespace, options=options)
