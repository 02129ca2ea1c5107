"""Writes: create, update and the update tail shared with patch, as the real registry runs them.

Each function takes the :class:`~etctl.testing._apiserver.state.ServerState` it works on. A body is
first *decoded* (copied, its ``apiVersion``/``kind`` checked, and, for custom resources, pruned
and defaulted by the version's schema), then admitted (the namespace must exist, and must not be
terminating for a create), shaped (a ``status`` write takes only the status; a main-resource
write keeps the stored status), defaulted and prepared by the kind's strategy, validated, and
committed. An update that changes nothing commits nothing; an update that removes the last
finalizer of an object being deleted removes the object.

Admission (:mod:`~etctl.testing._apiserver.admissionrequest`) runs where kube-apiserver runs it:
mutating admission on the decoded, defaulted object (with the manager's fields recorded), before
the strategy prepares and validates it; validating admission on the object about to be stored.
Admission may wait on webhooks while other writes commit, so what it was shown is checked again
before the commit: a create whose name was taken meanwhile is a 409 AlreadyExists, an update whose
object changed meanwhile a 409 Conflict (:class:`Superseded`, which a patch retries).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.errors import Conflict
from etctl.runtime import KubeObject
from etctl.testing._apiserver import admission
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.admissionrequest import (
    CREATE,
    UPDATE,
    Admission,
    AdmissionAttributes,
)
from etctl.testing._apiserver.apply import record_update
from etctl.testing._apiserver.custom import CustomResourceStrategy
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.scale import from_scale, to_scale
from etctl.testing._apiserver.state import ServerState
from etctl.testing._apiserver.store import metadata, parse_resource_version
from etctl.testing._apiserver.strategy import WriteContext, spec_equal
from etctl.testing._apiserver.validation import validate_object_meta, validate_object_meta_update
from etctl.testing._apiserver.writeoptions import WriteOptions

__all__ = [
    "Superseded",
    "create_object",
    "get_scale",
    "update_existing",
    "update_object",
    "write_patched",
]

_GENERATE_ATTEMPTS = 8


def _empties_finalizers(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """An update that removes the last finalizer of an object being deleted deletes it."""
    new_meta, old_meta = metadata(new), metadata(old)
    if new_meta.get("finalizers") or not old_meta.get("finalizers"):
        return False
    return (
        bool(new_meta.get("deletionTimestamp")) and new_meta.get("deletionGracePeriodSeconds") == 0
    )


class Superseded(Conflict):
    """The object changed while admission looked at an update of it (a 409 Conflict)."""


def _options_document(kind: str, options: WriteOptions) -> dict[str, Any]:
    """The request's options as an AdmissionReview's ``options`` carries them."""
    out: dict[str, Any] = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if options.dry_run:
        out["dryRun"] = ["All"]
    if options.field_manager:
        out["fieldManager"] = options.field_manager
    if options.field_validation:
        out["fieldValidation"] = options.field_validation
    return out


async def create_object(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    body: Mapping[str, Any],
    *,
    namespace: str = "",
    options: WriteOptions | None = None,
) -> KubeObject:
    """Create an object of an already resolved resource (POST); returns the stored object."""
    opts = options or WriteOptions()
    obj = admission.decode(info, version, body, opts)
    meta = metadata(obj)
    if info.namespaced and not namespace:
        namespace = str(meta.get("namespace") or "")
    admission.ensure_namespace(meta, namespace if info.namespaced else "")
    admission.admit_namespace(
        state.store, info, namespace, str(meta.get("name") or ""), creating=True
    )
    admission.admit_custom_create(state.store, info)
    if meta.get("resourceVersion"):
        raise st.internal_error("resourceVersion should not be set on objects to be created")
    ctx = WriteContext(now=state.now(), version=version, dry_run=opts.dry_run)
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(key, None)
    strategy = info.strategy
    strategy.defaults(obj)
    if not opts.applying:
        obj = _record_manager(info, version, {}, obj, options=opts, now=ctx.now)
        meta = metadata(obj)
    attributes = AdmissionAttributes(
        CREATE,
        info,
        version,
        "",
        str(meta.get("name") or ""),
        namespace if info.namespaced else "",
        obj,
        None,
        opts.dry_run,
        _options_document("CreateOptions", opts),
    )
    obj = await _mutate_new(opts, attributes)
    meta = metadata(obj)
    strategy.prepare_create(obj, ctx)
    if info.has_status(version):
        strategy.reset_status(obj, ctx)
    meta["uid"] = state.new_uid()
    meta["creationTimestamp"] = ctx.now
    if info.has_generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    generate = not meta.get("name") and bool(meta.get("generateName"))
    if generate:
        meta["name"] = state.generate_name(str(meta["generateName"]))
    causes = validate_object_meta(meta, namespaced=info.namespaced, rule=info.name_rule)
    causes += strategy.validate_create(obj, ctx)
    if causes:
        raise st.invalid(info.group, info.kind, str(meta.get("name") or ""), causes)
    key = state.key(info, namespace, str(meta["name"]))
    if state.store.get(info.key, key) is not None:
        if not generate:
            raise st.already_exists(info.group, info.plural, str(meta["name"]))
        key = _retry_generated(state, info, namespace, meta)
    attributes.object, attributes.name = obj, str(meta["name"])
    await _validate_new(state, key, opts, attributes)
    obj = await _stored_form(state, info, obj)
    if opts.dry_run:
        return await state.at_version(info, obj, version)
    event = state.store.commit(info.key, key, obj)
    assert event is not None
    return await state.at_version(info, event.object, version)


async def _converted(
    state: ServerState, info: ResourceInfo, obj: KubeObject, version: str
) -> KubeObject:
    """``obj`` converted to ``version`` when a webhook converts ``info`` (else as it is)."""
    if state.converts(info) is None:
        return obj
    if version == info.storage_version.name:
        return await _stored_form(state, info, obj)
    return await state.at_version(info, obj, version)


async def _stored_form(state: ServerState, info: ResourceInfo, obj: KubeObject) -> KubeObject:
    """``obj`` at the storage version: relabelled, or converted by the CRD's webhook.

    A converted object is pruned and defaulted by the storage version's schema.
    """
    storage = info.storage_version.name
    converter = state.converts(info)
    if converter is not None and obj.get("apiVersion") != info.api_version(storage):
        obj = dict(await converter.convert(info, obj, storage))
        if isinstance(info.strategy, CustomResourceStrategy):
            info.strategy.apply_schema(obj, storage)
    obj["apiVersion"] = info.api_version(storage)
    obj["kind"] = info.kind
    return obj


async def _mutate_new(opts: WriteOptions, attributes: AdmissionAttributes) -> KubeObject:
    """The new object as mutating admission leaves it (server-owned fields cleared again)."""
    assert attributes.object is not None
    if opts.admission is None:
        return attributes.object
    mutated = await opts.admission.mutate(attributes)
    if mutated is None:
        return attributes.object
    meta = metadata(mutated)
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(key, None)
    return mutated


async def _validate_new(
    state: ServerState, key: str, opts: WriteOptions, attributes: AdmissionAttributes
) -> None:
    """Validating admission of a create; the name must still be free afterwards."""
    if opts.admission is None:
        return
    await opts.admission.validate(attributes)
    info = attributes.info
    if state.store.get(info.key, key) is not None:  # taken while admission waited
        raise st.already_exists(info.group, info.plural, attributes.name)


def _retry_generated(
    state: ServerState, info: ResourceInfo, namespace: str, meta: dict[str, Any]
) -> str:
    base = str(meta["generateName"])
    for _ in range(_GENERATE_ATTEMPTS):
        meta["name"] = state.generate_name(base)
        key = state.key(info, namespace, meta["name"])
        if state.store.get(info.key, key) is None:
            return key
    raise st.generate_name_conflict(info.group, info.plural, str(meta["name"]))


async def update_object(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    body: Mapping[str, Any],
    *,
    namespace: str = "",
    subresource: str = "",
    options: WriteOptions | None = None,
) -> KubeObject:
    """Replace an object or a subresource (PUT), named by the URL's ``name``."""
    opts = options or WriteOptions()
    _check_subresource(info, version, subresource)
    if subresource == "scale":
        existing = state.load(info, namespace, name)
        body = copy.deepcopy(dict(body))
        admission.check_name(body, name, namespace)
        return await write_patched(
            state,
            info,
            version,
            name,
            existing=existing,
            patched=body,
            namespace=namespace,
            subresource=subresource,
            options=opts,
        )
    obj = _admit_update(state, info, version, name, body, namespace=namespace, options=opts)
    existing = state.load(info, namespace, name)
    return await update_existing(
        state, info, version, existing, obj, subresource=subresource, options=opts
    )


