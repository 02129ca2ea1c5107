"""The Kubernetes API client: plain-dict objects over kubernetes_asyncio's transport.

One :class:`Client` talks to one cluster, for any resource named by a
:class:`~etctl.runtime.Resource`. Requests and answers are the API's JSON as plain dicts
(:data:`~etctl.runtime.KubeObject`), decoded with orjson from the raw body;
kubernetes_asyncio's generated model classes are never built (they cost several times the memory
and the decode time). This module and its private helpers are the only importers of
kubernetes_asyncio.

The client is one class in a few modules, one concept each: construction and the reads and
watches here, the write verbs in :mod:`etctl.runtime._writes`, the pod subresources (``exec``,
``log``) in :mod:`etctl.runtime._podverbs`, request addressing in :mod:`etctl.runtime._addressing`,
and :class:`ClientOptions` in :mod:`etctl.runtime._client_options` (all importable from here).

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
* watches use their own connection pool, so they never starve requests.

Retry rule for creates: a create that names its object (``metadata.name``) is retried like an
idempotent request, because a repeat cannot make a second object. If the first attempt's answer was
lost, the repeat may raise :class:`~etctl.errors.AlreadyExists` for the caller's own object: the
name is taken either way, and callers that own deterministic names treat AlreadyExists as "exists"
and read the object. A create that relies on ``generateName`` is retried only when the server
provably did not act (no connection, or 429), because a repeat could create a duplicate.

A delete whose answer was lost and whose repeat finds the object gone returns ``None``: the object
is gone, which is what was asked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import aiohttp

from etctl.runtime import _requests as wire
from etctl.runtime._addressing import namespace_for, path_for
from etctl.runtime._caller import Caller
from etctl.runtime._client_options import ClientOptions
from etctl.runtime._exec import ExecResult
from etctl.runtime._kubeconfig import (
    ClusterConfig,
    in_cluster_available,
    load_in_cluster,
    load_kubeconfig,
)
from etctl.runtime._objects import KubeObject
from etctl.runtime._podverbs import PodVerbs
from etctl.runtime._requests import ObjectList, PatchType, PropagationPolicy
from etctl.runtime._resources import Resource
from etctl.runtime._retry import RetryPolicy
from etctl.runtime._transport import Transport
from etctl.runtime._watch import WatchEvent, WatchEventType, WatchIdleTimeout, WatchStream
from etctl.runtime._writes import WriteVerbs

_Objects = list[KubeObject]
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


class Client(WriteVerbs, PodVerbs):
    """An asynchronous client of one Kubernetes API server.

    Open one with ``async with Client.connect() as client:`` (it closes on exit), or build it with
    :meth:`from_kubeconfig`, :meth:`in_cluster` or :meth:`auto` (inside a running event loop) and
    close it with :meth:`close`.

    Args:
        cluster: the resolved connection.
        options: timeouts, retries and identity.
    """

    def __init__(self, cluster: ClusterConfig, *, options: ClientOptions | None = None) -> None:
        self.options = options or ClientOptions()
        self.cluster = cluster
        transport = Transport(
            cluster,
            user_agent=self.options.user_agent,
            pool_size=self.options.pool_size,
            watch_pool_size=self.options.watch_pool_size,
        )
        self._caller = Caller(
            transport,
            policy=self.options.retry,
            clock=self.options.clock,
            timeout=aiohttp.ClientTimeout(
                total=self.options.request_timeout, sock_connect=self.options.connect_timeout
            ),
        )

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
        """The API server URL."""
        return self.cluster.host

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
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.options.connect_timeout, sock_read=idle
        )
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
