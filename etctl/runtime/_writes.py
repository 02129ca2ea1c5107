"""The write verbs of the API client: create, replace, patch and delete.

:class:`WriteVerbs` is the part of :class:`~etctl.runtime.Client` that changes objects. Each
verb builds its request (:mod:`etctl.runtime._requests`), says whether repeating it is safe
(:class:`~etctl.runtime._retry.RetrySafety`) and hands it to the client's
:class:`~etctl.runtime._caller.Caller`, which retries only what may be retried: a named create is
idempotent, a ``generateName`` create is retried only when the server provably did not act, a JSON
patch only when it starts with a ``test`` op, and a 409 never.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from etctl.errors import NotFound
from etctl.runtime import _objects as objects
from etctl.runtime import _requests as wire
from etctl.runtime._addressing import namespace_for, path_for
from etctl.runtime._caller import Caller
from etctl.runtime._client_options import ClientOptions
from etctl.runtime._objects import KubeObject, ObjectView
from etctl.runtime._requests import PatchType, PropagationPolicy
from etctl.runtime._resources import Resource
from etctl.runtime._retry import RetrySafety

__all__ = ["WriteVerbs"]

_Objects = list[KubeObject]
_LIST = list


class WriteVerbs:
    """Create, replace, patch and delete objects (a part of :class:`~etctl.runtime.Client`).

    Attributes:
        options: the client's options (the default field manager of server-side apply).
    """

    options: ClientOptions
    _caller: Caller

    async def create(
        self,
        res: Resource,
        obj: ObjectView,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> KubeObject:
        """Create an object; returns it as stored (uid, resourceVersion, defaults).

        Raises:
            AlreadyExists: the name is taken (see the module's retry rule for creates).
            Invalid: the object failed validation.
        """
        path = path_for(res, namespace_for(res, namespace, obj))
        raw = await self._caller.send(
            "POST",
            path,
            query=wire.write_query(dry_run=dry_run, field_manager=field_manager),
            body=wire.typed(res, obj),
            safety=RetrySafety.IDEMPOTENT if objects.name(obj) else RetrySafety.UNSENT,
        )
        return wire.decode_object(raw)

    async def _put(
        self,
        res: Resource,
        obj: ObjectView,
        *,
        namespace: str | None,
        sub: str | None,
        dry_run: bool,
        field_manager: str | None,
    ) -> KubeObject:
        path = path_for(res, namespace_for(res, namespace, obj), objects.name(obj), sub)
        raw = await self._caller.send(
            "PUT",
            path,
            query=wire.write_query(dry_run=dry_run, field_manager=field_manager),
            body=wire.typed(res, obj),
        )
        return wire.decode_object(raw)

    async def replace(
        self,
        res: Resource,
        obj: ObjectView,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> KubeObject:
        """Replace an object (PUT); a ``metadata.resourceVersion`` in ``obj`` makes it conditional.

        Retried on transient failures: a PUT of the same body is idempotent, and with a
        resourceVersion a repeat after a lost success answers Conflict, the honest outcome.

        Raises:
            Conflict: the resourceVersion is stale (never retried).
            NotFound: no such object.
        """
        return await self._put(
            res, obj, namespace=namespace, sub=None, dry_run=dry_run, field_manager=field_manager
        )

    async def replace_status(
        self,
        res: Resource,
        obj: ObjectView,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> KubeObject:
        """Replace the ``status`` of an object through the ``/status`` subresource."""
        return await self._put(
            res,
            obj,
            namespace=namespace,
            sub="status",
            dry_run=dry_run,
            field_manager=field_manager,
        )

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> KubeObject:
        """Patch an object (or one of its subresources).

        Server-side apply (``PatchType.APPLY``) sends the fields this manager owns; its field
        manager defaults to ``options.field_manager``, and ``force=True`` takes fields over from
        other managers. Merge, strategic and apply patches are retried; a JSON patch only when it
        starts with a ``test`` op (see :func:`etctl.runtime._requests.patch_body`).

        Raises:
            Conflict: a resourceVersion in the patch is stale, or an apply conflicts with another
                manager's fields (without ``force``).
            UnsupportedMediaType: a strategic merge patch on a custom resource.
        """
        if force is not None and patch_type is not PatchType.APPLY:
            msg = "force is only valid for server-side apply"
            raise ValueError(msg)
        if patch_type is PatchType.APPLY:
            field_manager = field_manager or self.options.field_manager
        body, safety = wire.patch_body(res, patch, patch_type)
        path = path_for(res, namespace_for(res, namespace), name, subresource)
        raw = await self._caller.send(
            "PATCH",
            path,
            query=wire.write_query(dry_run=dry_run, field_manager=field_manager, force=force),
            body=body,
            content_type=patch_type.value,
            safety=safety,
        )
        return wire.decode_object(raw)

    async def patch_status(
        self,
        res: Resource,
        name: str,
        patch: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> KubeObject:
        """Patch the ``/status`` subresource (see :meth:`patch`)."""
        return await self.patch(
            res,
            name,
            patch,
            namespace=namespace,
            patch_type=patch_type,
            subresource="status",
            field_manager=field_manager,
            force=force,
            dry_run=dry_run,
        )

    async def delete(
        self,
        res: Resource,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> KubeObject | None:
        """Delete an object.

        Args:
            res: the resource.
            name: the object's name.
            namespace: its namespace (namespaced resources).
            propagation_policy: what happens to dependents (the server's default when ``None``).
            grace_period_seconds: pods only: seconds before the kubelet kills it.
            preconditions: ``{"uid": ..., "resourceVersion": ...}`` the object must still have.
            dry_run: validate without deleting.

        Returns:
            The object's last state (still present with a ``deletionTimestamp`` while finalizers or
            a grace period hold it), or ``None`` when the server answered with a ``Status`` or the
            object vanished during a retry.

        Raises:
            NotFound: no such object.
            Conflict: a precondition failed.
        """
        path = path_for(res, namespace_for(res, namespace), name)
        query, body = wire.delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )
        uncertain: list[bool] = []
        try:
            raw = await self._caller.send(
                "DELETE", path, query=query, body=body, uncertain=uncertain
            )
        except NotFound:
            if uncertain:
                return None
            raise
        result = wire.decode_object(raw)
        return None if result.get("kind") == "Status" else result

    async def delete_collection(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: PropagationPolicy | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> _Objects:
        """Delete every matching object of a namespace (or of a cluster-scoped resource).

        Returns:
            The deleted objects' last states, as the server reported them.
        """
        path = path_for(res, namespace_for(res, namespace))
        query, body = wire.delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=None,
            dry_run=dry_run,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        result = wire.decode_object(await self._caller.send("DELETE", path, query=query, body=body))
        items = result.get("items")
        return items if isinstance(items, _LIST) else []
