"""Fault injection: make chosen requests fail, stall, or have their watch cut.

A :class:`Fault` matches requests by verb, resource, namespace, name, subresource, query text and
body text (unset means any) and fires a number of times (``times``, or forever with None). When it
fires it may wait (``delay``, on the server's clock), then either answer with an error ``Status``
(``status``, ``reason``, ``message``), cut a watch (``drop_watch``: the stream ends at once, as
when a connection drops), or end a watch with a 410 ``Expired`` ERROR event (``expire_watch``). A
fault with only a delay lets the request proceed afterwards. A fault may also act *after* the
request was served, which is what makes an answer ambiguous: its write is committed, and then the
answer waits (``answer_delay``) or never comes (``drop_answer``: the connection is closed without
one, as a reset after the server acted). The injector can also pause the whole server: every
request waits until it is resumed.

Faults are checked in the order they were added; the first that matches and has firings left
wins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from etctl.errors import ApiError
from etctl.testing._apiserver.request import RequestInfo

__all__ = ["Fault", "FaultInjector", "QueryValues"]

QueryValues = Callable[[str], Sequence[str]]
"""A request's values of one query parameter (``[]`` when absent)."""

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_MESSAGES = {
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
    "processing the request",
}


@dataclass(eq=False)
class Fault:
    """One injected fault. Unset matchers match everything.

    Attributes:
        verb: get, list, watch, create, update, patch, delete or deletecollection.
        resource: the resource, as ``pods`` or ``foos.example.com``.
        namespace: the request's namespace.
        name: the object's name.
        subresource: ``status``, ``scale``...
        query_contains: query parameters the request must carry, each as text its values
            (joined with spaces) contain: ``{"command": "scale.sh"}`` picks the execs that run
            that script out of all the execs into a pod.
        body_contains: text the request's body must contain (a create names its object in its
            body, and a status patch says what it records there).
        times: how many requests it fires for; None for every one until removed.
        status: the HTTP status to answer with (None: no error).
        reason: the Status reason (derived from ``status`` when empty).
        message: the Status message (a generic one when empty).
        delay: seconds (of the server's clock) to wait before answering or proceeding.
        drop_watch: end a watch stream at once with no event.
        expire_watch: end a watch stream with a 410 Expired ERROR event.
        answer_delay: seconds (of the server's clock) to hold the answer of a request that was
            served (its write is committed).
        drop_answer: close the connection instead of answering a request that was served.
    """

    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    query_contains: Mapping[str, str] | None = None
    body_contains: str | None = None
    times: int | None = 1
    status: int | None = None
    reason: str = ""
    message: str = ""
    delay: float = 0.0
    drop_watch: bool = False
    expire_watch: bool = False
    answer_delay: float = 0.0
    drop_answer: bool = False
    fired: int = field(default=0, init=False)

    def matches(
        self, info: RequestInfo, query: QueryValues | None = None, body: bytes = b""
    ) -> bool:
        """Whether the fault applies to a request (ignoring how many firings remain).

        Args:
            info: what the request's path names.
            query: the request's values of a query parameter (none when not given).
            body: the request's body (read only when some fault looks into bodies).
        """
        if not info.resource_request:
            return False
        if self.body_contains is not None and self.body_contains.encode() not in body:
            return False
        for key, text in (self.query_contains or {}).items():
            values = query(key) if query is not None else ()
            if text not in " ".join(values):
                return False
        if self.resource is not None and self.resource not in (
            info.resource,
            f"{info.resource}.{info.group}",
        ):
            return False
        checks = (
            (self.verb, info.verb),
            (self.namespace, info.namespace),
            (self.name, info.name),
            (self.subresource, info.subresource),
        )
        return all(want is None or want == got for want, got in checks)

    @property
    def exhausted(self) -> bool:
        """True once the fault has fired ``times`` times."""
        return self.times is not None and self.fired >= self.times

    def error(self) -> ApiError | None:
        """The error to answer with, if the fault answers with one."""
        if self.status is None:
            return None
        reason = self.reason or _REASONS.get(self.status, "")
        message = self.message or _MESSAGES.get(self.status) or f"injected failure ({self.status})"
        retry = 1.0 if self.status == 429 else None
        details = {"retryAfterSeconds": 1} if self.status == 429 else None
        return ApiError(
            message, status=self.status, reason=reason, details=details, retry_after=retry
        )


class FaultInjector:
    """The faults of one server, and its pause switch."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._running = asyncio.Event()
        self._running.set()

    def add(self, fault: Fault) -> Fault:
        """Register a fault; returns it (for :meth:`remove` and its ``fired`` count)."""
        self._faults.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        """Unregister a fault (idempotent)."""
        if fault in self._faults:
            self._faults.remove(fault)

    def clear(self) -> None:
        """Remove every fault and resume the server."""
        self._faults.clear()
        self.resume()

    def __len__(self) -> int:
        return len(self._faults)

    @property
    def reads_bodies(self) -> bool:
        """True when some fault matches on the request body (so the body must be read first)."""
        return any(fault.body_contains is not None for fault in self._faults)

    def take(
        self, info: RequestInfo, query: QueryValues | None = None, body: bytes = b""
    ) -> Fault | None:
        """The fault that fires for this request, counting the firing; None if none does."""
        for fault in self._faults:
            if not fault.exhausted and fault.matches(info, query, body):
                fault.fired += 1
                if fault.times is not None and fault.fired >= fault.times:
                    self._faults.remove(fault)
                return fault
        return None

    # -- pause ----------------------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        """True while requests are held."""
        return not self._running.is_set()

    def pause(self) -> None:
        """Hold every new and waiting request until :meth:`resume`."""
        self._running.clear()

    def resume(self) -> None:
        """Release held requests."""
        self._running.set()

    async def wait_running(self) -> None:
        """Return once the server is not paused."""
        await self._running.wait()
