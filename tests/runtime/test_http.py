"""The client's HTTP/1.1: framing, connection reuse, timeouts, the pool's limit, tunnels and 101s.

Each test runs a raw TCP server on 127.0.0.1 that writes exactly the bytes under test, so the
client's parser meets split chunks, odd framing and misbehaving servers that a well-behaved HTTP
server library would never produce.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from etctl.runtime._http import (
    Broken,
    Endpoint,
    NotConnected,
    Pool,
    Proxy,
    Stream,
    Timeout,
    Upgraded,
)
from tests.runtime.test_client_connection import self_signed

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
LIMITS = Timeout(connect=5, total=5)


@dataclass
class RawServer:
    """A TCP server whose every connection runs ``handler``; counts connections and requests."""

    handler: Handler
    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        self.requests.append(head)
        return head


@asynccontextmanager
async def raw_server(
    handler: Handler, *, tls: ssl.SSLContext | None = None
) -> AsyncIterator[RawServer]:
    raw = RawServer(handler)
    server = await asyncio.start_server(raw.serve, "127.0.0.1", 0, ssl=tls)
    raw.port = server.sockets[0].getsockname()[1]
    try:
        yield raw
    finally:
        server.close()


async def nothing(_reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
    """A handler that closes every connection at once."""


def request(path: str = "/x", method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode()


def answering(*answers: bytes, trickle: bool = False) -> Callable[[RawServer], Handler]:
    """A handler that answers successive requests on a connection with ``answers`` in turn."""

    def bind(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for answer in answers:
                await server.read_request(reader)
                if trickle:  # one byte per write: every boundary inside the answer is exercised
                    for index in range(len(answer)):
                        writer.write(answer[index : index + 1])
                        await writer.drain()
                        await asyncio.sleep(0)
                else:
                    writer.write(answer)
                    await writer.drain()
            await reader.read()  # hold the connection until the client closes it

        return handle

    return bind


@asynccontextmanager
async def serving(make: Callable[[RawServer], Handler]) -> AsyncIterator[tuple[RawServer, Pool]]:
    async with raw_server(nothing) as server:
        server.handler = make(server)  # read at each connection: replaced before any arrives
        pool = Pool(Endpoint("127.0.0.1", server.port), limit=4)
        try:
            yield server, pool
        finally:
            await pool.close()


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Thing: a\r\nx-thing: b\r\n\r\n"
    b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: t\r\n\r\n"
)


@pytest.mark.parametrize("trickle", [False, True], ids=["whole", "byte-by-byte"])
async def test_chunked_answers_with_extensions_and_trailers(trickle: bool) -> None:
    async with serving(answering(CHUNKED, CHUNKED, trickle=trickle)) as (server, pool):
        for _ in range(2):
            response, body = await pool.request(request(), LIMITS)
            assert (response.status, body) == (200, b"hello world")
            assert response.headers["x-thing"] == "a, b"
            assert response.headers.get("X-THING") == "a, b"
    assert server.connections == 1  # kept alive and reused


async def test_content_length_and_keep_alive_reuse_one_connection() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
    async with serving(answering(answer, answer, answer)) as (server, pool):
        for _ in range(3):
            assert (await pool.request(request(), LIMITS))[1] == b"abc"
    assert server.connections == 1


async def test_connection_close_and_http10_answers_are_not_reused() -> None:
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    old = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"
    async with serving(answering(closing)) as (server, pool):
        for _ in range(2):
            assert (await pool.request(request(), LIMITS))[1] == b"ok"
    assert server.connections == 2
    async with serving(answering(old)) as (server, pool):
        for _ in range(2):
            assert (await pool.request(request(), LIMITS))[1] == b"ok"
    assert server.connections == 2


async def test_a_body_framed_by_the_end_of_the_connection() -> None:
    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\n\r\nuntil")
            await writer.drain()
            writer.write(b" the end")

        return handle

    async with serving(make) as (server, pool):
        assert (await pool.request(request(), LIMITS))[1] == b"until the end"
        assert (await pool.request(request(), LIMITS))[1] == b"until the end"
    assert server.connections == 2


async def test_no_body_statuses_interim_answers_and_head() -> None:
    answers = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",  # the answer to HEAD
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
    )
    async with serving(answering(*answers)) as (server, pool):
        assert (await pool.request(request(), LIMITS))[0].status == 204
        head, body = await pool.request(request(method="HEAD"), LIMITS, head_only=True)
        assert (head.status, head.headers["content-length"], body) == (200, "99", b"")
        assert (await pool.request(request(), LIMITS))[0].status == 304
    assert server.connections == 1


async def test_a_body_larger_than_the_stream_buffer_is_read_whole() -> None:
    big = bytes(range(256)) * (5 * 2**20 // 256)
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(big) + big
    async with serving(answering(answer)) as (_server, pool):
        assert (await pool.request(request(), LIMITS))[1] == big


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "before the answer was complete"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "Invalid header token"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported transfer-encoding"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "in Content-Length"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000, "exceed"),
    ],
    ids=["truncated", "not-http", "bad-header", "bad-chunk", "gzip", "negative", "huge-head"],
)
async def test_broken_answers_are_errors_and_close_the_connection(
    answer: bytes, error: str
) -> None:
    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(answer)
            await writer.drain()

        return handle

    async with serving(make) as (server, pool):
        for _ in range(2):
            with pytest.raises(Broken, match=error):
                await pool.request(request(), LIMITS)
    assert server.connections == 2  # a broken connection is never reused


async def test_bytes_beyond_an_answer_never_reach_the_next_request() -> None:
    smuggled = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"
    )
    honest = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhonest"
    calls = 0

    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal calls
            calls += 1
            await server.read_request(reader)
            writer.write(smuggled if calls == 1 else honest)
            await writer.drain()
            await reader.read()

        return handle

    async with serving(make) as (server, pool):
        assert (await pool.request(request(), LIMITS))[1] == b"ok"
        assert (await pool.request(request(), LIMITS))[1] == b"honest"
    assert server.connections == 2


async def test_a_server_that_never_answers_times_out_and_the_slot_is_freed() -> None:
    silent = asyncio.Event()

    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            await silent.wait()

        return handle

    async with serving(make) as (_server, pool):
        for _ in range(6):  # more than the pool's limit of 4: every slot came back
            with pytest.raises(TimeoutError):
                await pool.request(request(), Timeout(connect=5, total=0.05))
    silent.set()


@pytest.mark.parametrize(("first", "second"), [(0.05, 0.4), (5.0, 0.05)])
async def test_each_exchange_on_a_kept_alive_connection_has_its_own_bound(
    first: float, second: float
) -> None:
    # One deadline timer serves a connection's successive exchanges: the second request's bound
    # is its own, whether it ends before the first's (the timer moves earlier) or after it (the
    # timer, firing at the first's, is moved on instead of failing the second).
    silent = asyncio.Event()

    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await server.read_request(reader)
            await silent.wait()

        return handle

    async with serving(make) as (server, pool):
        assert (await pool.request(request(), Timeout(connect=5, total=first)))[1] == b"ok"
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(TimeoutError):
            await pool.request(request(), Timeout(connect=5, total=second))
        waited = loop.time() - began
        assert server.connections == 1
    silent.set()
    assert second <= waited < second + 2.0


async def test_a_full_pool_makes_callers_wait_their_turn_within_their_timeout() -> None:
    release = asyncio.Event()
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                await server.read_request(reader)
                await release.wait()
                writer.write(answer)
                await writer.drain()

        return handle

    async with serving(make) as (server, _pool):
        pool = Pool(Endpoint("127.0.0.1", server.port), limit=1)
        first = asyncio.create_task(pool.request(request(), LIMITS))
        await asyncio.sleep(0.05)
        with pytest.raises(NotConnected, match="no free connection"):
            await pool.request(request(), Timeout(connect=5, total=0.05))
        second = asyncio.create_task(pool.request(request(), LIMITS))
        await asyncio.sleep(0.05)
        assert len(server.requests) == 1  # the second waits for the only connection
        release.set()
        assert [(await first)[1], (await second)[1]] == [b"ok", b"ok"]
        assert server.connections == 1
        await pool.close()


async def test_a_slot_freed_as_its_waiter_gives_up_passes_to_the_next_in_line() -> None:
    pool = Pool(Endpoint("127.0.0.1", 1), limit=1)
    await pool._slot(None)
    quitter = asyncio.create_task(pool._slot(None))
    next_in_line = asyncio.create_task(pool._slot(None))
    await asyncio.sleep(0)  # both wait, in this order
    pool._free_slot()  # handed to the quitter...
    quitter.cancel()  # ...which gives up before it runs
    with pytest.raises(asyncio.CancelledError):
        await quitter
    await asyncio.wait_for(next_in_line, 5)  # the slot was passed on, not lost
    late = asyncio.create_task(pool._slot(None))
    await asyncio.sleep(0)
    assert not late.done()  # one slot, in use: not two
    pool._free_slot()
    await asyncio.wait_for(late, 5)
    await pool.close()


async def test_a_stream_is_read_as_it_arrives_and_times_out_when_silent() -> None:
    pause = asyncio.Event()

    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n")
            await writer.drain()
            await pause.wait()

        return handle

    async with serving(make) as (_server, pool):
        stream = await pool.stream(request(), Timeout(connect=5, read=0.1))
        assert await stream.read() == b"one"
        with pytest.raises(TimeoutError):
            await stream.read()
        assert await stream.read() == b""  # closed by the failure
    pause.set()


async def test_a_slow_stream_reader_holds_the_server_back_and_loses_nothing() -> None:
    piece = b"x" * 65_536
    pieces = 96  # 6 MiB: three times the high-water mark

    def make(server: RawServer) -> Handler:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await server.read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for index in range(pieces):
                writer.write(b"%x\r\n%s\r\n" % (len(piece), bytes([65 + index % 26]) * len(piece)))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            await reader.read()

        return handle

    async with serving(make) as (_server, pool):
        stream = await pool.stream(request(), Timeout(connect=5, read=5))
        received = bytearray()
        while chunk := await stream.read():
            received += chunk
            await asyncio.sleep(0)
        expected = b"".join(bytes([65 + i % 26]) * len(piece) for i in range(pieces))
        assert received == expected


async def test_closing_the_pool_ends_an_open_stream() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    async with serving(answering(head)) as (_server, pool):
        stream = await pool.stream(request(), Timeout(connect=5, read=30))
        reading = asyncio.create_task(stream.read())
        await asyncio.sleep(0.05)
        await pool.close()
        with pytest.raises(Broken, match="closed"):
            await asyncio.wait_for(reading, 2)


async def test_connection_refused_is_not_connected() -> None:
    async with raw_server(nothing) as server:
        port = server.port
    pool = Pool(Endpoint("127.0.0.1", port), limit=1)
    with pytest.raises(NotConnected):
        await pool.request(request(), LIMITS)
    with pytest.raises(NotConnected):  # the slot came back
        await pool.request(request(), LIMITS)


class Refused(Exception):
    pass


def refuse() -> None:
    raise Refused


@pytest.mark.parametrize("upgrade", [False, True], ids=["request", "upgrade"])
async def test_a_send_refused_at_the_last_moment_sends_nothing_and_keeps_the_connection(
    upgrade: bool,
) -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    async with serving(answering(answer, answer)) as (server, pool):
        assert (await pool.request(request(), LIMITS))[1] == b"ok"  # one idle connection
        send = pool.upgrade if upgrade else pool.request
        for _ in range(5):  # more than the pool's four slots: each refusal gave its slot back
            with pytest.raises(Refused):
                await send(request(), LIMITS, before_send=refuse)
        assert len(server.requests) == 1  # nothing more was written
        assert (await pool.request(request(), LIMITS))[1] == b"ok"
    assert server.connections == 1  # the refused sends left the connection as it was


async def test_a_switch_of_protocols_hands_over_the_transport_with_early_bytes() -> None:
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nearly"
    async with serving(answering(switch)) as (_server, pool):
        switched = await pool.upgrade(request(), LIMITS)
        assert isinstance(switched, Upgraded)
        assert (switched.response.status, switched.rest) == (101, b"early")
        switched.transport.close()


async def test_a_refused_switch_is_a_stream_of_the_refusal() -> None:
    refusal = b'HTTP/1.1 403 Forbidden\r\nContent-Length: 15\r\n\r\n{"kind":"Nope"}'
    async with serving(answering(refusal)) as (_server, pool):
        answer = await pool.upgrade(request(), LIMITS)
        assert isinstance(answer, Stream)
        assert answer.response.status == 403
        assert await answer.read_all(1024) == b'{"kind":"Nope"}'


async def test_tls_through_a_connect_tunnel(tmp_path: Path) -> None:
    certificate = self_signed()
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret"
    tunnels: list[bytes] = []
    proxied = asyncio.Event()

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        tunnels.append(head)
        target = head.split(b" ")[1].decode()
        host, port = target.rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            sink.close()

        async with asyncio.TaskGroup() as group:
            group.create_task(pump(reader, upstream_writer))
            group.create_task(pump(upstream_reader, writer))
        proxied.set()

    async with (
        raw_server(nothing, tls=certificate.context) as secure,
        raw_server(proxy) as proxy_server,
    ):
        secure.handler = answering(answer)(secure)
        client_tls = ssl.create_default_context(cadata=certificate.ca_pem.decode())
        credentials = "Basic " + base64.b64encode(b"me:pw").decode()
        endpoint = Endpoint(
            "127.0.0.1",
            secure.port,
            client_tls,
            proxy=Proxy(
                "127.0.0.1",
                proxy_server.port,
                tunnel_headers=(("Proxy-Authorization", credentials),),
            ),
        )
        pool = Pool(endpoint, limit=2)
        assert (await pool.request(request(), LIMITS))[1] == b"secret"
        await pool.close()
        await asyncio.wait_for(proxied.wait(), 5)  # both directions of the tunnel wound down
    assert tunnels[0].startswith(f"CONNECT 127.0.0.1:{secure.port} HTTP/1.1\r\n".encode())
    assert f"Proxy-Authorization: {credentials}".encode() in tunnels[0]
    assert secure.requests[0].startswith(b"GET /x HTTP/1.1")  # arrived through TLS


async def test_a_refused_tunnel_means_nothing_was_sent() -> None:
    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
        await writer.drain()

    async with raw_server(proxy) as proxy_server:
        endpoint = Endpoint(
            "127.0.0.1",
            1,
            ssl.create_default_context(),
            proxy=Proxy("127.0.0.1", proxy_server.port),
        )
        with pytest.raises(NotConnected, match="407"):
            await Pool(endpoint, limit=1).request(request(), LIMITS)


async def test_a_stream_held_back_by_its_reader_is_not_idle() -> None:
    body = b"y" * (6 * 2**20)
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    async with serving(answering(answer)) as (_server, pool):
        stream = await pool.stream(request(), Timeout(connect=5, read=0.1))
        first = await stream.read()
        await asyncio.sleep(0.3)  # three read timeouts with the socket paused: not silence
        received = bytearray(first)
        while chunk := await stream.read():
            received += chunk
        assert received == body


async def test_a_connection_idle_too_long_is_closed_not_reused() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    async with serving(answering(answer, answer, answer)) as (server, _pool):
        pool = Pool(Endpoint("127.0.0.1", server.port), limit=2, idle_timeout=0.05)
        assert (await pool.request(request(), LIMITS))[1] == b"ok"
        assert (await pool.request(request(), LIMITS))[1] == b"ok"  # at once: reused
        assert server.connections == 1
        await asyncio.sleep(0.1)  # twice the idle timeout
        assert (await pool.request(request(), LIMITS))[1] == b"ok"
        assert server.connections == 2  # a fresh connection, the idle one closed
        await pool.close()


async def test_connections_probe_a_silent_peer_with_tcp_keepalive() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    async with serving(answering(answer)) as (_server, pool):
        stream = await pool.stream(request(), LIMITS)
        transport = stream._connection.transport if stream._connection else None
        assert transport is not None
        sock = transport.get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
        assert await stream.read_all(100) == b"ok"
