"""Parsing an HTTP/1.1 answer: the client's connection against the parsers it could be built on.

The answer is what the API server sends for a GET of one object: about 2 KiB of JSON after the
headers kube-apiserver writes (``Audit-Id``, ``Cache-Control``, ``Content-Type``, the priority
and fairness UIDs, ``Date``), framed by ``Content-Length`` and, second, by ``chunked`` encoding in
three chunks. Per answer, each contender parses it from bytes to a status, headers and the body:

* etctl's connection (:mod:`etctl.runtime._http_connection`): a request sent on a transport that
  writes nowhere, the answer handed to ``data_received``, the head and the body taken as the
  client takes them, the connection made ready for the next exchange; everything the client does
  per answer on its side of the socket;
* httptools (llhttp) with the callbacks a client needs and nothing else;
* aiohttp's C parser (``HttpResponseParserC``), when aiohttp is installed (the embedded API
  server's dependency; the product never imports it);
* h11, when installed.

Then the metrics and probe server's side (:mod:`etctl.runtime._http_server`): a probe's request
(``GET /readyz``, a kubelet's headers) parsed by the server's own strict reader, against llhttp's
request parser, and the whole exchange over a kept-alive loopback connection, to judge whether
parsing is worth moving to llhttp there too.

Times are CPU time (``time.process_time``), best of three: on a shared machine, time spent
descheduled is not the parser's.

    .venv/bin/python bench/http_parsing.py [--answers N]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import time
from collections.abc import Callable
from typing import Any

import httptools

from _report import figure, header
from etctl.runtime._http_connection import Connection, Timeout
from etctl.runtime._http_server import (
    DEFAULT_MAX_BODY,
    Listener,
    Request,
    Response,
    _read_request,
    _request_line,
)

_HEADERS = (
    b"Audit-Id: 6c3d0c58-5d4d-4b1c-9d2a-5b8f0b7b2f6e\r\n"
    b"Cache-Control: no-cache, private\r\n"
    b"Content-Type: application/json\r\n"
    b"X-Kubernetes-Pf-Flowschema-Uid: 3d3b3b5e-0c3f-4f5a-8d0e-9a1b2c3d4e5f\r\n"
    b"X-Kubernetes-Pf-Prioritylevel-Uid: 7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d\r\n"
    b"Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
)
_REQUEST = b"GET /api/v1/namespaces/default/configmaps/x HTTP/1.1\r\nHost: bench\r\n\r\n"


def _body() -> bytes:
    data = {f"key-{i:03d}": "v" * 24 for i in range(60)}
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "default", "resourceVersion": "12345"},
        "data": data,
    }
    return json.dumps(obj).encode()[:2048].ljust(2048)


def answers() -> dict[str, bytes]:
    """The two answers, by framing."""
    body = _body()
    length = b"HTTP/1.1 200 OK\r\n" + _HEADERS + b"Content-Length: %d\r\n\r\n" % len(body) + body
    thirds = [body[:700], body[700:1400], body[1400:]]
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in thirds) + b"0\r\n\r\n"
    chunked = b"HTTP/1.1 200 OK\r\n" + _HEADERS + b"Transfer-Encoding: chunked\r\n\r\n" + chunks
    return {"content-length": length, "chunked": chunked}


class _Nowhere(asyncio.Transport):
    """A transport whose writes go nowhere: the connection's side alone is measured."""

    def write(self, data: Any) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def abort(self) -> None:
        pass


def _etctl(answer: bytes, count: int) -> float:
    async def run() -> float:
        connection = Connection(asyncio.get_running_loop())
        connection.connection_made(_Nowhere())
        limits = Timeout()
        start = time.process_time()
        for _ in range(count):
            connection.send(_REQUEST, limits, None, head_only=False)
            connection.data_received(answer)
            response = await connection.head()
            body = await connection.read_all()
            if response.status != 200 or len(body) != 2048 or not connection.finished():
                msg = "the connection did not parse the answer"
                raise AssertionError(msg)
        return time.process_time() - start

    return asyncio.run(run())


