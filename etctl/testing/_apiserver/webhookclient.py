r"""Calling a webhook: where it is, TLS verified against its ``caBundle``, and a deadline.

A ``clientConfig`` names a webhook by ``url`` or by ``service``. A URL is called as written. A
Service reference is reached the way a cluster reaches it, through the Service's endpoints (what
kube-proxy would route ``<clusterIP>:<port>`` to): the Service must exist and have the port, and
its Endpoints object an address for that port; the server then connects to that address while
verifying the certificate for ``<service>.<namespace>.svc``, and the request names that host. The
embedded server runs no endpoints controller, so a webhook served from this machine (in-process,
or a local process such as ``etctl run``) is published as a Service without a selector plus an
Endpoints object naming ``127.0.0.1`` and its port, exactly as one points a Service at an
address outside a cluster.

The server verifies the webhook's certificate against ``caBundle`` (the system's roots when
there is none), for the host it called, over TLS 1.2 or later. Each call has the webhook's
``timeoutSeconds`` on the server's clock (so a ``FakeClock`` decides when a slow webhook times
out) and passes it on as ``?timeout=<n>s``; on the real clock that is a timer of the event loop
around the call, made in the caller's task. Failures are :class:`CallError`\\ s worded as Go's
HTTP client words them (``Post "https://...": dial tcp 127.0.0.1:1: connect: connection
refused``, ``context deadline exceeded``, ``x509: certificate signed by unknown authority``).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from yarl import URL

from etctl.errors import RequestNotSent, ResponseTooLarge, TransportError, UnsafeRequest
from etctl.runtime import Clock, EndpointClient, RealClock
from etctl.testing._apiserver.store import Store, object_key
from etctl.testing._apiserver.webhookconfigs import ClientConfig

__all__ = ["CallError", "WebhookClient"]

_SERVICES = ("", "services")
_ENDPOINTS = ("", "endpoints")
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The largest answer read from a webhook (a reply past it is a failed call, never kept)."""
_CONNECT_SECONDS = 30.0
"""A bound on opening a connection in real time; the call's own deadline (``timeoutSeconds``, at
most 30, on the server's clock) comes first."""


@dataclass(frozen=True, slots=True)
class _Target:
    """Where one call goes: the address connected to, the name verified, the deadline."""

    address: str
    port: int
    server_name: str
    timeout: int
    path: str


class CallError(Exception):
    """The webhook could not be called, or its answer could not be read (Go's wording)."""


