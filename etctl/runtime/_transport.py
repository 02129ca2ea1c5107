"""The client's HTTP plumbing: aiohttp sessions configured once from kubernetes_asyncio's settings.

kubernetes_asyncio is the configuration and credentials layer (kubeconfig, in-cluster, exec
plugins, token refresh: :mod:`etctl.runtime._kubeconfig`); the request path is aiohttp's alone.
Everything kubernetes_asyncio's ``ApiClient`` worked out for every request is worked out here once,
when the transport is built: the TLS context, the proxy (the ``Configuration``'s, else the
environment's ``*_proxy``/``no_proxy`` and ``~/.netrc``, read once rather than in an executor for
every request, which is what the inherited ``trust_env=True`` did), and the default headers. Per
request there is only the credential (read through the ``Configuration``, whose refresh hook keeps
it fresh), the URL, and the body, encoded by orjson.

Two connection pools, never one: requests go through one session and watches through another, so a
few hundred long-lived watches can never starve the pool that short requests need (each open watch
holds a connection for its whole life). A third, for exec's websockets, is created on first use.

Invariants:

* every request carries an ``aiohttp.ClientTimeout``: connect plus total for requests, connect plus
  read-idle for streams; nothing here can wait forever;
* bodies are read raw and decoded by the caller with orjson; no model classes are ever built;
* every attempt increments ``rest_client_requests_total``: the status code, or ``<error>`` when no
  HTTP answer arrived (client-go's convention);
* a connection that could not be established raises :class:`~etctl.errors.RequestNotSent` (the
  server never saw the request, so even a non-idempotent write may be retried); any other failure
  to get an answer raises plain :class:`~etctl.errors.TransportError` (the server may have acted).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import orjson
from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
from prometheus_client import Counter
from yarl import URL

from etctl.errors import ApiError, RequestNotSent, TransportError, api_error_from_status
from etctl.runtime._kubeconfig import ClusterConfig
from etctl.runtime._metrics import REST_CLIENT_REQUESTS

__all__ = ["Query", "RawResponse", "Transport", "encode_body", "error_from_response"]

Query = Sequence[tuple[str, str]]
"""Query parameters in order; a key may repeat (exec's ``command``)."""

_BEARER = "BearerToken"
_NOT_CONNECTED = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
"""Failures before the request left: the server never saw it."""
_NO_ANSWER = (aiohttp.ClientError, TimeoutError, OSError)
"""Every failure to get an HTTP answer (the connection failures included)."""
_ERROR_BODY_LIMIT = 64 * 1024
_READ_BUFFER = 2**21
"""Watch events of large objects exceed aiohttp's default read buffer (etcd allows 1.5 MiB)."""
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS  # json.dumps turns int keys into strings too


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


def _as_json(value: Any) -> Any:
    """What orjson cannot encode natively: other mappings and sequences, as objects and arrays."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    msg = f"{type(value).__name__} is not JSON serializable"
    raise TypeError(msg)


def encode_body(body: Any) -> bytes:
    """A request body as compact JSON (datetimes in ISO 8601, as kubernetes_asyncio sent them).

    Raises:
        TypeError: a value JSON cannot represent.
    """
    return orjson.dumps(body, default=_as_json, option=_JSON_OPTIONS)


def _host_label(url: str) -> str:
    netloc = urlsplit(url).netloc
    return netloc.rpartition("@")[2]


def _ssl_context(config: Any) -> ssl.SSLContext:
    """The TLS settings of a ``Configuration``, as kubernetes_asyncio's REST client builds them."""
    context = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if config.cert_file:
        context.load_cert_chain(config.cert_file, keyfile=config.key_file)
    if not config.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


@dataclass(frozen=True, slots=True)
class _Route:
    """How requests to one URL reach the server: through a proxy or not.

    Attributes:
        options: the proxy keyword arguments of an aiohttp request (none: a direct connection).
        headers: headers every request on this route carries (a plain-HTTP proxy's credentials).
    """

    options: Mapping[str, Any]
    headers: Mapping[str, str]

    @classmethod
    def to(cls, url: URL, config: Any) -> _Route:
        """The route to ``url``: the configured proxy, else the environment's (read now)."""
        proxy_headers = dict(config.proxy_headers or {})
        auth: aiohttp.BasicAuth | None = None
        if config.proxy:
            proxy = URL(config.proxy)
        else:
            try:
                proxy, auth = get_env_proxy_for_url(url)
            except LookupError:
                return cls({}, {})
        headers: dict[str, str] = {}
        if auth is not None:
            # A plain-HTTP request carries the proxy's credentials itself; a TLS one sends them
            # with the CONNECT that opens its tunnel (what aiohttp does with ``proxy_auth``).
            target = headers if url.scheme in ("http", "ws") else proxy_headers
            target["Proxy-Authorization"] = auth.encode()
        return cls({"proxy": proxy, "proxy_headers": proxy_headers or None}, headers)


def _netrc_authorization(host: str | None) -> str | None:
    """The ``Authorization`` header of ``host``'s ``~/.netrc`` (or ``$NETRC``) entry, if any."""
    netrc = netrc_from_env()
    if netrc is None or host is None:
        return None
    try:
        return basicauth_from_netrc(netrc, host).encode()
    except LookupError:
        return None


def _session(limit: int, context: ssl.SSLContext) -> aiohttp.ClientSession:
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, ssl=context),
        read_bufsize=_READ_BUFFER,
    )
    # aiohttp silently resends an idempotent request once when a kept-alive connection drops; that
    # attempt would escape the retry policy, its bookkeeping of uncertain outcomes (a DELETE whose
    # answer was lost) and the per-attempt metrics.
    session._retry_connection = False
    return session


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
        config = cluster.configuration
        self._config = config
        self._base = cluster.host
        self._server_hostname: str | None = config.tls_server_name or None
        self._ssl = _ssl_context(config)
        base = URL(self._base)
        self._route = _Route.to(base, config)
        ws_base = base.with_scheme("wss" if base.scheme == "https" else "ws")
        self._ws_route = _Route.to(ws_base, config)
        # A credential from ~/.netrc is sent only when the configuration has no token of its own
        # (aiohttp, asked to send both, refused the request).
        self._netrc = None if _BEARER in config.api_key else _netrc_authorization(base.host)
        self._user_agent = user_agent
        self._ws_pool_size: int = config.connection_pool_maxsize
        self._api = _session(pool_size, self._ssl)
        self._watch_api = _session(watch_pool_size, self._ssl)
        self._ws_api: aiohttp.ClientSession | None = None
        self._counters: dict[tuple[int | str, str], Counter] = {}

    def count(self, code: int | str, method: str) -> None:
        """Record one attempt in ``rest_client_requests_total``."""
        counter = self._counters.get((code, method))
        if counter is None:
            counter = REST_CLIENT_REQUESTS.labels(code=str(code), method=method, host=self.host)
            self._counters[code, method] = counter
        counter.inc()

    async def _headers(
        self, route: _Route, accept: str | None, content_type: str | None
    ) -> dict[str, str]:
        """The headers of one request, with the current credential (refreshed when due)."""
        headers = {"User-Agent": self._user_agent, **route.headers}
        if accept:
            headers["Accept"] = accept
        if content_type:
            headers["Content-Type"] = content_type
        config = self._config
        if _BEARER in config.api_key:
            # Runs the credential's refresh hook first, as kubernetes_asyncio does per request.
            token = await config.get_api_key_with_prefix(_BEARER)
            if token:
                headers["Authorization"] = token
        elif self._netrc:
            headers["Authorization"] = self._netrc
        return headers

    def _url(self, path: str, query: Query) -> URL:
        # Built already encoded: object names cannot hold '/' or '%' (apimachinery refuses them)
        # and the query is urlencoded, so yarl need not parse and quote every request's URL.
        text = f"{self._base}{path}?{urlencode(query)}" if query else self._base + path
        return URL(text, encoded=True)

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
        data = None
        if body is not None:
            content_type = content_type or "application/json"
            # A ready payload: aiohttp would otherwise look its type up in a registry per request.
            data = aiohttp.payload.BytesPayload(encode_body(body), content_type=content_type)
        try:
            headers = await self._headers(self._route, accept, content_type)
            response = await self._api.request(
                method,
                self._url(path, query),
                headers=headers,
                data=data,
                timeout=timeout,
                server_hostname=self._server_hostname,
                **self._route.options,
            )
            async with response:
                body_bytes = await response.read()
        except _NO_ANSWER as exc:
            raise self._unanswered(exc, f"{method} {path}", method) from exc
        self.count(response.status, method)
        return RawResponse(response.status, response.headers, body_bytes)

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
            response = await self._watch_api.get(
                self._url(path, query),
                headers=await self._headers(self._route, "application/json", None),
                timeout=timeout,
                server_hostname=self._server_hostname,
                **self._route.options,
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
            self._ws_api = _session(self._ws_pool_size, self._ssl)
        base = self._base.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        try:
            headers = await self._headers(self._ws_route, None, None)
            ws: aiohttp.ClientWebSocketResponse = await self._ws_api.ws_connect(
                base + path,
                params=list(query),
                protocols=tuple(protocols),
                headers=headers,
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=timeout),
                autoping=True,
                max_msg_size=0,
                server_hostname=self._server_hostname,
                **self._ws_route.options,
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