async def write_patched(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    *,
    existing: KubeObject,
    patched: Mapping[str, Any],
    namespace: str = "",
    subresource: str = "",
    options: WriteOptions,
) -> KubeObject:
    """Write the result of a patch of ``existing`` (the update path, after the patch).

    On ``scale`` the result is a Scale: a ``resourceVersion`` in it must be the object's (409
    otherwise), its replicas are written onto the object and the Scale is read back.
    """
    _check_subresource(info, version, subresource)
    if subresource == "scale":
        spec = _scale_spec(info, version)
        scale_rv = str(metadata(patched).get("resourceVersion") or "")
        if scale_rv and scale_rv != str(metadata(existing).get("resourceVersion")):
            raise st.stale_conflict(info.group, info.plural, name)
        if options.admission is not None:
            await _admit_scale(info, version, existing, patched, options=options)
        new = from_scale(with_api_version(existing, info.api_version(version)), patched, spec)
        inner = copy.copy(options)
        inner.admission = None  # the object behind a Scale is not admitted a second time
        await update_existing(state, info, version, existing, new, subresource="", options=inner)
        options.warnings[:] = inner.warnings
        return get_scale(state, info, version, name, namespace=namespace)
    obj = _admit_update(state, info, version, name, patched, namespace=namespace, options=options)
    return await update_existing(
        state, info, version, existing, obj, subresource=subresource, options=options
    )


