"""One logical request: attempts, retries and a credential refresh, on top of the transport.

A :class:`Caller` turns the transport's single attempts into what the client's verbs need: a 2xx
answer or the mapped error, after retrying transient failures as the request's
:class:`~etctl.runtime._retry.RetrySafety` allows, on the injected clock. A 401 reloads the
credentials once (an exec plugin's token may have been revoked early, a token file rotated) and
repeats the attempt before the error is final. Every attempt of a write (any method but GET,
HEAD and OPTIONS) checks the fence of the task it runs in (:mod:`etctl.runtime._fence`) first, and
again at the moment it is written to its connection.
Concurrent requests refused with the same credential reload it once: a reload is skipped when the
credential refused is no longer the current one (client-go's ``maybeRefreshCreds``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from etctl.errors import EtctlError, TransportError, Unauthorized
from etctl.runtime._clock import Clock
from etctl.runtime._exchange import Body, Credentials, HttpRequest, HttpResponse, HttpTransport
from etctl.runtime._fence import check_fence, current_fence
from etctl.runtime._retry import RetryPolicy, RetrySafety, retry_after
from etctl.runtime._transport import Query, Timeout, encode_body, error_from_response

__all__ = ["Caller"]

T = TypeVar("T")

_READS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing: never fenced."""


class Caller:
    """Retrying, re-authenticating requests over an :class:`~etctl.runtime._exchange.HttpTransport`.

    Args:
        transport: where requests go (the client's own :class:`~etctl.runtime._transport.Transport`,
            or one a test answers); a 401 reloads its credential when it has one to reload
            (:class:`~etctl.runtime._exchange.Credentials`).
        policy: retry limits and backoff.
        clock: what retry sleeps run on.
        timeout: the per-attempt timeout of requests (streams bring their own).
    """

    def __init__(
        self,
        transport: HttpTransport,
        *,
        policy: RetryPolicy,
        clock: Clock,
        timeout: Timeout,
    ) -> None:
        self.transport = transport
        self._credentials = transport if isinstance(transport, Credentials) else None
        self._policy = policy
        self._clock = clock
        self._timeout = timeout

    @property
    def _refreshable(self) -> bool:
        return self._credentials is not None and self._credentials.refreshable

    async def _refresh(self) -> None:
        """Reload the credential the server refused (once for a burst of refusals)."""
        if self._credentials is not None:
            await self._credentials.refresh()

    async def _authenticated(self, attempt: Callable[[], Awaitable[T]], state: list[bool]) -> T:
        """Run ``attempt``; after a 401, refresh the credentials once per request and rerun."""
        try:
            return await attempt()
        except Unauthorized:
            if state or not self._refreshable:
                raise
            state.append(True)
            await self._refresh()
            return await attempt()

    async def _recover(
        self,
        first: EtctlError,
        attempt: Callable[[], Awaitable[T]],
        *,
        safety: RetrySafety,
        what: str,
    ) -> T:
        """Go on after ``attempt`` failed once with ``first``: the 401 refresh, then retries.

        The same steps, in the same order, as running the attempt inside the retry loop from the
        start; kept off the path of the first attempt, which is the only one most requests need.
        """
        refreshed: list[bool] = []
        if isinstance(first, Unauthorized) and self._refreshable:
            refreshed.append(True)
            await self._refresh()
            try:
                return await attempt()
            except EtctlError as exc:
                first = exc

        async def authenticated() -> T:
            return await self._authenticated(attempt, refreshed)

        return await retry_after(
            first,
            authenticated,
            policy=self._policy,
            safety=safety,
            clock=self._clock,
            what=what,
        )

    async def _attempt(
        self,
        method: str,
        path: str,
        *,
        query: Query,
        body: bytes | None,
        content_type: str | None,
        accept: str,
        uncertain: list[bool] | None,
    ) -> HttpResponse:
        """One attempt: a 2xx answer, or the error it maps to (a write checks its fence first).

        A write's fence is checked twice: before anything is built, and again as the request is
        written to its connection, since waiting for a free slot or a new connection is a moment
        in which the process can be paused past its renew deadline.
        """
        before_send = None
        if method not in _READS and current_fence() is not None:  # no fence: nothing to check
            what = f"{method} {path}"
            check_fence(what)
            before_send = partial(check_fence, what)
        request = HttpRequest(
            method=method,
            path=path,
            query=query,
            body=body,
            content_type=content_type,
            accept=accept,
            timeout=self._timeout,
            before_send=before_send,
        )
        try:
            raw = await self.transport.handle(request)
        except TransportError:
            if uncertain is not None:
                uncertain.append(True)
            raise
        if not 200 <= raw.status < 300:
            raise error_from_response(raw.status, raw.headers, raw.body)
        return raw

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str | None = None,
        accept: str = "application/json",
        safety: RetrySafety = RetrySafety.IDEMPOTENT,
        uncertain: list[bool] | None = None,
    ) -> HttpResponse:
        """Send a request until it gets a 2xx answer, fails permanently or runs out of attempts.

        Args:
            method: the HTTP method.
            path: the URL path.
            query: query parameters.
            body: the JSON body (encoded here, before any attempt).
            content_type: the body's content type (``application/json`` when ``None``).
            accept: the ``Accept`` header.
            safety: which failures may be retried.
            uncertain: when given, gets one entry per attempt that failed without an answer (the
                server may have acted on it).

        Raises:
            ApiError: the last answer's error.
            Fenced: a write of leader-only work whose fence lapsed (nothing was sent).
            TransportError: the last attempt got no answer.
        """
        attempt = partial(
            self._attempt,
            method,
            path,
            query=query,
            body=None if body is None else encode_body(body),
            content_type=content_type,
            accept=accept,
            uncertain=uncertain,
        )
        try:
            return await attempt()
        except EtctlError as exc:
            # Only errors of the etctl tree are refreshed or retried; anything else (a body that
            # cannot be encoded) goes straight to the caller, as it did from the retry loop.
            first = exc
        return await self._recover(first, attempt, safety=safety, what=f"{method} {path}")

    async def upgrade(self, attempt: Callable[[], Awaitable[T]], *, what: str) -> T:
        """Run a protocol upgrade (an exec's websocket), retried while it provably never started.

        ``attempt`` opens the connection; it is repeated, with backoff on the injected clock, after
        a connection never made or a 429/5xx answer instead of the switch of protocols (see
        ``RetrySafety.UNSTARTED``), and never after the answer was lost.
        """
        try:
            return await attempt()
        except EtctlError as exc:
            first = exc
        return await self._recover(first, attempt, safety=RetrySafety.UNSTARTED, what=what)

    async def open_stream(self, path: str, *, query: Query, timeout: Timeout) -> Body:
        """Start a stream (a watch), retried like a read; the caller closes the stream."""
        request = HttpRequest(method="GET", path=path, query=query, timeout=timeout, stream=True)

        async def attempt() -> Body:
            answer = await self.transport.handle(request)
            if answer.status != 200 or answer.stream is None:
                if answer.stream is not None:
                    answer.stream.close()
                raise error_from_response(answer.status, answer.headers, answer.body)
            return answer.stream

        try:
            return await attempt()
        except EtctlError as exc:
            first = exc
        return await self._recover(
            first, attempt, safety=RetrySafety.IDEMPOTENT, what=f"WATCH {path}"
        )
