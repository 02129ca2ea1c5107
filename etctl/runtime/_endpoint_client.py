"""Requests to one HTTP endpoint other than the API server, on the client's own HTTP/1.1.

An API server calls out too: admission and conversion webhooks, each an HTTPS endpoint verified
against its own CA, answered in JSON. :class:`EndpointClient` is that caller, on the connection
pool the :class:`~etctl.runtime.Client` itself stands on (:mod:`etctl.runtime._http`): connections
kept alive and reused, one write and one wake-up per exchange. The embedded API server calls its
webhooks through it (a general HTTP client spent three times the CPU per call, and a webhook's
call is on the path of every write it admits).

Invariants:

* what the caller gives is checked before a byte is sent: the method is a token, the target
  holds no space, control character or anything outside ASCII, every header may be sent as it is
  (:class:`~etctl.errors.UnsafeRequest` otherwise);
* a connection that could not be opened raises :class:`~etctl.errors.RequestNotSent`, whose
  ``__cause__`` is what refused it (the ``OSError``, or the ``ssl.SSLCertVerificationError``);
  an answer larger than ``max_response_bytes`` :class:`~etctl.errors.ResponseTooLarge`; any other
  failure to get a whole answer :class:`~etctl.errors.TransportError`;
* an answer of any status is returned, never raised;
* opening a connection is bounded by ``connect_timeout``, the whole exchange by the call's
  ``timeout`` when it gives one; a caller that bounds the exchange itself (on its own clock) may
  cancel the call at any moment, and the connection it held is closed, never reused.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

from etctl.errors import RequestNotSent, ResponseTooLarge, TransportError, UnsafeRequest
from etctl.runtime._http import Broken, Endpoint, NotConnected, Pool, Timeout, TooLarge
from etctl.runtime._target import check_method, header_line

__all__ = ["EndpointClient"]


class EndpointClient:
    """Requests to one ``host:port`` over kept-alive connections (HTTPS when ``tls`` is given).

    Args:
        host: the address connected to (a name, or an IP address without brackets).
        port: its port.
        tls: the TLS settings (what verifies the server), ``None`` for plain HTTP.
        server_hostname: the name the server's certificate is verified for (``None``: ``host``).
        max_response_bytes: the largest answer body accepted (0: no limit).
        connect_timeout: seconds to open a connection, TLS handshake included.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: ssl.SSLContext | None,
        server_hostname: str | None = None,
        max_response_bytes: int = 0,
        connect_timeout: float = 10.0,
    ) -> None:
        self._pool = Pool(Endpoint(host, port, tls, server_hostname), limit=0)
        self._authority = self._pool.endpoint.authority
        self._limit = max_response_bytes
        self._connect = connect_timeout

    async def request(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        body: bytes = b"",
        timeout: float | None = None,
    ) -> tuple[int, bytes]:
        """Send one request; the answer's status and whole body.

        Args:
            method: the HTTP method.
            target: the request target, already encoded (``/validate?timeout=10s``).
            headers: the headers to send (``Content-Length`` is added for a body).
            body: the request's body.
            timeout: seconds for the whole exchange (``None``: the caller bounds it).

        Raises:
            UnsafeRequest: the method, target or a header cannot be sent safely (nothing sent).
            RequestNotSent: no connection could be opened (nothing sent).
            ResponseTooLarge: the answer's body exceeds ``max_response_bytes``.
            TransportError: no whole answer (reset, truncated, timed out).
        """
        if not target.startswith("/") or not target.isascii() or not target.isprintable():
            msg = f"the request target {target!r} cannot be sent as it is"
            raise UnsafeRequest(msg)
        if " " in target:
            msg = f"the request target {target!r} holds a space"
            raise UnsafeRequest(msg)
        lines = [f"{check_method(method)} {target} HTTP/1.1\r\n"]
        lines += [header_line(name, value) for name, value in headers.items()]
        if body or method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        request = "".join(lines).encode("ascii") + body
        bounds = Timeout(connect=self._connect, total=timeout)
        try:
            response, data = await self._pool.request(
                request, bounds, head_only=method == "HEAD", limit=self._limit
            )
        except NotConnected as exc:
            raise RequestNotSent(f"cannot connect to {self._authority}: {exc}") from (
                exc.__cause__ or exc
            )
        except TooLarge as exc:
            msg = f"the answer from {self._authority} was refused: {exc}"
            raise ResponseTooLarge(msg) from exc
        except TimeoutError as exc:
            raise TransportError(f"no answer from {self._authority} in time") from exc
        except (Broken, OSError) as exc:
            raise TransportError(f"no answer from {self._authority}: {exc}") from exc
        return response.status, data

    async def close(self) -> None:
        """Close every connection (a call under way gets :class:`~etctl.errors.TransportError`)."""
        await self._pool.close()