async def _admit_scale(
    info: ResourceInfo,
    version: str,
    existing: KubeObject,
    scale: Mapping[str, Any],
    *,
    options: WriteOptions,
) -> None:
    """Admission of a ``/scale`` write sees the Scales (``autoscaling/v1``), not the object."""
    assert options.admission is not None
    meta = metadata(existing)
    old_scale = to_scale(existing, _scale_spec(info, version))
    new_scale = {**copy.deepcopy(dict(scale)), "apiVersion": "autoscaling/v1", "kind": "Scale"}
    attributes = AdmissionAttributes(
        UPDATE,
        info,
        version,
        "scale",
        str(meta.get("name") or ""),
        str(meta.get("namespace") or ""),
        new_scale,
        old_scale,
        options.dry_run,
        _options_document("UpdateOptions", options),
        kind=("autoscaling", "v1", "Scale"),
    )
    await options.admission.mutate(attributes)
    await options.admission.validate(attributes)


def _admit_update(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    name: str,
    body: Mapping[str, Any],
    *,
    namespace: str,
    options: WriteOptions,
) -> KubeObject:
    """The new state of an update, decoded and admitted (name and namespace checked)."""
    obj = admission.decode(info, version, body, options)
    admission.check_name(obj, name, namespace if info.namespaced else "")
    admission.admit_namespace(state.store, info, namespace, name, creating=False)
    return obj


def _check_subresource(info: ResourceInfo, version: str, subresource: str) -> None:
    """Only the subresources a resource has can be written (404 otherwise)."""
    if subresource and "update" not in info.subresource_verbs(version, subresource):
        raise st.resource_not_found()