class _Sink:
    """The callbacks a client needs of httptools: the headers and the body."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.done = True


def _httptools(answer: bytes, count: int) -> float:
    sink = _Sink()
    parser = httptools.HttpResponseParser(sink)
    start = time.process_time()
    for _ in range(count):
        sink.headers, sink.body, sink.done = {}, [], False
        parser.feed_data(answer)
        body = b"".join(sink.body)
        if parser.get_status_code() != 200 or len(body) != 2048 or not sink.done:
            msg = "httptools did not parse the answer"
            raise AssertionError(msg)
    return time.process_time() - start


def _aiohttp(answer: bytes, count: int) -> float:
    from aiohttp.http_parser import HttpResponseParserC  # noqa: PLC0415 - optional contender

    async def run() -> float:
        loop = asyncio.get_running_loop()

        class _Protocol:
            def pause_reading(self, **_: Any) -> None: ...
            def resume_reading(self, **_: Any) -> None: ...

        parser = HttpResponseParserC(_Protocol(), loop, 2**16)  # type: ignore[arg-type]
        start = time.process_time()
        for _ in range(count):
            messages, _upgraded, _tail = parser.feed_data(answer)
            message, payload = messages[0]
            body = payload.read_nowait(-1)
            if message.code != 200 or len(body) != 2048 or not payload.is_eof():
                msg = "aiohttp did not parse the answer"
                raise AssertionError(msg)
        return time.process_time() - start

    return asyncio.run(run())


def _h11(answer: bytes, count: int) -> float:
    import h11  # noqa: PLC0415 - optional contender

    start = time.process_time()
    for _ in range(count):
        connection = h11.Connection(h11.CLIENT)
        connection.send(h11.Request(method="GET", target="/x", headers=[("Host", "bench")]))
        connection.send(h11.EndOfMessage())
        connection.receive_data(answer)
        pieces: list[bytes] = []
        while True:
            event = connection.next_event()
            if isinstance(event, h11.Data):
                pieces.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage | h11.NEED_DATA):
                break
        if len(b"".join(pieces)) != 2048:
            msg = "h11 did not parse the answer"
            raise AssertionError(msg)
    return time.process_time() - start


_CONTENDERS: dict[str, tuple[Callable[[bytes, int], float], str | None]] = {
    "etctl's connection": (_etctl, None),
    "httptools (llhttp), callbacks only": (_httptools, None),
    "aiohttp's C parser": (_aiohttp, "aiohttp"),
    "h11": (_h11, "h11"),
}


_PROBE = (
    b"GET /readyz HTTP/1.1\r\nHost: 10.0.0.7:8081\r\nUser-Agent: kube-probe/1.32\r\n"
    b"Accept: */*\r\nConnection: keep-alive\r\n\r\n"
)


def _server_parser(count: int) -> float:
    async def run() -> float:
        reader = asyncio.StreamReader(limit=8192)
        reader.feed_data(_PROBE * count)
        start = time.process_time()
        for _ in range(count):
            first = await reader.read(1)
            line = await _request_line(reader, first)
            assert line is not None
            incoming = await _read_request(reader, line, DEFAULT_MAX_BODY)
            if incoming.request.path != "/readyz":
                msg = "the server did not parse the request"
                raise AssertionError(msg)
        return time.process_time() - start

    return asyncio.run(run())


class _RequestSink:
    def __init__(self) -> None:
        self.url = b""
        self.headers: dict[str, str] = {}

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")


def _llhttp_requests(count: int) -> float:
    sink = _RequestSink()
    parser = httptools.HttpRequestParser(sink)
    start = time.process_time()
    for _ in range(count):
        sink.url, sink.headers = b"", {}
        parser.feed_data(_PROBE)
        if sink.url != b"/readyz":
            msg = "llhttp did not parse the request"
            raise AssertionError(msg)
    return time.process_time() - start


def _exchanges(count: int) -> float:
    async def run() -> float:
        def ok(_: Request) -> Response:
            return Response(200, b"ok")

        listener = Listener(lambda path: ok if path == "/readyz" else None)
        host, port = await listener.start("127.0.0.1", 0)
        reader, writer = await asyncio.open_connection(host, port)
        try:
            start = time.process_time()
            for _ in range(count):
                writer.write(_PROBE)
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(2)
                if not head.startswith(b"HTTP/1.1 200"):
                    msg = "the server did not answer"
                    raise AssertionError(msg)
            return time.process_time() - start
        finally:
            writer.close()
            await listener.close()

    return asyncio.run(run())


def _server_side(count: int) -> None:
    print(f"   -- the metrics and probe server: a probe's request ({len(_PROBE)} bytes)")
    ours = min(_server_parser(count) for _ in range(3)) / count * 1e6
    figure("the server's request reader", ours, "us per request")
    llhttp = min(_llhttp_requests(count) for _ in range(3)) / count * 1e6
    figure("llhttp's request parser", llhttp, "us per request", compare=f"{llhttp / ours:.2f}x")
    whole = min(_exchanges(count // 4 or 1) for _ in range(3)) / (count // 4 or 1) * 1e6
    figure(
        "a whole exchange on loopback (both ends)",
        whole,
        "us per request",
        compare=f"parsing {ours / whole:.0%} of it",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=int, default=20_000)
    args = parser.parse_args()
    header(f"http parsing: a 2 KiB answer, {args.answers:,} times per contender (best of 3)")
    for framing, answer in answers().items():
        print(f"   -- framed by {framing} ({len(answer):,} bytes)")
        baseline = 0.0
        for name, (run, module) in _CONTENDERS.items():
            if module is not None and importlib.util.find_spec(module) is None:
                print(f"   {name:<48} {'not installed':>14}")
                continue
            seconds = min(run(answer, args.answers) for _ in range(3))
            micros = seconds / args.answers * 1e6
            if not baseline:
                baseline = micros
                figure(name, micros, "us per answer")
            else:
                figure(name, micros, "us per answer", compare=f"{micros / baseline:.2f}x etctl's")
    _server_side(args.answers)


if __name__ == "__main__":
    main()
