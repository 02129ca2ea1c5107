"""Deletes: single objects, namespaces and collections, with preconditions and dry runs.

What a delete does to an object is decided by
:func:`~etctl.testing._apiserver.deletion.plan_delete`; this module checks the preconditions, runs
the plan against the store, and gives namespaces their two-step deletion: the first delete marks
the namespace ``Terminating`` (its content is the namespace controller's to remove), and once
``spec.finalizers`` is empty (through ``/finalize``) a delete removes it. ``default``,
``kube-system`` and ``kube-public`` cannot be deleted.
"""

from __future__ import annotations

import copy

from etctl.errors import ApiError
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.deletion import DeleteOptions, plan_delete
from etctl.testing._apiserver.listing import list_objects
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.selection import Selection
from etctl.testing._apiserver.state import ServerState
from etctl.testing._apiserver.store import NAMESPACES, metadata

__all__ = ["delete_collection", "delete_object"]

_IMMORTAL = frozenset({"default", "kube-system", "kube-public"})


def delete_object(
    state: ServerState,
    info: ResourceInfo,
    name: str,
    *,
    namespace: str = "",
    options: DeleteOptions | None = None,
) -> tuple[KubeObject, bool]:
    """Delete an object, or start its graceful or finalized deletion; True when it is removed."""
    opts = options or DeleteOptions()
    opts.validate()
    existing = state.load(info, namespace, name)
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


def delete_collection(
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
            deleted, _ = delete_object(
                state,
                info,
                str(meta["name"]),
                namespace=str(meta.get("namespace") or ""),
                options=opts,
            )
        except ApiError as exc:
            if exc.status == 404:
                continue  # removed meanwhile by a listener (a finalizer, a cascade)
            raise
        out.append(with_api_version(deleted, info.api_version(version)))
    return out