async def update_existing(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    existing: KubeObject,
    new: KubeObject,
    *,
    subresource: str,
    options: WriteOptions,
) -> KubeObject:
    """The common tail of update and patch: shape, default, validate, commit.

    A custom resource converted by a webhook is updated at the request's version: the stored
    object is converted to it first, and the result back to the storage version.
    """
    existing = await _converted(state, info, existing, version)
    old_meta = metadata(existing)
    name = str(old_meta.get("name"))
    rv = str(metadata(new).get("resourceVersion") or "")
    if not rv and not info.allow_unconditional_update:
        raise st.invalid(
            info.group,
            info.plural,
            name,
            [
                st.Cause(
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )
            ],
        )
    if rv and rv != old_meta.get("resourceVersion"):
        parse_resource_version(rv)
        raise st.stale_conflict(info.group, info.plural, name)
    new = _shape(info, version, existing, new, subresource)
    meta = metadata(new)
    ctx = WriteContext(
        now=state.now(), version=version, dry_run=options.dry_run, subresource=subresource
    )
    strategy = info.strategy
    strategy.defaults(new)
    _keep_server_fields(meta, old_meta)
    if not options.applying:
        new = _record_manager(info, version, existing, new, options=options, now=ctx.now)
        meta = metadata(new)
    attributes = AdmissionAttributes(
        UPDATE,
        info,
        version,
        subresource,
        name,
        str(old_meta.get("namespace") or ""),
        new,
        with_api_version(existing, info.api_version(version)),
        options.dry_run,
        _options_document("UpdateOptions", options),
    )
    if options.admission is not None:
        new = await _mutate_update(options.admission, attributes, existing)
        meta = metadata(new)
    strategy.prepare_update(new, existing, ctx)
    if info.has_generation and not spec_equal(
        new, existing, ignore_status=info.has_status(version)
    ):
        meta["generation"] = int(old_meta.get("generation") or 0) + 1
    causes = validate_object_meta_update(meta, old_meta) + strategy.validate_update(
        new, existing, ctx
    )
    if causes:
        raise st.invalid(info.group, info.kind, name, causes)
    key = state.key(info, str(old_meta.get("namespace") or ""), name)
    if options.admission is not None:
        attributes.object = new
        await _validate_update(state, key, options.admission, attributes)
    meta["resourceVersion"] = old_meta.get("resourceVersion")
    new["apiVersion"] = existing.get("apiVersion")
    new["kind"] = info.kind
    api_version = info.api_version(version)
    if new == existing:
        return with_api_version(existing, api_version)
    if _empties_finalizers(new, existing):
        if not options.dry_run:
            state.store.commit(info.key, key, None)
        return with_api_version(existing, api_version)
    if options.dry_run:
        return with_api_version(new, api_version)
    new = await _converted(state, info, new, info.storage_version.name)
    event = state.store.commit(info.key, key, new)
    assert event is not None
    return await state.at_version(info, event.object, version)


async def _mutate_update(
    admission: Admission, attributes: AdmissionAttributes, existing: KubeObject
) -> KubeObject:
    """The new state as mutating admission leaves it, reshaped for the (sub)resource."""
    assert attributes.object is not None
    mutated = await admission.mutate(attributes)
    if mutated is None:
        return attributes.object
    info = attributes.info
    new = _shape(info, attributes.version, existing, mutated, attributes.subresource)
    _keep_server_fields(metadata(new), metadata(existing))
    return new


async def _validate_update(
    state: ServerState, key: str, admission: Admission, attributes: AdmissionAttributes
) -> None:
    """Validating admission of an update; the object must not have changed meanwhile."""
    await admission.validate(attributes)
    info, name = attributes.info, attributes.name
    current = state.store.get(info.key, key)
    if current is None:
        raise st.not_found(info.group, info.plural, name)
    assert attributes.old_object is not None
    if metadata(current).get("resourceVersion") != metadata(attributes.old_object).get(
        "resourceVersion"
    ):
        conflict = st.stale_conflict(info.group, info.plural, name)
        raise Superseded(conflict.message, reason=conflict.reason, details=conflict.details)


