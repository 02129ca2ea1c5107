"""The HTTP face of the server: one aiohttp handler that routes, negotiates and answers.

Every request is parsed into a :class:`~etctl.testing._apiserver.request.RequestInfo`, recorded in
the request log, authenticated and authorized when the server enforces RBAC (a
:class:`~etctl.testing._apiserver.authorization.Guard`), held while the server is paused, matched
against injected faults, and then answered: discovery and OpenAPI documents, or a verb on a
resource through :class:`~etctl.testing.Storage`. Errors are ``Status`` bodies
with the real server's codes; warnings become ``Warning: 299`` headers. Representations are JSON
objects, ``meta.k8s.io`` Tables (``kubectl get``) or PartialObjectMetadata, chosen from ``Accept``.

Subresources that belong to other components (``pods/exec``, ``pods/log``) are served by handlers
registered with :meth:`HttpApi.add_subresource`; resources that are created and never stored (the
TokenReview and SubjectAccessReview of a server enforcing RBAC) by handlers in
:attr:`HttpApi.reviews`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from etctl.errors import ApiError
from etctl.log import get_logger
from etctl.runtime import Clock
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver import verbs
from etctl.testing._apiserver.admissionrequest import Admission
from etctl.testing._apiserver.authn import ADMIN_USER, UserInfo
from etctl.testing._apiserver.authorization import Guard
from etctl.testing._apiserver.discovery import SERVER_VERSION, Discovery, wants_aggregated
from etctl.testing._apiserver.faults import Fault, FaultInjector
from etctl.testing._apiserver.limits import BODY_LIMIT, MAX_REQUEST_BODY_BYTES
from etctl.testing._apiserver.openapi import OpenAPI
from etctl.testing._apiserver.reads import serve_read
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.representation import (
    Representation,
    error_response,
)
from etctl.testing._apiserver.request import RequestInfo, parse_path
from etctl.testing._apiserver.requestlog import RequestLog, RequestRecord
from etctl.testing._apiserver.selection import parse_selection
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.store import dumps
from etctl.testing._apiserver.streaming import WatchSettings, serve_watch
from etctl.testing._apiserver.webhookdispatch import WebhookDispatcher

__all__ = ["HttpApi", "SubresourceHandler", "SubresourceRequest"]

_WRITES: dict[
    str,
    Callable[
        [Storage, web.Request, ResourceInfo, RequestInfo, Admission | None],
        Awaitable[web.StreamResponse],
    ],
] = {
    "create": verbs.create,
    "update": verbs.update,
    "patch": verbs.patch,
    "delete": verbs.delete,
    "deletecollection": verbs.delete_collection,
}

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class SubresourceRequest:
    """What a registered subresource handler is told about its request.

    Attributes:
        storage: the server's storage (to read the pod, say).
        info: the resource.
        version: the version requested.
        namespace: the namespace.
        name: the object name.
        subresource: the subresource (``exec``, ``log``).
    """

    storage: Storage
    info: ResourceInfo
    version: str
    namespace: str
    name: str
    subresource: str


SubresourceHandler = Callable[[web.Request, SubresourceRequest], Awaitable[web.StreamResponse]]
"""Serves one subresource request; raise an :class:`etctl.errors.ApiError` to answer a Status."""

ReviewHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""Answers the create of a resource that is never stored (a review)."""


