"""Deletes: single objects, namespaces and collections, with preconditions and dry runs.

What a delete does to an object is decided by
:func:`~etctl.testing._apiserver.deletion.plan_delete`; this module checks the preconditions, runs
the plan against the store, and gives namespaces their two-step deletion: the first delete marks
the namespace ``Terminating`` (its content is the namespace controller's to remove), and once
``spec.finalizers`` is empty (through ``/finalize``) a delete removes it. ``default``,
``kube-system`` and ``kube-public`` cannot be deleted.

Admission sees a delete once its preconditions hold, with the stored object as ``oldObject``
(and no name for the items of a deletecollection, as kube-apiserver sends them); what it allowed
is deleted only if it has not changed meanwhile.
"""

from __future__ import annotations

import copy
from typing import Any

from etctl.errors import ApiError
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.admissionrequest import DELETE, AdmissionAttributes
from etctl.testing._apiserver.deletion import DeleteOptions, plan_delete
from etctl.testing._apiserver.listing import list_objects
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.selection import Selection
from etctl.testing._apiserver.state import ServerState
from etctl.testing._apiserver.store import NAMESPACES, metadata

__all__ = ["delete_collection", "delete_object"]

_IMMORTAL = frozenset({"default", "kube-system", "kube-public"})


async def delete_object(
    state: ServerState,
    info: ResourceInfo,
    name: str,
    *,
    namespace: str = "",
    options: DeleteOptions | None = None,
    collection: bool = False,
    version: str = "",
) -> tuple[KubeObject, bool]:
    """Delete an object, or start its graceful or finalized deletion; True when it is removed.

    ``collection`` marks an item of a deletecollection (admission is told no name);
    ``version`` is the request's (admission sees the object at it; the storage version if
    unset).
    """
    opts = options or DeleteOptions()
    opts.validate()
    existing = state.load(info, namespace, name)
    if opts.admission is not None:
        _check_preconditions(info, name, existing, opts)
        shown = "" if collection else name
        await _admit_delete(state, info, existing, opts, name=shown, version=version)
        existing = state.load(info, namespace, name)
    _check_preconditions(info, name, existing, opts)
    key = state.key(info, namespace, name)
    if info.key == NAMESPACES:
        handled = _delete_namespace(state, info, existing, key, opts)
        if handled is not None:
            return handled
    grace = info.strategy.grace_period(existing, opts.grace_period_seconds)
    plan = plan_delete(existing, opts, grace_period=grace, now=state.clock.now())
    current = existing
    if plan.update is not None:
        if opts.dry_run:
            current = plan.update
        else:
            event = state.store.commit(info.key, key, plan.update)
            assert event is not None
            current = event.object
    if plan.remove:
        if not opts.dry_run:
            state.store.commit(info.key, key, None)
        return current, True
    return current, False


async def _admit_delete(
    state: ServerState,
    info: ResourceInfo,
    existing: KubeObject,
    opts: DeleteOptions,
    *,
    name: str,
    version: str,
) -> None:
    """Mutating, then validating admission of a delete: the stored object is ``oldObject``."""
    assert opts.admission is not None
    meta = metadata(existing)
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
    if opts.dry_run:
        options["dryRun"] = ["All"]
    if opts.grace_period_seconds is not None:
        options["gracePeriodSeconds"] = opts.grace_period_seconds
    if opts.propagation_policy is not None:
        options["propagationPolicy"] = opts.propagation_policy
    version = version or info.storage_version.name
    attributes = AdmissionAttributes(
        DELETE,
        info,
        version,
        "",
        name,
        str(meta.get("namespace") or ""),
        None,
        await state.at_version(info, existing, version),
        opts.dry_run,
        options,
    )
    await opts.admission.mutate(attributes)
    await opts.admission.validate(attributes)


def _check_preconditions(
    info: ResourceInfo, name: str, existing: KubeObject, opts: DeleteOptions
) -> None:
    """The uid and resourceVersion preconditions of the delete (409 when they fail)."""
    meta = metadata(existing)
    if opts.uid is not None and opts.uid != meta.get("uid"):
        raise st.conflict(
            info.group,
            info.plural,
            name,
            f"Precondition failed: UID in precondition: {opts.uid}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    if opts.resource_version is not None and opts.resource_version != meta.get("resourceVersion"):
        raise st.conflict(
            info.group,
            info.plural,
            name,
            "Precondition failed: ResourceVersion in precondition: "
            f"{opts.resource_version}, ResourceVersion in object meta: "
            f"{meta.get('resourceVersion')}",
        )


def _delete_namespace(
    state: ServerState, info: ResourceInfo, existing: KubeObject, key: str, opts: DeleteOptions
) -> tuple[KubeObject, bool] | None:
    """Namespaces: first delete marks Terminating, the last one (after finalize) removes."""
    name = str(metadata(existing).get("name"))
    if name in _IMMORTAL:
        raise st.forbidden("", "namespaces", name, "this namespace may not be deleted")
    if not metadata(existing).get("deletionTimestamp"):
        obj = copy.deepcopy(existing)
        obj["metadata"]["deletionTimestamp"] = state.now()
        obj["metadata"]["deletionGracePeriodSeconds"] = 0
        obj.setdefault("status", {})["phase"] = "Terminating"
        plan = plan_delete(
            existing,
            DeleteOptions(
                propagation_policy=opts.propagation_policy,
                orphan_dependents=opts.orphan_dependents,
            ),
            grace_period=None,
            now=state.clock.now(),
        )
        if plan.update is not None:
            obj["metadata"]["finalizers"] = plan.update["metadata"].get("finalizers", [])
        if opts.dry_run:
            return obj, False
        event = state.store.commit(info.key, key, obj)
        assert event is not None
        return event.object, False
    if (existing.get("spec") or {}).get("finalizers"):
        raise st.conflict(
            "",
            "namespaces",
            name,
            "The system is ensuring all content is removed from this namespace.  Upon "
            "completion, this namespace will automatically be purged by the system.",
        )
    return None


async def delete_collection(
    state: ServerState,
    info: ResourceInfo,
    version: str,
    selection: Selection,
    *,
    options: DeleteOptions | None = None,
) -> list[KubeObject]:
    """:meth:`delete_collection` for an already resolved resource and selection."""
    opts = options or DeleteOptions()
    opts.validate()
    out = []
    for obj in list_objects(state.store, info, version, selection).items:
        meta = metadata(obj)
        try:
            deleted, _ = await delete_object(
                state,
                info,
                str(meta["name"]),
                namespace=str(meta.get("namespace") or ""),
                options=opts,
                collection=True,
                version=version,
            )
        except ApiError as exc:
            if exc.status == 404:
                continue  # removed meanwhile by a listener (a finalizer, a cascade)
            raise
        out.append(with_api_version(deleted, info.api_version(version)))
    return out
