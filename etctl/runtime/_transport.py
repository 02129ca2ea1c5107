"""The client's HTTP plumbing: connection pools configured once from kubernetes_asyncio's settings.

kubernetes_asyncio is the configuration and credentials layer (kubeconfig, in-cluster, exec
plugins, token refresh: :mod:`etctl.runtime._kubeconfig`); the request path is etctl's own HTTP/1.1
(:mod:`etctl.runtime._http`). Everything kubernetes_asyncio's ``ApiClient`` worked out for every
request is worked out here once, when the transport is built: the TLS context, the proxy (the
``Configuration``'s, else the environment's ``*_proxy``/``no_proxy``, with credentials from its URL
or ``~/.netrc``), the ``~/.netrc`` credential of the server, and the fixed headers. Per request
there is only the credential (read through the ``Configuration``, whose refresh hook keeps it
fresh), the request line, and the body, encoded by orjson.

Two connection pools, never one: requests go through one and watches through another, so a few
hundred long-lived watches can never starve the pool that short requests need (each open watch
holds a connection for its whole life). A third, for exec's websockets, is created on first use.
Exec goes through the same proxy as every other request to the server (what client-go does).

Invariants:

* every request carries a :class:`~etctl.runtime._http.Timeout`: connect plus total for requests,
  connect plus read-idle for streams; nothing here can wait forever;
* bodies are read raw and decoded by the caller with orjson; no model classes are ever built;
* every attempt increments ``rest_client_requests_total``: the status code, or ``<error>`` when no
  HTTP answer arrived (client-go's convention);
* a connection that could not be established raises :class:`~etctl.errors.RequestNotSent` (the
  server never saw the request, so even a non-idempotent write may be retried); any other failure
  to get an answer raises plain :class:`~etctl.errors.TransportError` (the server may have acted);
* the request line and every header are built by :mod:`etctl.runtime._target`, which refuses
  (:class:`~etctl.errors.UnsafeRequest`, before anything is sent) what could end the line and begin
  another request; a credential that would smuggle one is a :class:`~etctl.errors.ConfigError`;
* an answer's body longer than ``max_response_bytes`` is refused as soon as that is known
  (:class:`~etctl.errors.ResponseTooLarge`), so no answer can balloon the process; an exec's
  websocket refuses messages over ``max_message_bytes``.
"""

from __future__ import annotations

import base64
import ipaddress
import netrc
import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, unquote, urlsplit

import orjson

from etctl.errors import (
    ApiError,
    ConfigError,
    RequestNotSent,
    ResponseTooLarge,
    TransportError,
    UnsafeRequest,
    api_error_from_status,
)
from etctl.runtime._exchange import HttpRequest, HttpResponse
from etctl.runtime._http import (
    Broken,
    Endpoint,
    NotConnected,
    Pool,
    Proxy,
    Stream,
    Timeout,
    TooLarge,
)
from etctl.runtime._kubeconfig import ClusterConfig
from etctl.runtime._metrics import REST_CLIENT_REQUESTS
from etctl.runtime._target import (
    Query,
    check_method,
    constant_header_line,
    header_line,
    request_target,
)
from etctl.runtime._websocket import WebSocket, accept_key, handshake_headers

if TYPE_CHECKING:
    from prometheus_client.metrics import Counter

__all__ = [
    "Query",
    "Stream",
    "Timeout",
    "Transport",
    "encode_body",
    "error_from_response",
]

_BEARER = "BearerToken"
_NO_ANSWER = (Broken, TimeoutError, OSError)
"""Failures to get an HTTP answer once the request may have been sent."""
_UNANSWERED = (NotConnected, *_NO_ANSWER)
"""Every failure to get an HTTP answer, the request sent or not."""
_ERROR_BODY_LIMIT = 64 * 1024
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS  # json.dumps turns int keys into strings too
_DEFAULT_PORTS = {"http": 80, "https": 443}
_JSON = "application/json"
_NO_BODY_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
"""Methods sent without ``Content-Length`` when they carry no body."""


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP-date: the API server never sends one, so it is not worth parsing
    return seconds if seconds >= 0 else None


