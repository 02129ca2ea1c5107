"""The client's HTTP plumbing on kubernetes_asyncio's aiohttp transport.

Two connection pools, never one: requests go through one ``ApiClient`` and watches through another,
so a few hundred long-lived watches can never starve the pool that short requests need (each open
watch holds a connection for its whole life). A third, ``WsApiClient``, is created on first use for
exec. All of them share one ``Configuration``, so a refreshed credential reaches every pool.

Invariants:

* every request carries an ``aiohttp.ClientTimeout``: connect plus total for requests, connect plus
  read-idle for streams; nothing here can wait forever;
* bodies are read raw (``_preload_content=False``) and decoded by the caller with orjson;
  kubernetes_asyncio's generated models are never built;
* every attempt increments ``rest_client_requests_total``: the status code, or ``<error>`` when no
  HTTP answer arrived (client-go's convention);
* a connection that could not be established raises :class:`~etctl.errors.RequestNotSent` (the
  server never saw the request, so even a non-idempotent write may be retried); any other failure
  to get an answer raises plain :class:`~etctl.errors.TransportError` (the server may have acted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.stream import WsApiClient

from etctl.errors import ApiError, RequestNotSent, TransportError, api_error_from_status
from etctl.runtime._kubeconfig import ClusterConfig
from etctl.runtime._metrics import REST_CLIENT_REQUESTS

__all__ = ["Query", "RawResponse", "Transport", "error_from_response"]

Query = Sequence[tuple[str, str]]
"""Query parameters in order; a key may repeat (exec's ``command``)."""

_AUTH = ["BearerToken"]
_NOT_CONNECTED = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
"""Failures before the request left: the server never saw it."""
_NO_ANSWER = (aiohttp.ClientError, TimeoutError, OSError)
"""Every failure to get an HTTP answer (the connection failures included)."""
_ERROR_BODY_LIMIT = 64 * 1024


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A complete HTTP answer: status, headers and the undecoded body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP-date: the API server never sends one, so it is not worth parsing
    return seconds if seconds >= 0 else None


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> ApiError:
    """The :class:`~etctl.errors.ApiError` for a non-2xx answer (its ``Status`` body parsed)."""
    parsed: Any = None
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or parsed.get("kind") not in (None, "Status"):
        text = body[:_ERROR_BODY_LIMIT].decode("utf-8", "replace").strip()
        parsed = {"message": text or f"HTTP {status}"}
    return api_error_from_status(status, parsed, retry_after=_retry_after(headers))


def _host_label(url: str) -> str:
    netloc = urlsplit(url).netloc
    return netloc.rpartition("@")[2]


class Transport:
    """Requests, streams and websockets against one cluster, each with a timeout.

    Args:
        cluster: the resolved connection (URL, TLS, credentials).
        user_agent: the ``User-Agent`` header.
        pool_size: the request pool's connection limit.
        watch_pool_size: the watch pool's connection limit (0: unlimited).
    """

    def __init__(
        self, cluster: ClusterConfig, *, user_agent: str, pool_size: int, watch_pool_size: int
    ) -> None:
        self.cluster = cluster
        self.host = _host_label(cluster.host)
        self._user_agent = user_agent
        config = cluster.configuration
        # RESTClientObject reads the pool size once, in its constructor.
        saved = config.connection_pool_maxsize
        try:
            config.connection_pool_maxsize = pool_size
            self._api = ApiClient(config)
            config.connection_pool_maxsize = watch_pool_size
            self._watch_api = ApiClient(config)
        finally:
            config.connection_pool_maxsize = saved
        for api in (self._api, self._watch_api):
            api.user_agent = user_agent
            # aiohttp silently resends an idempotent request once when a kept-alive connection
            # drops; that attempt would escape the retry policy, its bookkeeping of uncertain
            # outcomes (a DELETE whose answer was lost) and the per-attempt metrics.
            api.rest_client.pool_manager._retry_connection = False
        self._ws_api: Any = None

    def count(self, code: int | str, method: str) -> None:
        """Record one attempt in ``rest_client_requests_total``."""
        REST_CLIENT_REQUESTS.labels(code=str(code), method=method, host=self.host).inc()

    def _unanswered(self, exc: BaseException, what: str, method: str) -> TransportError:
        """Count an attempt that got no HTTP answer; the error saying whether it was sent."""
        self.count("<error>", method)
        if isinstance(exc, _NOT_CONNECTED):
            return RequestNotSent(f"{what}: cannot connect to {self.host}: {exc}")
        return TransportError(f"{what}: no answer from {self.host}: {exc!r}")

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str | None = None,
        accept: str = "application/json",
        timeout: aiohttp.ClientTimeout,
    ) -> RawResponse:
        """Send one request and read the whole answer.

        Raises:
            RequestNotSent: the connection could not be established.
            TransportError: no complete answer (reset, timeout, truncated body).
        """
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            response = await self._api.call_api(
                path,
                method,
                query_params=list(query),
                header_params=headers,
                body=body,
                auth_settings=_AUTH,
                _preload_content=False,
                _request_timeout=timeout,
            )
            async with response:
                data = await response.read()
        except _NO_ANSWER as exc:
            raise self._unanswered(exc, f"{method} {path}", method) from exc
        self.count(response.status, method)
        return RawResponse(response.status, response.headers, data)

    async def open_stream(
        self, path: str, *, query: Query, timeout: aiohttp.ClientTimeout
    ) -> aiohttp.ClientResponse:
        """Start a streaming GET on the watch pool; the caller owns (and must close) the response.

        Raises:
            ApiError: the server refused the stream (its status mapped).
            RequestNotSent: the connection could not be established.
            TransportError: no answer in time.
        """
        try:
            response: aiohttp.ClientResponse = await self._watch_api.call_api(
                path,
                "GET",
                query_params=list(query),
                header_params={"Accept": "application/json"},
                auth_settings=_AUTH,
                _preload_content=False,
                _request_timeout=timeout,
            )
        except _NO_ANSWER as exc:
            raise self._unanswered(exc, f"WATCH {path}", "GET") from exc
        self.count(response.status, "GET")
        if response.status == 200:
            return response
        try:
            body = await response.content.read(_ERROR_BODY_LIMIT)
        except (aiohttp.ClientError, TimeoutError, OSError):
            body = b""
        finally:
            response.close()
        raise error_from_response(response.status, response.headers, body)

    async def ws_connect(
        self, path: str, *, query: Query, protocols: Sequence[str], timeout: float
    ) -> aiohttp.ClientWebSocketResponse:
        """Open a websocket (exec) on the websocket pool, authenticated like every request.

        Raises:
            ApiError: the server refused the upgrade (a 4xx/5xx instead of 101).
            RequestNotSent: the connection could not be established.
            TransportError: the handshake did not complete in time.
        """
        if self._ws_api is None:
            self._ws_api = WsApiClient(self.cluster.configuration)
            self._ws_api.user_agent = self._user_agent
        headers: dict[str, str] = dict(self._ws_api.default_headers)
        await self._ws_api.update_params_for_auth(headers, [], _AUTH)
        base = self.cluster.host.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        session: aiohttp.ClientSession = self._ws_api.rest_client.pool_manager
        try:
            ws = await session.ws_connect(
                base + path,
                params=list(query),
                protocols=tuple(protocols),
                headers=headers,
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=timeout),
                autoping=True,
                max_msg_size=0,
                server_hostname=self.cluster.configuration.tls_server_name,
                proxy=self.cluster.configuration.proxy,
            )
        except aiohttp.WSServerHandshakeError as exc:
            self.count(exc.status, "GET")
            # aiohttp drops the body of a refused upgrade, so the Status message is lost.
            message = f"{path}: the server refused the websocket upgrade (HTTP {exc.status})"
            raise api_error_from_status(exc.status, {"message": message}) from exc
        except _NO_ANSWER as exc:
            raise self._unanswered(exc, f"exec {path}", "GET") from exc
        self.count(101, "GET")
        return ws

    async def close(self) -> None:
        """Close every pool (idempotent)."""
        await self._api.close()
        await self._watch_api.close()
        if self._ws_api is not None:
            await self._ws_api.close()
            self._ws_api = None