class HttpApi:
    """The aiohttp application of one server.

    Args:
        storage: the verbs.
        discovery: the discovery documents.
        openapi: the OpenAPI documents.
        faults: the fault injector.
        requests: the request log.
        clock: the server clock (fault delays, watch timers, table ages).
        watch: watch timing and buffer settings.
        max_request_body_bytes: the longest write body read; longer ones get 413.
    """

    def __init__(
        self,
        *,
        storage: Storage,
        discovery: Discovery,
        openapi: OpenAPI,
        faults: FaultInjector,
        requests: RequestLog,
        clock: Clock,
        watch: WatchSettings,
        max_request_body_bytes: int = MAX_REQUEST_BODY_BYTES,
        version_document: Mapping[str, Any] = SERVER_VERSION,
    ) -> None:
        self.version_document = dict(version_document)
        self.storage = storage
        self.discovery = discovery
        self.openapi = openapi
        self.faults = faults
        self.requests = requests
        self.clock = clock
        self.watch = watch
        self.max_request_body_bytes = max_request_body_bytes
        self._subresources: dict[tuple[str, str, str], SubresourceHandler] = {}
        # Authentication and RBAC, when the server enforces them (None: every request is served).
        self.guard: Guard | None = None
        # Create-only resources answered and never stored, by (group, plural).
        self.reviews: dict[tuple[str, str], ReviewHandler] = {}
        # Warnings every response to a request carries (a deprecated version, a webhook's), by
        # request id: an error answer carries them too.
        self._warnings: dict[int, list[str]] = {}
        # The admission webhooks writes are sent to (None: none are called).
        self.webhooks: WebhookDispatcher | None = None

    def add_subresource(
        self, group: str, plural: str, subresource: str, handler: SubresourceHandler
    ) -> None:
        """Serve ``<plural>/<name>/<subresource>`` (every method) with ``handler``."""
        self._subresources[(group, plural, subresource)] = handler

    async def _add_warnings(self, request: web.Request, response: web.StreamResponse) -> None:
        """Response-prepare signal: a stream gets its request's warnings as it starts."""
        for warning in self._warnings.get(id(request), ()):
            response.headers.add("Warning", f'299 - "{warning}"')

    def application(self) -> web.Application:
        """A fresh aiohttp application routing everything to :meth:`handle`."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app[BODY_LIMIT] = self.max_request_body_bytes
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_response_prepare.append(self._add_warnings)
        return app

    # -- entry ----------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Answer one request (the aiohttp handler)."""
        query = request.rel_url.query
        record = RequestRecord(
            method=request.method,
            path=request.path,
            verb=request.method.lower(),
            user_agent=request.headers.get("User-Agent", ""),
            field_manager=query.get("fieldManager", ""),
        )
        self.requests.append(record)
        try:
            info = parse_path(request.method, request.path, query)
            record.verb, record.group, record.version = info.verb, info.group, info.version
            record.resource, record.namespace = info.resource, info.namespace
            record.name, record.subresource = info.name, info.subresource
            user = ADMIN_USER
            if self.guard is not None:
                user = self.guard.authenticate(request.headers.get("Authorization"))
                record.user = user.name
                self.guard.authorize(user, info, request.path, query)
            response = await self._serve(request, info, record, user)
        except ApiError as error:
            response = error_response(error)
        except web.HTTPException:
            raise
        except ConnectionResetError:
            # The client went away (a watch it stopped, a process that exited): nothing failed
            # here, and nobody is left to read an answer (recorded as nginx's 499).
            log.debug("client disconnected", method=request.method, path=request.path)
            response = web.Response(status=499, reason="Client Closed Request")
        except Exception as exc:
            log.exception("request failed", method=request.method, path=request.path)
            response = error_response(st.internal_error(f"{type(exc).__name__}: {exc}"))
        warnings = self._warnings.pop(id(request), ())
        if not response.prepared:  # streams got theirs when they were prepared
            for warning in warnings:
                response.headers.add("Warning", f'299 - "{warning}"')
        if not record.code:
            record.code = response.status
        return response

    async def _serve(
        self, request: web.Request, info: RequestInfo, record: RequestRecord, user: UserInfo
    ) -> web.StreamResponse:
        """Serve the request with the injected faults that match it (see ``faults``)."""
        if self.faults.paused:
            await self.faults.wait_running()
        reads = self.faults.reads_bodies and request.can_read_body
        body = await verbs.keep_body(request, read=reads)
        query = request.rel_url.query
        fault = self.faults.take(info, lambda key: query.getall(key, []), body)
        if fault is None:
            return await self._dispatch(request, info, record, None, user)
        if fault.delay > 0:
            await self.clock.sleep(fault.delay)
        error = fault.error()
        if error is not None:
            raise error
        response = await self._dispatch(request, info, record, fault, user)
        if fault.answer_delay > 0:
            await self.clock.sleep(fault.answer_delay)
        if fault.drop_answer:
            return self._drop(request, record, response)
        return response

    def _drop(
        self, request: web.Request, record: RequestRecord, response: web.StreamResponse
    ) -> web.StreamResponse:
        """Close the connection of a served request instead of answering it (a dropped answer)."""
        record.code = response.status
        record.dropped = True
        if request.transport is not None:
            request.transport.abort()
        return response  # written to nobody: the connection is gone

    async def _dispatch(
        self,
        request: web.Request,
        info: RequestInfo,
        record: RequestRecord,
        fault: Fault | None,
        user: UserInfo,
    ) -> web.StreamResponse:
        if not info.resource_request:
            return self._non_resource(request, info)
        review = self.reviews.get((info.group, info.resource))
        if review is not None and info.version == "v1" and not info.namespace and not info.name:
            if info.verb != "create":
                raise st.method_not_allowed()
            return await review(request)
        registry = self.storage.registry
        resource = registry.resolve(info.group, info.version, info.resource)
        if resource is None:
            if info.version not in registry.groups().get(info.group, ()):
                raise st.page_not_found()  # no handler at all for that group-version
            raise st.resource_not_found()
        served = resource.version(info.version)
        if served is not None and served.deprecated:
            default = f"{resource.api_version(info.version)} {resource.kind} is deprecated"
            self._warnings.setdefault(id(request), []).append(served.deprecation_warning or default)
        self._check_scope(resource, info)
        handler = self._subresources.get((info.group, info.resource, info.subresource))
        if info.subresource and handler is not None:
            sub = SubresourceRequest(
                self.storage, resource, info.version, info.namespace, info.name, info.subresource
            )
            return await handler(request, sub)
        self._check_subresource(resource, info)
        verb = info.verb
        if verb not in resource.verbs and not info.subresource:
            raise st.method_not_allowed()
        if verb == "watch":
            return await self._watch(request, resource, info, record, fault)
        if verb in ("get", "list"):
            return await serve_read(request, self.storage, resource, info, clock=self.clock)
        write = _WRITES.get(verb)
        if write is None:
            raise st.method_not_allowed()
        admission = None
        if self.webhooks is not None:
            admission = self.webhooks.admission(user, self._warnings.setdefault(id(request), []))
        return await write(self.storage, request, resource, info, admission)

    def _check_scope(self, resource: ResourceInfo, info: RequestInfo) -> None:
        if not resource.namespaced and info.namespace:
            raise st.resource_not_found()
        if resource.namespaced and not info.namespace:
            if info.name:
                raise st.resource_not_found()
            if info.verb not in ("list", "watch"):
                raise st.method_not_allowed()

    def _check_subresource(self, resource: ResourceInfo, info: RequestInfo) -> None:
        sub = info.subresource
        if not sub:
            return
        allowed = resource.subresource_verbs(info.version, sub)
        if not allowed:
            if resource.subresource(sub) is not None:
                raise _no_handler(resource, sub)
            raise st.resource_not_found()
        if info.verb not in allowed:
            raise st.method_not_allowed()

    # -- non-resource paths ---------------------------------------------------------------------

    def _non_resource(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        if request.method not in ("GET", "HEAD"):
            raise st.method_not_allowed()
        parts = info.parts
        if parts and parts[0] in ("healthz", "readyz", "livez"):
            return web.Response(text="ok", content_type="text/plain")
        found = self._document(info, request.headers.get("Accept", ""))
        if found is None:
            raise st.resource_not_found()
        body, media = found
        return web.Response(body=body, headers={"Content-Type": media, "Vary": "Accept"})

    def _document(self, info: RequestInfo, accept: str) -> tuple[bytes, str] | None:
        """The discovery or OpenAPI document a path names, with its media type."""
        parts = info.parts
        body: bytes | None = None
        media = "application/json"
        if parts == ("version",):
            body = dumps(self.version_document)
        elif parts in (("api",), ("apis",)):
            core = parts == ("api",)
            aggregated = wants_aggregated(accept)
            if aggregated:
                body = self.discovery.aggregated(core=core, version=aggregated)
                media = f"{media};g=apidiscovery.k8s.io;v={aggregated};as=APIGroupDiscoveryList"
            else:
                body = self.discovery.api_versions() if core else self.discovery.group_list()
        elif info.prefix == "apis" and len(parts) == 2:
            body = self.discovery.group(parts[1])
        elif info.prefix in ("api", "apis") and info.version:
            body = self.discovery.resource_list(info.group, info.version)
        elif parts[:2] == ("openapi", "v3"):
            path = "/".join(parts[2:])
            body = self.openapi.document(path) if path else self.openapi.root()
        return None if body is None else (body, media)

    async def _watch(
        self,
        request: web.Request,
        resource: ResourceInfo,
        info: RequestInfo,
        record: RequestRecord,
        fault: Fault | None,
    ) -> web.StreamResponse:
        query = request.rel_url.query
        representation = Representation.from_accept(request.headers.get("Accept", ""))
        field_selector = query.get("fieldSelector") or ""
        if info.name:
            named = f"metadata.name={info.name}"
            field_selector = f"{field_selector},{named}" if field_selector else named
        selection = parse_selection(
            resource,
            namespace=info.namespace,
            label_selector=query.get("labelSelector"),
            field_selector=field_selector,
        )
        return await serve_watch(
            request,
            storage=self.storage,
            info=resource,
            version=info.version,
            selection=selection,
            query=query,
            settings=self.watch,
            clock=self.clock,
            record=record,
            representation=representation.kind,
            representation_version=representation.api_version,
            fault=fault,
        )


def _no_handler(resource: ResourceInfo, sub: str) -> ApiError:
    return ApiError(
        f"{resource.plural}/{sub} is not served: nothing simulates the node that would answer it",
        status=503,
        reason="ServiceUnavailable",
    )