_UNSTRUCTURED = {
    404: ("NotFound", "the server could not find the requested resource"),
}
"""client-go's reason and wording for an answer with no ``Status`` body, by code."""


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> ApiError:
    """The :class:`~etctl.errors.ApiError` for a non-2xx answer (its ``Status`` body parsed)."""
    parsed: Any = None
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or parsed.get("kind") not in (None, "Status"):
        # Not a Status (a proxy's page, Go's plain "404 page not found" for a group the server
        # does not serve): named by its code, as client-go names an unstructured answer.
        text = body[:_ERROR_BODY_LIMIT].decode("utf-8", "replace").strip()
        generic = _UNSTRUCTURED.get(status)
        if generic is None:
            parsed = {"message": text or f"HTTP {status}"}
        else:
            reason, wording = generic
            parsed = {"reason": reason, "message": f"{wording} ({text})" if text else wording}
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


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _netrc_authorization(host: str) -> str | None:
    """The ``Authorization`` header of ``host``'s ``$NETRC`` (else ``~/.netrc``) entry, if any.

    A missing or unreadable file means no entry, as for curl.
    """
    path = os.environ.get("NETRC") or str(Path.home() / ".netrc")
    try:
        entry = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if entry is None:
        return None
    login, _account, password = entry
    return _basic(login, password or "")


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


def _port(url: SplitResult) -> int:
    try:
        port = url.port
    except ValueError as exc:
        msg = f"bad port in {url.geturl()!r}"
        raise ConfigError(msg) from exc
    return port or _DEFAULT_PORTS.get(url.scheme, 443)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _split_port(entry: str) -> tuple[str, str]:
    """``host`` and ``port`` of ``host:port``, ``[v6]:port``, a bare IPv6 address or a name."""
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        return name, rest.removeprefix(":")
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, port
    return entry, ""


def _no_proxy_matches(entry: str, host: str, port: int) -> bool:
    """Whether one ``no_proxy`` entry covers ``host:port``, as Go's ``httpproxy`` reads it.

    An entry is ``*``, an IP address, a CIDR block, or a domain that also covers its subdomains
    (``example.com``, ``.example.com`` and ``*.example.com`` alike), each with an optional port.
    """
    entry = entry.strip().lower()
    if entry in ("", "*"):
        return entry == "*"
    address = _ip(host)
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
        return address is not None and address in network
    name, wanted_port = _split_port(entry)
    if wanted_port and wanted_port != str(port):
        return False
    if address is not None:
        return address == _ip(name)
    name = name.removeprefix("*").lstrip(".")
    return host == name or host.endswith("." + name)


