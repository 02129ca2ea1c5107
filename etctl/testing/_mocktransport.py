"""A client transport whose answers a test writes: the client's requests, answered with no server.

A :class:`~etctl.runtime.Client` sends everything through its transport seam
(:class:`~etctl.runtime.HttpTransport`); :class:`MockTransport` is one whose answers come from a
function of the test's (httpx's ``MockTransport`` is the model)::

    def answer(request: HttpRequest) -> HttpResponse:
        if request.method == "GET" and request.path == "/api/v1/namespaces/a/pods/p":
            return json_answer(200, {"kind": "Pod", "metadata": {"name": "p"}})
        return json_answer(404, not_found("pods", "p"))

    async with Client(transport=MockTransport(answer)) as client:
        pod = await client.get(PODS, "p", namespace="a")

Everything above the seam is the client's real code (encoding, retries, the mapping of statuses
to :mod:`etctl.errors`, watches decoded line by line), and every request is kept in
:attr:`MockTransport.requests`, so a unit test asserts both what the client sent and what it made
of the answer. A watch is answered with :func:`watch_answer`; an answer function that raises
:class:`~etctl.errors.TransportError` (or :class:`~etctl.errors.RequestNotSent`) plays a lost
answer (or a connection never made). The mock opens no websockets: ``exec`` needs a server.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import orjson

from etctl.runtime import HttpRequest, HttpResponse

__all__ = ["MockTransport", "json_answer", "watch_answer"]

Answer = Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]


class MockTransport:
    """A client transport that answers with ``answer(request)`` (see the module docstring).

    Args:
        answer: the test's answer to each request (a function or a coroutine function).

    Attributes:
        requests: every request received, in order.
        closed: whether the client closed the transport.
    """

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self.requests: list[HttpRequest] = []
        self.closed = False

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Record ``request`` and return the test's answer (none when ``before_send`` raises)."""
        if request.before_send is not None:
            request.before_send()
        self.requests.append(request)
        found = self._answer(request)
        if inspect.isawaitable(found):
            found = await found
        return found

    async def close(self) -> None:
        """Record that the client closed its transport."""
        self.closed = True

    def bodies(self, method: str | None = None) -> list[Any]:
        """The decoded JSON bodies of the requests received (of ``method``, when given)."""
        return [
            orjson.loads(request.body)
            for request in self.requests
            if request.body is not None and (method is None or request.method == method)
        ]


def json_answer(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> HttpResponse:
    """An answer carrying ``body`` as JSON."""
    return HttpResponse(
        status,
        {"Content-Type": "application/json", **dict(headers or {})},
        orjson.dumps(dict(body)),
    )


class _Lines:
    """A watch body: the events' lines, then its end."""

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines
        self.closed = False

    async def read(self) -> bytes:
        if self.closed or not self._lines:
            return b""
        return self._lines.pop(0)

    def close(self) -> None:
        self.closed = True


def watch_answer(events: Iterable[tuple[str, Mapping[str, Any]]]) -> HttpResponse:
    """The answer to a watch: one line per ``(type, object)`` event, then the stream's end."""
    lines = [orjson.dumps({"type": kind, "object": dict(obj)}) + b"\n" for kind, obj in events]
    return HttpResponse(200, {"Content-Type": "application/json"}, stream=_Lines(lines))
