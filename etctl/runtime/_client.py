"""The Kubernetes API client: plain-dict objects over kubernetes_asyncio's transport.

One :class:`Client` talks to one cluster, for any resource named by a
:class:`~etctl.runtime.Resource`. Requests and answers are the API's JSON as plain dicts
(:data:`~etctl.runtime.KubeObject`), decoded with orjson from the raw body;
kubernetes_asyncio's generated model classes are never built (they cost several times the memory
and the decode time). kubernetes_asyncio is used for configuration and authentication
(:mod:`etctl.runtime._kubeconfig`) and its HTTP transport (:mod:`etctl.runtime._transport`).

The verbs are one class here: construction, reads and watches, writes (create, replace, patch,
delete) and the pod subresources (``exec``, ``logs``). What each verb puts on the wire is in
:mod:`etctl.runtime._requests`, where it goes in :mod:`etctl.runtime._addressing`, attempts and
retries in :mod:`etctl.runtime._caller` and :mod:`etctl.runtime._retry`, the HTTP plumbing in
:mod:`etctl.runtime._transport`, watch decoding in :mod:`etctl.runtime._watch` and the exec
protocol in :mod:`etctl.runtime._exec`.

Each write says whether repeating it is safe (:class:`~etctl.runtime._retry.RetrySafety`), and the
caller retries only what may be retried: a create is retried only when the server provably did not
act, a JSON patch only when it starts with a ``test`` op, and a 409 never; a write of leader-only
work first checks its fence (:mod:`etctl.runtime._fence`). ``exec`` runs a command over the
remote-command WebSocket protocols under one hard timeout for the whole exchange, retrying the
connection only while the command provably never started; a non-zero exit code is a result,
never an error.

Guarantees:

* every request has a timeout (connect and total from :class:`ClientOptions`); a watch has a connect
  timeout and a read-idle timeout, so no call can hang forever;
* every non-2xx answer raises the matching :mod:`etctl.errors` class (``Status`` body parsed,
  ``Retry-After`` honoured); no HTTP answer raises :class:`~etctl.errors.TransportError`, or its
  subclass :class:`~etctl.errors.RequestNotSent` when the connection was never established (the
  server provably did nothing);
* transient failures are retried with capped, jittered exponential backoff on the injected clock,
  where retrying is safe (the rules are in :mod:`etctl.runtime._retry`); a 409 never is;
* a 401 reloads the credentials once (exec plugin, token file) and repeats the request;
* watches use their own connection pool, so they never starve requests;
* each write of a named object (not a dry run) is told to the client's write observers
  (:meth:`Client.observe_writes`, :mod:`etctl.runtime._writes`) when it is sent and how it
  ended: that is how a manager's cache reads its own writes.

Retry rule for creates (client-go's for a POST): a create is retried only when the server provably
did not act, because the connection could not be opened or it answered 429 with a
``Retry-After``. A repeat after a lost answer could create a duplicate (``generateName``) or, for a
create that names its object, report :class:`~etctl.errors.AlreadyExists` for the caller's own
object, which would read as someone else's. So a lost answer is the caller's
:class:`~etctl.errors.TransportError`, the truth: the create may or may not have happened, and a
level-triggered caller finds out on its next look.

A delete whose answer was lost and whose repeat finds the object gone returns ``None``: the object
is gone, which is what was asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any

from etctl.errors import ConfigError, NotFound, TransportError
from etctl.runtime import _objects as objects
from etctl.runtime import _requests as wire
from etctl.runtime._addressing import namespace_for, path_for
from etctl.runtime._caller import Caller
from etctl.runtime._client_options import ClientOptions
from etctl.runtime._exchange import HttpResponse, HttpTransport, Upgrades
from etctl.runtime._exec import PROTOCOLS, ExecResult, ExecSession
from etctl.runtime._fence import check_fence, current_fence
from etctl.runtime._kubeconfig import (
    ClusterConfig,
    in_cluster_available,
    load_in_cluster,
    load_kubeconfig,
)
from etctl.runtime._objects import KubeObject, ObjectView
from etctl.runtime._requests import ObjectList, PatchType, PropagationPolicy
from etctl.runtime._resources import PODS, Resource
from etctl.runtime._retry import RetryPolicy, RetrySafety
from etctl.runtime._transport import Timeout, Transport
from etctl.runtime._watch import WatchEvent, WatchEventType, WatchIdleTimeout, WatchStream
from etctl.runtime._websocket import WebSocket
from etctl.runtime._writes import WriteFlight, WriteObserver, WriteObservers

_Objects = list[KubeObject]
_LIST = list
_OBSERVED_SUBRESOURCES = (None, "status")
_Pairs = list[tuple[str, str]]

__all__ = [
    "Client",
    "ClientOptions",
    "ExecResult",
    "ObjectList",
    "PatchType",
    "PropagationPolicy",
    "RetryPolicy",
    "WatchEvent",
    "WatchEventType",
    "WatchIdleTimeout",
    "WatchStream",
]


class Client:
    """An asynchronous client of one Kubernetes API server.

    Open one with ``async with Client.connect() as client:`` (it closes on exit), or build it with
    :meth:`from_kubeconfig`, :meth:`in_cluster` or :meth:`auto` (inside a running event loop) and
    close it with :meth:`close`.

    Requests go through an :class:`~etctl.runtime.HttpTransport` (the transport seam,
    :mod:`etctl.runtime._exchange`): by default etctl's own HTTP/1.1 to ``cluster``; a test passes
    ``transport=`` (``etctl.testing.MockTransport``) and answers the requests itself, with no
    server and no cluster.

    Args:
        cluster: the resolved connection (needed unless ``transport`` is given).
        options: timeouts, retries and identity.
        transport: where requests go instead of the cluster's own connections.

    Raises:
        ConfigError: neither a cluster nor a transport was given.
    """

    def __init__(
        self,
        cluster: ClusterConfig | None = None,
        *,
        options: ClientOptions | None = None,
        transport: HttpTransport | None = None,
    ) -> None:
        self.options = options or ClientOptions()
        self.cluster = cluster
        if transport is None:
            if cluster is None:
                msg = "a client needs a cluster to connect to, or a transport"
                raise ConfigError(msg)
            transport = Transport(
                cluster,
                user_agent=self.options.user_agent,
                pool_size=self.options.pool_size,
                watch_pool_size=self.options.watch_pool_size,
                max_response_bytes=self.options.max_response_bytes,
                max_message_bytes=self.options.max_message_bytes,
            )
        self._caller = Caller(
            transport,
            policy=self.options.retry,
            clock=self.options.clock,
            timeout=Timeout(
                connect=self.options.connect_timeout, total=self.options.request_timeout
            ),
        )
        self._observers = WriteObservers()

    # -- construction

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | os.PathLike[str] | None = None,
        context: str | None = None,
        *,
        options: ClientOptions | None = None,
    ) -> Client:
        """A client for a kubeconfig context (``None``: ``$KUBECONFIG`` or ``~/.kube/config``).

        Raises:
            ConfigError: no such file or context, or the file is unusable.
        """
        opts = options or ClientOptions()
        return cls(await load_kubeconfig(path, context, clock=opts.clock), options=opts)

    @classmethod
    async def in_cluster(cls, *, options: ClientOptions | None = None) -> Client:
        """A client for the pod's service account.

        Raises:
            ConfigError: not running in a pod, or the token or CA file is missing.
        """
        opts = options or ClientOptions()
        return cls(load_in_cluster(clock=opts.clock), options=opts)

    @classmethod
    async def auto(
        cls, *, context: str | None = None, options: ClientOptions | None = None
    ) -> Client:
        """A client for wherever this runs.

        In-cluster when the service-account environment is present and no context is named, else
        the kubeconfig of ``$KUBECONFIG`` or ``~/.kube/config``.
        """
        if in_cluster_available() and context is None:
            return await cls.in_cluster(options=options)
        return await cls.from_kubeconfig(None, context, options=options)

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls,
        kubeconfig: str | os.PathLike[str] | None = None,
        *,
        context: str | None = None,
        options: ClientOptions | None = None,
    ) -> AsyncIterator[Client]:
        """Connect for the duration of an ``async with`` block.

        With a ``kubeconfig`` path, that file's context (``context``, or its current one);
        without, wherever this runs (:meth:`auto`: in-cluster in a pod, else ``$KUBECONFIG`` or
        ``~/.kube/config``).

        Raises:
            ConfigError: no usable configuration.
        """
        if kubeconfig is not None:
            client = await cls.from_kubeconfig(kubeconfig, context, options=options)
        else:
            client = await cls.auto(context=context, options=options)
        async with client:
            yield client

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every connection pool."""
        await self._caller.transport.close()

    @property
    def host(self) -> str:
        """The API server URL (``""`` for a client on a transport of its own)."""
        return self.cluster.host if self.cluster is not None else ""

    def observe_writes(self, observer: WriteObserver) -> Callable[[], None]:
        """Tell ``observer`` of this client's writes from now on (see :mod:`._writes`).

        Returns:
            A function that stops telling it.
        """
        return self._observers.add(observer)

    async def _observed(
        self, flight: WriteFlight | None, sending: Awaitable[HttpResponse]
    ) -> HttpResponse:
        """Await a write, telling its flight (if any) how it ended."""
        if flight is None:
            return await sending
        try:
            raw = await sending
        except BaseException:
            flight.failed()
            raise
        flight.succeeded(lambda: wire.decode_object(raw))
        return raw

    # -- reads

    async def get(self, res: Resource, name: str, *, namespace: str | None = None) -> KubeObject:
        """Read one object.

        Raises:
            NotFound: no such object (or namespace).
        """
        path = path_for(res, namespace_for(res, namespace), name)
        return wire.decode_object(await self._caller.send("GET", path))

    async def get_subresource(
        self, res: Resource, name: str, subresource: str, *, namespace: str | None = None
    ) -> KubeObject:
        """Read a subresource of one object (``status``, ``scale``)."""
        path = path_for(res, namespace_for(res, namespace), name, subresource)
        return wire.decode_object(await self._caller.send("GET", path))

    async def pages(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
    ) -> AsyncGenerator[ObjectList, None]:
        """List page by page (``limit`` objects each), following ``continue`` tokens.

        Each page is fetched with retries. ``resource_version`` applies to the first page; the
        next pages continue the same snapshot.

        Raises:
            Gone: a continue token expired (the snapshot is too old): list again from scratch.
        """
        path = path_for(res, namespace)
        token = ""
        while True:
            query = wire.list_query(
                label_selector=label_selector,
                field_selector=field_selector,
                limit=limit,
                resource_version=resource_version,
                continue_token=token,
            )
            page = wire.list_page(
                res, wire.decode_object(await self._caller.send("GET", path, query=query))
            )
            yield page
            if not page.continue_token:
                return
            token = page.continue_token

    async def list(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = 500,
        resource_version: str | None = None,
    ) -> ObjectList:
        """List every matching object (all pages); ``namespace=None`` lists all namespaces.

        Raises:
            Gone: a continue token expired mid-way; nothing partial is returned.
        """
        items: _Objects = []
        version = ""
        async for page in self.pages(
            res,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            resource_version=resource_version,
        ):
            items.extend(page.items)
            version = version or page.resource_version
        return ObjectList(items, version)

    def watch(
        self,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        send_initial_events: bool | None = None,
        idle_timeout: float | None = None,
    ) -> AbstractAsyncContextManager[WatchStream]:
        """Watch changes: ``async with client.watch(...) as stream: async for event in stream``.

        The start is retried like a read; once events flow, failures end the stream:
        :class:`~etctl.errors.Gone` for an expired ``resource_version`` (relist),
        :class:`WatchIdleTimeout` after ``idle_timeout`` seconds of silence (default
        ``options.watch_idle_timeout``), :class:`~etctl.errors.TransportError` for a broken
        connection. The server ending the watch (``timeout_seconds``) ends the iteration.

        ``send_initial_events=True`` asks for the streaming list (synthetic ADDED events, then a
        bookmark annotated ``k8s.io/initial-events-end``); it brings ``resourceVersionMatch=
        NotOlderThan`` and bookmarks, which the API requires with it.
        """
        query = wire.watch_query(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events,
        )
        ns = namespace if namespace and res.namespaced else None
        description = f"{res} in {ns}" if ns else str(res)
        idle = idle_timeout or self.options.watch_idle_timeout
        return self._watch(path_for(res, ns), query, description, idle)

    @asynccontextmanager
    async def _watch(
        self, path: str, query: _Pairs, description: str, idle: float
    ) -> AsyncIterator[WatchStream]:
        timeout = Timeout(connect=self.options.connect_timeout, read=idle)
        response = await self._caller.open_stream(path, query=query, timeout=timeout)
        stream = WatchStream(
            response,
            description=description,
            idle_timeout=idle,
            max_line_bytes=self.options.max_line_bytes,
        )
        try:
            yield stream
        finally:
            stream.close()

    # -- writes

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
            TransportError: the answer was lost: the object may have been created.
        """
        ns = namespace_for(res, namespace, obj)
        name = objects.name(obj)
        flight = None if dry_run else self._observers.start(res, ns, name)
        sending = self._caller.send(
            "POST",
            path_for(res, ns),
            query=wire.write_query(dry_run=dry_run, field_manager=field_manager),
            body=wire.typed(res, obj),
            safety=RetrySafety.UNSENT,
        )
        return wire.decode_object(await self._observed(flight, sending))

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
        ns = namespace_for(res, namespace, obj)
        name = objects.name(obj)
        flight = None if dry_run else self._observers.start(res, ns, name)
        sending = self._caller.send(
            "PUT",
            path_for(res, ns, name, sub),
            query=wire.write_query(dry_run=dry_run, field_manager=field_manager),
            body=wire.typed(res, obj),
        )
        return wire.decode_object(await self._observed(flight, sending))

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
        ns = namespace_for(res, namespace)
        observed = not dry_run and subresource in _OBSERVED_SUBRESOURCES
        flight = self._observers.start(res, ns, name) if observed else None
        sending = self._caller.send(
            "PATCH",
            path_for(res, ns, name, subresource),
            query=wire.write_query(dry_run=dry_run, field_manager=field_manager, force=force),
            body=body,
            content_type=patch_type.value,
            safety=safety,
        )
        return wire.decode_object(await self._observed(flight, sending))

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
        ns = namespace_for(res, namespace)
        query, body = wire.delete_options(
            propagation_policy=propagation_policy,
            grace_period_seconds=grace_period_seconds,
            preconditions=preconditions,
            dry_run=dry_run,
        )
        uncertain: list[bool] = []
        flight = None if dry_run else self._observers.start(res, ns, name, delete=True)
        sending = self._caller.send(
            "DELETE", path_for(res, ns, name), query=query, body=body, uncertain=uncertain
        )
        try:
            raw = await sending
        except NotFound:
            if not uncertain:
                if flight is not None:
                    flight.failed()
                raise
            if flight is not None:
                flight.succeeded(None)  # gone, which is what was asked
            return None
        except BaseException:
            if flight is not None:
                flight.failed()
            raise
        if flight is not None:
            flight.succeeded(lambda: wire.decode_object(raw))
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

    # -- pod subresources

    async def exec(
        self,
        namespace: str,
        pod: str,
        command: Sequence[str],
        *,
        container: str | None = None,
        stdin: bytes | None = None,
        timeout: float,
    ) -> ExecResult:
        """Run ``command`` in a pod's container and wait for it to exit.

        Args:
            namespace: the pod's namespace.
            pod: the pod's name.
            command: the program and its arguments (no shell unless you run one).
            container: the container (required when the pod has several).
            stdin: bytes fed to the command's standard input (closed afterwards where the server
                speaks ``v5.channel.k8s.io``).
            timeout: seconds for the whole exchange, connection included.

        The connection is retried with backoff (the client's retry policy, on its clock) while
        the command provably never started: the connection could not be opened, or the server
        answered 429 or 5xx instead of switching protocols. Nothing else is repeated, so a command
        runs at most once per call.

        Returns:
            stdout, stderr and the exit code (a non-zero exit code is a result, not an error).

        Raises:
            ExecFailed: the stream ended with a failure instead of an exit code (the runtime could
                not start the command, or lost it): the command may have run.
            ApiError: any other: the upgrade was refused (no such pod, 403, or a 429/5xx that
                outlasted the retries): the command never ran.
            RequestNotSent: the connection could not be opened: the command never ran.
            Fenced: leader-only work whose fence lapsed (nothing was sent).
            TransportError: the answer was lost, the stream broke or ``timeout`` passed: the
                command may have run, its outcome is unknown.
        """
        if not command:
            msg = "exec needs a command"
            raise ValueError(msg)
        query = [("command", part) for part in command]
        if container:
            query.append(("container", container))
        query += [
            ("stdin", wire.flag(stdin is not None)),
            ("stdout", "true"),
            ("stderr", "true"),
            ("tty", "false"),
        ]
        path = path_for(PODS, namespace, pod, "exec")
        transport = self._caller.transport
        if not isinstance(transport, Upgrades):
            msg = "exec needs a transport that opens websockets; this client's does not"
            raise ConfigError(msg)

        what = f"exec in {namespace}/{pod}"
        fenced = partial(check_fence, what) if current_fence() is not None else None

        async def connect() -> WebSocket:
            check_fence(what)
            return await transport.ws_connect(
                path, query=query, protocols=PROTOCOLS, timeout=timeout, before_send=fenced
            )

        try:
            async with asyncio.timeout(timeout):
                ws = await self._caller.upgrade(connect, what=f"exec {path}")
                async with ws:
                    session = ExecSession(ws, stdin=stdin, limit=self.options.max_response_bytes)
                    return await session.run()
        except TimeoutError as exc:
            msg = f"exec in {namespace}/{pod} did not finish within {timeout} s"
            raise TransportError(msg) from exc

    async def logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> str:
        """A container's log so far (not followed), as text."""
        query: _Pairs = []
        if container:
            query.append(("container", container))
        if tail_lines is not None:
            query.append(("tailLines", str(tail_lines)))
        if since_seconds is not None:
            query.append(("sinceSeconds", str(since_seconds)))
        if previous:
            query.append(("previous", "true"))
        if timestamps:
            query.append(("timestamps", "true"))
        path = path_for(PODS, namespace, pod, "log")
        raw = await self._caller.send("GET", path, query=query, accept="*/*")
        return raw.body.decode("utf-8", "replace")