def _environment_proxies(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``<scheme>_proxy`` variables of ``environ``, by scheme, as Python reads them.

    ``urllib.request.getproxies_environment``'s rules: any case is read, the lower-case variable
    wins, an empty lower-case one unsets the scheme, and ``HTTP_PROXY`` is ignored when
    ``REQUEST_METHOD`` says the process is a CGI script (CVE-2016-1000110). Read here because
    importing ``urllib.request`` for it would keep 0.3-0.5 MB in every operator; like client-go,
    only the environment is read (never a desktop's system proxy settings).
    """
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        lowered = name.lower()
        if value and lowered.endswith("_proxy"):
            proxies[lowered[:-6]] = value
    if "REQUEST_METHOD" in environ:
        proxies.pop("http", None)
    for name, value in environ.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name.lower()[:-6]] = value
            else:
                proxies.pop(name.lower()[:-6], None)
    return proxies


def _proxy_url(server: SplitResult, config: Any) -> str | None:
    """The configured proxy, else the environment's for the server (read now), else ``None``.

    ``no_proxy`` is read as client-go reads it (CIDR blocks included, which Python's own
    ``proxy_bypass`` does not understand), so an operator reaching the API server at its service
    IP bypasses a proxy that ``NO_PROXY=10.96.0.0/12`` says to bypass.
    """
    if config.proxy:
        return str(config.proxy)
    proxies = _environment_proxies(os.environ)
    proxy = proxies.get(server.scheme)
    if not proxy:
        return None
    host = (server.hostname or "").lower()
    entries = proxies.get("no", "").split(",")
    if any(_no_proxy_matches(entry, host, _port(server)) for entry in entries):
        return None
    return proxy


def _route(server: SplitResult, config: Any) -> tuple[Proxy | None, dict[str, str]]:
    """The proxy to ``server``, and headers every request through it carries.

    A plain-HTTP request carries the proxy's credentials itself; a TLS one sends them with the
    ``CONNECT`` that opens its tunnel. Credentials come from the proxy URL, else from ``~/.netrc``.
    """
    text = _proxy_url(server, config)
    if text is None:
        return None, {}
    proxy = urlsplit(text if "://" in text else f"http://{text}")
    if proxy.scheme not in ("http", "https") or not proxy.hostname:
        msg = f"unsupported proxy {proxy.scheme}://{proxy.hostname}: only http and https proxies"
        raise ConfigError(msg)
    headers = {str(k): str(v) for k, v in (config.proxy_headers or {}).items()}
    if proxy.username is not None:
        user, password = unquote(proxy.username), unquote(proxy.password or "")
        headers["Proxy-Authorization"] = _basic(user, password)
    elif "Proxy-Authorization" not in headers:
        found = _netrc_authorization(proxy.hostname)
        if found:
            headers["Proxy-Authorization"] = found
    tls = ssl.create_default_context() if proxy.scheme == "https" else None
    if server.scheme == "http":
        return Proxy(proxy.hostname, _port(proxy), tls), headers
    return Proxy(proxy.hostname, _port(proxy), tls, tuple(headers.items())), {}


def _configured_line(name: str, value: str) -> str:
    """A header line from the configuration (user agent, proxy headers), checked once."""
    try:
        return header_line(name, value)
    except UnsafeRequest as exc:
        raise ConfigError(str(exc)) from None


def _checked_credential(value: str) -> str:
    """The ``Authorization`` value, when it can be sent (the value itself is never shown)."""
    if not (value.isascii() and value.isprintable()):
        msg = (
            "the credential holds a line break, another control character or non-ASCII: "
            "refused, it would end the request's headers"
        )
        raise ConfigError(msg)
    return value


class Transport:
    """Requests, streams and websockets against one cluster, each with a timeout.

    Args:
        cluster: the resolved connection (URL, TLS, credentials).
        user_agent: the ``User-Agent`` header.
        pool_size: the request pool's connection limit.
        watch_pool_size: the watch pool's connection limit (0: unlimited).
        max_response_bytes: the longest answer body read whole (0: no limit).
        max_message_bytes: the longest websocket message accepted (0: no limit).

    Raises:
        ConfigError: the server URL or proxy cannot be used.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        user_agent: str,
        pool_size: int,
        watch_pool_size: int,
        max_response_bytes: int = 0,
        max_message_bytes: int = 0,
    ) -> None:
        self.cluster = cluster
        config = cluster.configuration
        self._config = config
        server = urlsplit(cluster.host)
        if server.scheme not in _DEFAULT_PORTS or not server.hostname:
            msg = f"the server URL {cluster.host!r} is not http(s)://host[:port]"
            raise ConfigError(msg)
        self.host = server.netloc.rpartition("@")[2]
        self._prefix = server.path.rstrip("/")
        tls = _ssl_context(config) if server.scheme == "https" else None
        proxy, route_headers = _route(server, config)
        self._endpoint = Endpoint(
            server.hostname,
            _port(server),
            tls,
            server_hostname=config.tls_server_name or None,
            proxy=proxy,
        )
        # Requests name the whole URL when a plain-HTTP proxy carries them.
        origin = f"{server.scheme}://{self.host}" if self._endpoint.absolute_form else ""
        self._target_prefix = origin + self._prefix
        fixed = {"Host": self.host, "User-Agent": user_agent, **route_headers}
        self._fixed = "".join(_configured_line(name, value) for name, value in fixed.items())
        # A credential from ~/.netrc is sent only when the configuration has no token of its own.
        self._netrc = None if _BEARER in config.api_key else _netrc_authorization(server.hostname)
        self._checked_token: str | None = None
        self._max_response = max_response_bytes
        self._max_message = max_message_bytes
        self.refused: str | None = None
        """The last credential the server answered 401 to (to refresh it once, not per request)."""
        self._ws_pool_size: int = config.connection_pool_maxsize
        self._api = Pool(self._endpoint, limit=pool_size)
        self._watch_api = Pool(self._endpoint, limit=watch_pool_size)
        self._ws_api: Pool | None = None
        self._counters: dict[tuple[int | str, str], Counter] = {}

    def count(self, code: int | str, method: str) -> None:
        """Record one attempt in ``rest_client_requests_total``."""
        counter = self._counters.get((code, method))
        if counter is None:
            counter = REST_CLIENT_REQUESTS.labels(code=str(code), method=method, host=self.host)
            self._counters[code, method] = counter
        counter.inc()

    async def _authorization(self) -> str | None:
        """The ``Authorization`` header's value, refreshed when due."""
        config = self._config
        if _BEARER in config.api_key:
            # Runs the credential's refresh hook first, as kubernetes_asyncio does per request.
            token: str | None
            if config.refresh_api_key_hook is None and not config.api_key_prefix:
                token = config.api_key[_BEARER]  # what it would return, without its coroutine
            else:
                token = await config.get_api_key_with_prefix(_BEARER)
            if token and token is not self._checked_token:
                self._checked_token = _checked_credential(token)
            return token or None
        return self._netrc

    async def _head(
        self, method: str, path: str, query: Query, extra: str
    ) -> tuple[bytes, str | None]:
        """The request line and headers, ending blank line included, and the credential sent.

        ``extra`` is the request's own header lines, each built by :mod:`._target`.

        Raises:
            UnsafeRequest: the method, the target or a header cannot be sent safely.
            ConfigError: the credential cannot (or could not be refreshed).
        """
        target = request_target(self._target_prefix, path, query)
        head = f"{check_method(method)} {target} HTTP/1.1\r\n{self._fixed}"
        authorization = await self._authorization()
        if authorization:
            head += f"Authorization: {authorization}\r\n"
        return (head + extra + "\r\n").encode("ascii"), authorization

    def _answered(self, status: int, method: str, credential: str | None) -> None:
        """Count an answer; remember a refused credential."""
        self.count(status, method)
        if status == 401:
            self.refused = credential

    async def _refusal(self, answer: Stream, credential: str | None) -> ApiError:
        """Count a refusal (a status other than the one asked for); its error, body read."""
        status = answer.response.status
        self._answered(status, "GET", credential)
        try:
            body = await answer.read_all(_ERROR_BODY_LIMIT)
        except _NO_ANSWER:
            body = b""
        return error_from_response(status, answer.response.headers, body)

    def _unanswered(self, exc: BaseException, what: str, method: str) -> TransportError:
        """Count an attempt that got no HTTP answer; the error saying whether it was sent."""
        self.count("<error>", method)
        if isinstance(exc, NotConnected):
            return RequestNotSent(f"{what}: cannot connect to {self.host}: {exc}")
        if isinstance(exc, TooLarge):
            return ResponseTooLarge(f"{what}: the answer from {self.host} was refused: {exc}")
        if isinstance(exc, TimeoutError):
            return TransportError(f"{what}: no answer from {self.host} in time")
        return TransportError(f"{what}: no answer from {self.host}: {exc}")

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Send one request (the client's transport seam, :mod:`etctl.runtime._exchange`).

        A ``stream`` request is a streaming GET on the watch pool: a 2xx answer comes back with
        its body unread (the caller closes it), any other with its error body read.

        The request's ``before_send`` runs at the last moment before it is written to its
        connection, nothing awaited in between (:meth:`~etctl.runtime._http.Pool.request`); what it
        raises is raised and nothing is sent.

        Raises:
            UnsafeRequest: the request cannot be sent safely (nothing was sent).
            RequestNotSent: the connection could not be established.
            ResponseTooLarge: the answer's body exceeds ``max_response_bytes``.
            TransportError: no complete answer (reset, timeout, truncated body).
        """
        if request.stream:
            return await self._open_stream(request)
        method, path = request.method, request.path
        extra = constant_header_line("Accept", request.accept)
        payload = request.body
        if payload is not None:
            extra += constant_header_line("Content-Type", request.content_type or _JSON)
            extra += f"Content-Length: {len(payload)}\r\n"
        else:
            payload = b""
            if method not in _NO_BODY_METHODS:
                extra += "Content-Length: 0\r\n"
        head, credential = await self._head(method, path, request.query, extra)
        try:
            response, data = await self._api.request(
                head + payload,
                request.timeout,
                head_only=method == "HEAD",
                limit=self._max_response,
                before_send=request.before_send,
            )
        except _UNANSWERED as exc:
            raise self._unanswered(exc, f"{method} {path}", method) from exc
        self._answered(response.status, method, credential)
        return HttpResponse(response.status, response.headers, data)

    async def _open_stream(self, request: HttpRequest) -> HttpResponse:
        path = request.path
        accept = constant_header_line("Accept", request.accept)
        head, credential = await self._head("GET", path, request.query, accept)
        try:
            stream = await self._watch_api.stream(head, request.timeout)
        except _UNANSWERED as exc:
            raise self._unanswered(exc, f"WATCH {path}", "GET") from exc
        status, headers = stream.response.status, stream.response.headers
        if status != 200:
            self._answered(status, "GET", credential)
            try:
                body = await stream.read_all(_ERROR_BODY_LIMIT)
            except _NO_ANSWER:
                body = b""
            return HttpResponse(status, headers, body)
        self.count(200, "GET")
        return HttpResponse(status, headers, stream=stream)

    @property
    def refreshable(self) -> bool:
        """True when the credential can be reloaded (an exec plugin, a token file)."""
        return self.cluster.refreshable

    async def refresh(self) -> None:
        """Reload the credential the server last refused (once for a burst of refusals)."""
        await self.cluster.refresh(force=True, refused=self.refused)

    async def ws_connect(
        self,
        path: str,
        *,
        query: Query,
        protocols: Sequence[str],
        timeout: float,
        before_send: Callable[[], None] | None = None,
    ) -> WebSocket:
        """Open a websocket (exec) on the websocket pool, authenticated like every request.

        ``before_send`` is as an :class:`~etctl.runtime._exchange.HttpRequest`'s.

        Raises:
            ApiError: the server refused the upgrade (a 4xx/5xx instead of 101), with its message.
            RequestNotSent: the connection could not be established.
            TransportError: the handshake did not complete in time, or was not a websocket's.
        """
        if self._ws_api is None:
            self._ws_api = Pool(self._endpoint, limit=self._ws_pool_size)
        headers, key = handshake_headers(tuple(protocols))
        limits = Timeout(connect=timeout, total=timeout)
        what = f"exec {path}"
        lines = "".join(header_line(name, value) for name, value in headers.items())
        head, credential = await self._head("GET", path, query, lines)
        try:
            answer = await self._ws_api.upgrade(head, limits, before_send=before_send)
        except _UNANSWERED as exc:
            raise self._unanswered(exc, what, "GET") from exc
        if isinstance(answer, Stream):
            refused = await self._refusal(answer, credential)
            if 200 <= answer.response.status < 300:
                status = answer.response.status
                msg = f"{what}: the server answered {status} instead of switching protocols"
                raise TransportError(msg)
            raise refused
        self.count(101, "GET")
        ws = WebSocket(
            answer.response, answer.transport, answer.rest, max_message=self._max_message
        )
        if answer.response.headers.get("sec-websocket-accept") != accept_key(key):
            await ws.close()
            msg = f"{what}: the server's websocket handshake does not answer this client's key"
            raise TransportError(msg)
        return ws

    async def close(self) -> None:
        """Close every pool (idempotent)."""
        await self._api.close()
        await self._watch_api.close()
        if self._ws_api is not None:
            await self._ws_api.close()
            self._ws_api = None