def _record_manager(
    info: ResourceInfo,
    version: str,
    existing: Mapping[str, Any],
    new: KubeObject,
    *,
    options: WriteOptions,
    now: str,
) -> KubeObject:
    """Credit the fields a non-apply write sets or changes to its manager (``managedFields``).

    The entries start from the stored object's, unless the request sets ``managedFields``
    itself (clients may rewrite or reset them). Status is left out of main-resource writes of
    kinds with a status subresource, whose status those writes cannot change.
    """
    served = info.version(version)
    schema = served.schema if served is not None and served.schema else None
    api_version = info.api_version(version)
    old_meta, new_meta = metadata(existing), metadata(new)
    base_fields = old_meta.get("managedFields")
    if "managedFields" in new_meta and new_meta["managedFields"] != base_fields:
        base_fields = new_meta["managedFields"]
    ignore_status = info.has_status(version)

    def view(obj: Mapping[str, Any], fields: Any) -> dict[str, Any]:
        out = {k: v for k, v in obj.items() if not (ignore_status and k == "status")}
        out["apiVersion"] = api_version
        meta = {k: v for k, v in metadata(obj).items() if k != "managedFields"}
        if fields:
            meta["managedFields"] = fields
        out["metadata"] = meta
        return out

    recorded = record_update(
        view(existing, base_fields) if existing else view({}, base_fields),
        view(new, None),
        manager=options.manager,
        now=now,
        schema=schema,
    )
    fields = metadata(recorded).get("managedFields")
    result = dict(new)
    result["metadata"] = dict(new_meta)
    if fields:
        result["metadata"]["managedFields"] = fields
    else:
        result["metadata"].pop("managedFields", None)
    return result


def _keep_server_fields(meta: dict[str, Any], old_meta: Mapping[str, Any]) -> None:
    """What an update cannot change, or keeps when it leaves it out (``BeforeUpdate``)."""
    for key in ("creationTimestamp", "deletionTimestamp", "generation"):
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if not meta.get("uid"):
        meta["uid"] = old_meta.get("uid")
    for key in ("deletionGracePeriodSeconds", "managedFields"):
        if key not in meta and key in old_meta:
            meta[key] = old_meta[key]


def _shape(
    info: ResourceInfo,
    version: str,
    existing: KubeObject,
    new: KubeObject,
    subresource: str,
) -> KubeObject:
    """Keep only what the written (sub)resource may change."""
    if subresource == "status":
        shaped = copy.deepcopy(existing)
        if "status" in new:
            shaped["status"] = new["status"]
        else:
            shaped.pop("status", None)
        if "managedFields" in metadata(new):
            shaped["metadata"]["managedFields"] = metadata(new)["managedFields"]
        shaped["metadata"]["resourceVersion"] = metadata(new).get("resourceVersion")
        return shaped
    if subresource == "finalize":
        shaped = copy.deepcopy(existing)
        finalizers = (new.get("spec") or {}).get("finalizers") or []
        shaped.setdefault("spec", {})["finalizers"] = list(finalizers)
        return shaped
    if info.has_status(version):
        if "status" in existing:
            new["status"] = copy.deepcopy(existing["status"])
        else:
            new.pop("status", None)
    return new


def _scale_spec(info: ResourceInfo, version: str) -> Any:
    served = info.version(version)
    if served is None or served.scale is None:
        raise st.resource_not_found()
    return served.scale


def get_scale(
    state: ServerState, info: ResourceInfo, version: str, name: str, *, namespace: str = ""
) -> KubeObject:
    """The ``autoscaling/v1`` Scale of a custom resource with a scale subresource."""
    spec = _scale_spec(info, version)
    return to_scale(state.load(info, namespace, name), spec)
