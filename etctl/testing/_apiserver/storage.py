"""The server's internal API: every verb, with all the semantics of an HTTP request, synchronously.

:class:`Storage` is what the HTTP handlers call and what in-process controllers (a simulated
kubelet, a garbage collector, a namespace controller) call directly. A write through it runs the
same admission, defaulting, validation, resourceVersion and generation logic as the same write
over HTTP, commits through the :class:`~etctl.testing._apiserver.store.Store` and so emits the
same watch events; errors are the same :class:`etctl.errors.ApiError` subclasses, with the same
``Status`` content.

Contract:

* calls are synchronous and must be made on the server's event loop thread; writes made here are
  not sent to admission webhooks (only HTTP requests are: the write coroutines of ``writes``,
  ``patching`` and ``removal`` run here to their end without waiting);
* objects returned are shared and read-only (deep-copy one before changing it); objects passed
  in are not kept (they are copied);
* resources are named by :class:`etctl.runtime.Resource`; its version decides the
  ``apiVersion`` of what is returned and, for custom resources, the schema that applies.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, Resource
from etctl.testing._apiserver import binding, listing, patching, removal, writes
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.admissionrequest import run_sync
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.listing import ListResult
from etctl.testing._apiserver.registry import ResourceInfo, with_api_version
from etctl.testing._apiserver.selection import Selection, parse_selection
from etctl.testing._apiserver.state import ServerState
from etctl.testing._apiserver.store import metadata
from etctl.testing._apiserver.watch import Watcher
from etctl.testing._apiserver.watching import start_watch
from etctl.testing._apiserver.writeoptions import WriteOptions

__all__ = ["ListResult", "Storage", "WriteOptions"]


class Storage(ServerState):
    """Every verb on every served resource.

    Constructed as a :class:`~etctl.testing._apiserver.state.ServerState` (``registry``,
    ``store``, ``clock``, ``seed``); the verbs are the functions of ``writes``, ``patching``,
    ``removal``, ``binding`` and ``watching``, which work on that state.
    """

    # -- resolution -----------------------------------------------------------------------------

    def target(self, resource: Resource) -> tuple[ResourceInfo, str]:
        """The served resource and version a :class:`Resource` names.

        Raises:
            etctl.errors.NotFound: the resource is not served at that version.
        """
        info = self.registry.resolve(resource.group, resource.version, resource.plural)
        if info is None:
            raise st.resource_not_found()
        return info, resource.version

    # -- reads ----------------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, *, namespace: str = "") -> KubeObject:
        """One object, read at ``resource.version``."""
        info, version = self.target(resource)
        return with_api_version(self.load(info, namespace, name), info.api_version(version))

    def list(
        self,
        resource: Resource,
        *,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        """One page of the objects selected, in key order.

        Raises:
            etctl.errors.Gone: the continue token or resourceVersion is older than the history.
            etctl.errors.BadRequest: bad selectors, token or options.
        """
        info, version = self.target(resource)
        selection = parse_selection(
            info, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        return self.list_selected(
            info,
            version,
            selection,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def list_selected(
        self,
        info: ResourceInfo,
        version: str,
        selection: Selection,
        *,
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult:
        """:meth:`list` for an already resolved resource and parsed selection."""
        return listing.list_objects(
            self.store,
            info,
            version,
            selection,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str = "",
        resource_version_match: str = "",
        send_initial_events: bool | None = None,
        allow_bookmarks: bool = False,
        max_buffer: int = 1000,
    ) -> Watcher:
        """Start a watch; read it with :meth:`Watcher.next_chunk`, end it with ``close()``.

        The watcher is fed synchronously by every later commit; the caller owns its lifetime
        (bookmarks and timeouts are the HTTP layer's business).
        """
        info, version = self.target(resource)
        selection = parse_selection(
            info, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        return start_watch(
            self.store,
            info,
            version,
            selection,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            send_initial_events=send_initial_events,
            allow_bookmarks=allow_bookmarks,
            max_buffer=max_buffer,
        )

    # -- creates --------------------------------------------------------------------------------

    def create(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str = "",
        options: WriteOptions | None = None,
    ) -> KubeObject:
        """Create an object (POST); returns the stored object.

        Raises:
            etctl.errors.AlreadyExists: the name is taken.
            etctl.errors.Invalid: the object fails validation.
            etctl.errors.NotFound: the namespace does not exist.
            etctl.errors.Forbidden: the namespace is terminating.
        """
        info, version = self.target(resource)
        return self.create_in(info, version, obj, namespace=namespace, options=options)

    # -- updates --------------------------------------------------------------------------------

    def update(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        *,
        namespace: str = "",
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> KubeObject:
        """Replace an object (PUT), or its ``status`` / ``scale`` / ``finalize`` subresource.

        Raises:
            etctl.errors.NotFound: no such object.
            etctl.errors.Conflict: ``metadata.resourceVersion`` is stale.
            etctl.errors.Invalid: the result fails validation.
        """
        info, version = self.target(resource)
        name = str(metadata(obj).get("name") or "")
        return self.update_in(
            info, version, name, obj, namespace=namespace, subresource=subresource, options=options
        )

    def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        patch_type: str,
        namespace: str = "",
        subresource: str = "",
        options: WriteOptions | None = None,
        force: bool = False,
    ) -> KubeObject:
        """Patch an object (or a subresource); server-side apply may create it.

        Args:
            resource: the resource.
            name: the object's name.
            patch: the parsed patch document (a list of operations for a JSON patch).
            patch_type: the media type (``application/merge-patch+json``...).
            namespace: the object's namespace.
            subresource: ``status`` or ``scale`` to patch those.
            options: dry run, field manager and field validation.
            force: take ownership of conflicting fields (apply only).
        """
        info, version = self.target(resource)
        obj, _created = self.patch_in(
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
        return obj

    def patch_in(
        self,
        info: ResourceInfo,
        version: str,
        name: str,
        patch: Any,
        *,
        patch_type: str,
        namespace: str = "",
        subresource: str = "",
        options: WriteOptions | None = None,
        force: bool = False,
    ) -> tuple[KubeObject, bool]:
        """:meth:`patch` for an already resolved resource; also says whether apply created it."""
        return run_sync(
            patching.patch_object(
                self,
                info,
                version,
                name,
                patch,
                patch_type=patch_type,
                namespace=namespace,
                subresource=subresource,
                options=options or WriteOptions(),
                force=force,
            )
        )

    def bind(
        self,
        name: str,
        node_name: str,
        *,
        namespace: str,
        uid: str | None = None,
        annotations: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> KubeObject:
        """Assign a pod to a node (``POST pods/<name>/binding``), as the scheduler does.

        Sets ``spec.nodeName``, the binding's annotations and the ``PodScheduled`` condition.

        Raises:
            etctl.errors.NotFound: no such pod.
            etctl.errors.Conflict: the pod is already assigned, being deleted, or its uid differs.
        """
        return binding.bind_pod(
            self,
            name,
            node_name,
            namespace=namespace,
            uid=uid,
            annotations=annotations,
            dry_run=dry_run,
        )

    # -- resolved forms (the HTTP layer and in-process controllers) -----------------------------

    def create_in(
        self,
        info: ResourceInfo,
        version: str,
        body: Mapping[str, Any],
        *,
        namespace: str = "",
        options: WriteOptions | None = None,
    ) -> KubeObject:
        """:meth:`create` for an already resolved resource."""
        return run_sync(
            writes.create_object(self, info, version, body, namespace=namespace, options=options)
        )

    def update_in(
        self,
        info: ResourceInfo,
        version: str,
        name: str,
        body: Mapping[str, Any],
        *,
        namespace: str = "",
        subresource: str = "",
        options: WriteOptions | None = None,
    ) -> KubeObject:
        """:meth:`update` for an already resolved resource and the name from the URL."""
        return run_sync(
            writes.update_object(
                self,
                info,
                version,
                name,
                body,
                namespace=namespace,
                subresource=subresource,
                options=options,
            )
        )

    def get_scale(
        self, info: ResourceInfo, version: str, name: str, *, namespace: str = ""
    ) -> KubeObject:
        """The ``autoscaling/v1`` Scale of a custom resource with a scale subresource."""
        return writes.get_scale(self, info, version, name, namespace=namespace)

    def delete_in(
        self,
        info: ResourceInfo,
        name: str,
        *,
        namespace: str = "",
        options: DeleteOptions | None = None,
    ) -> tuple[KubeObject, bool]:
        """:meth:`delete` for an already resolved resource."""
        return run_sync(
            removal.delete_object(self, info, name, namespace=namespace, options=options)
        )

    def delete_collection_in(
        self,
        info: ResourceInfo,
        version: str,
        selection: Selection,
        *,
        options: DeleteOptions | None = None,
    ) -> builtins.list[KubeObject]:
        """:meth:`delete_collection` for an already resolved resource and selection."""
        return run_sync(removal.delete_collection(self, info, version, selection, options=options))

    # -- deletes --------------------------------------------------------------------------------

    def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str = "",
        options: DeleteOptions | None = None,
    ) -> tuple[KubeObject, bool]:
        """Delete an object (or start its graceful or finalized deletion).

        Returns:
            The object (its last state, or its new state while deletion is pending) and True
            when it was removed from storage.
        """
        info, _version = self.target(resource)
        obj, removed = self.delete_in(info, name, namespace=namespace, options=options)
        return with_api_version(obj, info.api_version(resource.version)), removed

    def delete_collection(
        self,
        resource: Resource,
        *,
        namespace: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        options: DeleteOptions | None = None,
    ) -> builtins.list[KubeObject]:
        """Delete every selected object; returns them (as each delete left it)."""
        info, version = self.target(resource)
        selection = parse_selection(
            info, namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        return self.delete_collection_in(info, version, selection, options=options)