class WebhookClient:
    """Posts JSON to webhooks for one server: kept-alive connections per endpoint.

    Calls go through :class:`~etctl.runtime.EndpointClient`, the runtime client's own HTTP/1.1:
    one per address, port, verified name and ``caBundle``, its connections kept alive and reused
    from one call to the next (as Go's transport does), so a write's webhook calls cost a request
    and an answer, not a handshake. Bodies are encoded and decoded by orjson (the codec of the
    runtime's client); what it cannot handle (an integer past 64 bits) falls back to the standard
    library's, so no document is refused that the server would accept.

    Args:
        store: where Services and Endpoints are read.
        clock: the deadline's clock.
    """

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._contexts: dict[bytes, ssl.SSLContext] = {}
        self._endpoints: dict[tuple[str, int, str, bytes], EndpointClient] = {}
        self._urls: dict[str, tuple[str, int, str, str]] = {}

    async def close(self) -> None:
        """Close every endpoint's connections (the server stops)."""
        endpoints, self._endpoints = self._endpoints, {}
        for endpoint in endpoints.values():
            await endpoint.close()

    def _context(self, ca_bundle: bytes) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            context = ssl.create_default_context(
                cadata=ca_bundle.decode("ascii", "replace") if ca_bundle else None
            )
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            self._contexts[ca_bundle] = context
        return context

    def _endpoint(self, target: _Target, ca_bundle: bytes) -> EndpointClient:
        key = (target.address, target.port, target.server_name, ca_bundle)
        endpoint = self._endpoints.get(key)
        if endpoint is None:
            endpoint = EndpointClient(
                target.address,
                target.port,
                tls=self._context(ca_bundle),
                server_hostname=target.server_name,
                max_response_bytes=MAX_RESPONSE_BYTES,
                connect_timeout=_CONNECT_SECONDS,
            )
            self._endpoints[key] = endpoint
        return endpoint

    def _url(self, url: str) -> tuple[str, int, str, str]:
        """``(host, port, request target, Host header)`` of a webhook's URL, parsed once."""
        parsed = self._urls.get(url)
        if parsed is None:
            parts = URL(url)
            host = parts.host or ""
            path = parts.raw_path_qs if parts.raw_path else "/"
            parsed = (host, int(parts.port or 443), path, parts.raw_authority)
            self._urls[url] = parsed
        return parsed

    def display_url(self, client: ClientConfig, timeout: int, path: str = "") -> str:
        """The URL as the real server names it in errors (``https://svc.ns.svc:443/p?timeout=10s``)."""
        if client.url:
            base = client.url
        else:
            host = f"{client.service_name}.{client.service_namespace}.svc"
            base = f"https://{host}:{client.service_port}{client.service_path or path}"
        separator = "&" if "?" in base else "?"
        return f"{base}{separator}timeout={timeout}s"

    def _resolve(self, client: ClientConfig) -> tuple[str, int, str]:
        """``(address, port, server name)`` to connect to.

        Raises:
            CallError: the Service, its port or an endpoint for it is missing.
        """
        if client.url:
            host, number, _, _ = self._url(client.url)
            return host, number, host
        name, namespace = client.service_name, client.service_namespace
        service = self._store.get(_SERVICES, object_key(namespace, name))
        if service is None:
            msg = f'service "{name}" not found'
            raise CallError(msg)
        ports = [p for p in (service.get("spec") or {}).get("ports") or [] if isinstance(p, dict)]
        port = next((p for p in ports if p.get("port") == client.service_port), None)
        if port is None:
            msg = f'no service port {client.service_port} found for service "{name}"'
            raise CallError(msg)
        target = port.get("targetPort", port.get("port"))
        endpoints = self._store.get(_ENDPOINTS, object_key(namespace, name))
        for subset in (endpoints or {}).get("subsets") or []:
            addresses = [a for a in subset.get("addresses") or [] if a.get("ip")]
            for endpoint_port in subset.get("ports") or []:
                if _port_matches(endpoint_port, port, target) and addresses:
                    return (
                        str(addresses[0]["ip"]),
                        int(endpoint_port["port"]),
                        f"{name}.{namespace}.svc",
                    )
        msg = f'no endpoints available for service "{name}"'
        raise CallError(msg)

    async def post(
        self, client: ClientConfig, body: Mapping[str, Any], *, timeout: int, path: str = ""
    ) -> Any:
        """POST ``body`` as JSON and return the decoded answer.

        Args:
            client: the webhook's client config.
            body: the review to send.
            timeout: seconds on the server's clock before the call is abandoned.
            path: the path for a Service reference that names none (conversion uses it).

        Raises:
            CallError: the call failed, timed out, or answered what is not JSON.
        """
        shown = self.display_url(client, timeout, path)
        try:
            address, port, server_name = self._resolve(client)
        except CallError as error:
            raise CallError(f'Post "{shown}": {error}') from None
        target = _Target(address, port, server_name, timeout, path)
        if isinstance(self._clock, RealClock):
            # The loop's own timer: the call runs in the caller's task, with no task to start
            # for it and none to sleep beside it (each a turn of the loop, on every write).
            try:
                async with asyncio.timeout(timeout):
                    return await self._call(client, target, body)
            except TimeoutError:
                raise CallError(f'Post "{shown}": context deadline exceeded') from None
            except CallError as error:
                raise CallError(f'Post "{shown}": {error}') from None
        call = asyncio.ensure_future(self._call(client, target, body))
        deadline = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait({call, deadline}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            deadline.cancel()
            if not call.done():
                call.cancel()
        if not call.done() or call.cancelled():
            await asyncio.gather(call, return_exceptions=True)
            raise CallError(f'Post "{shown}": context deadline exceeded')
        try:
            return call.result()
        except CallError as error:
            raise CallError(f'Post "{shown}": {error}') from None

    async def _call(self, client: ClientConfig, target: _Target, body: Mapping[str, Any]) -> Any:
        address, port, server_name = target.address, target.port, target.server_name
        if client.url:
            _, _, request_path, host_header = self._url(client.url)
        else:
            request_path = client.service_path or target.path or "/"
            host_header = f"{server_name}:{client.service_port}"
        separator = "&" if "?" in request_path else "?"
        try:
            status, raw = await self._endpoint(target, client.ca_bundle).request(
                "POST",
                f"{request_path}{separator}timeout={target.timeout}s",
                headers={
                    "Host": host_header,
                    "Content-Type": "application/json",
                    "Accept": "application/json, */*",
                },
                body=_encode(body),
            )
        except ResponseTooLarge:
            msg = f"the response is larger than {MAX_RESPONSE_BYTES} bytes"
            raise CallError(msg) from None
        except RequestNotSent as error:
            cause = error.__cause__
            if isinstance(cause, ssl.SSLCertVerificationError):
                raise CallError(f"tls: failed to verify certificate: {_x509(cause)}") from None
            if isinstance(cause, ConnectionRefusedError):
                detail = "connection refused"
            else:
                detail = str(cause) or type(cause).__name__
            raise CallError(f"dial tcp {_host(address)}:{port}: connect: {detail}") from None
        except (TransportError, UnsafeRequest) as error:
            raise CallError(str(error) or type(error).__name__) from None
        return _decode(raw, status)


def _port_matches(endpoint_port: Mapping[str, Any], port: Mapping[str, Any], target: Any) -> bool:
    """An Endpoints port serves a Service port when their names agree (or there is one port)."""
    if port.get("name") or endpoint_port.get("name"):
        return bool(endpoint_port.get("name") == port.get("name"))
    return not isinstance(target, int) or endpoint_port.get("port") == target


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def _x509(error: ssl.SSLCertVerificationError) -> str:
    text = str(error)
    if "unable to get local issuer" in text or "self-signed" in text or "self signed" in text:
        return "x509: certificate signed by unknown authority"
    if "Hostname mismatch" in text or "IP address mismatch" in text:
        return f"x509: certificate is not valid for the host called ({text})"
    if "expired" in text:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {text}"


def _encode(body: Mapping[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:  # an integer past 64 bits: the standard library writes it
        return json.dumps(body).encode()


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except ValueError:  # what orjson refuses and the standard library reads (a huge integer)
        return json.loads(raw)


def _decode(raw: bytes, status: int) -> Any:
    """The JSON answer; a non-2xx status is the error client-go makes of it."""
    try:
        document = _loads(raw) if raw else None
    except ValueError:
        document = None
    if 200 <= status < 300:
        if document is None:
            msg = "the server returned a response that is not a JSON object"
            raise CallError(msg)
        return document
    if isinstance(document, dict) and document.get("kind") == "Status" and document.get("message"):
        raise CallError(str(document["message"]))
    text = raw.decode(errors="replace").strip()
    if text:
        msg = f'an error on the server ("{text[:1024]}") has prevented the request from succeeding'
    else:
        msg = (
            f"the server responded with the status code {status} but did not return more "
            "information"
        )
    raise CallError(msg)
