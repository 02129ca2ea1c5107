"""What the client accepts as an answer: strict framing, bounded heads, no endless waits.

Every case here is a server on 127.0.0.1 answering what no well-behaved server sends; each test
asserts what the client does with it, within a bound far above what the client needs (the test's
own ``asyncio.timeout``), so a client that hangs fails instead of stalling the suite.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from etctl.errors import ResponseTooLarge, TransportError
from etctl.runtime import PODS, RetryPolicy
from tests.runtime.hostile.server import OK_JSON, Peer, answer, hostile_server
from tests.runtime.scripted import client_for

ONCE = RetryPolicy(max_attempts=1)
SWITCH = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def json_head(length: int) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (
        length
    )


async def test_a_101_to_a_get_is_refused_at_once(tmp_path: Path) -> None:
    async with hostile_server(answer(SWITCH)) as server:
        async with await client_for(server.url, tmp_path, retry=ONCE) as client:
            async with asyncio.timeout(5):  # the request timeout (30 s) is not what ends it
                with pytest.raises(TransportError, match="101"):
                    await client.get(PODS, "p", namespace="ns")


async def test_a_101_to_a_watch_is_refused_at_once(tmp_path: Path) -> None:
    async with hostile_server(answer(SWITCH)) as server:
        async with await client_for(server.url, tmp_path, retry=ONCE) as client:
            async with asyncio.timeout(5):  # the watch's read timeout (90 s) is not either
                with pytest.raises(TransportError, match="101"):
                    async with client.watch(PODS, namespace="ns"):
                        pass


async def continue_forever(peer: Peer) -> None:
    """``100 Continue`` every 20 ms, never an answer (the case said every 2 s: the same)."""
    await peer.request()
    while True:
        await peer.send(CONTINUE)
        await asyncio.sleep(0.02)


async def test_endless_interim_answers_end_a_request_after_five(tmp_path: Path) -> None:
    async with hostile_server(continue_forever) as server:
        async with await client_for(server.url, tmp_path, retry=ONCE) as client:
            async with asyncio.timeout(5):
                with pytest.raises(TransportError, match="more than 5 interim"):
                    await client.get(PODS, "p", namespace="ns")
                with pytest.raises(TransportError, match="more than 5 interim"):
                    async with client.watch(PODS, namespace="ns"):
                        pass


async def test_interim_answers_do_not_extend_a_watchs_wait_for_its_answer(tmp_path: Path) -> None:
    async def slow_continues(peer: Peer) -> None:
        await peer.request()
        for _ in range(4):  # fewer than five: refused by the read timeout, not the count
            await asyncio.sleep(0.3)
            await peer.send(CONTINUE)
        await peer.hold()

    async with hostile_server(slow_continues) as server:
        async with await client_for(server.url, tmp_path, retry=ONCE) as client:
            started = time.monotonic()
            with pytest.raises(TransportError, match="in time"):
                async with client.watch(PODS, namespace="ns", idle_timeout=0.5):
                    pass
            # 0.5 s after the request; each interim answer restarting the wait would make 1.7 s.
            assert time.monotonic() - started < 1.1


async def test_the_request_timeout_covers_interim_answers(tmp_path: Path) -> None:
    async def slow_continues(peer: Peer) -> None:
        await peer.request()
        for _ in range(3):
            await asyncio.sleep(0.1)
            await peer.send(CONTINUE)
        await peer.hold()

    async with hostile_server(slow_continues) as server:
        async with await client_for(
            server.url, tmp_path, retry=ONCE, request_timeout=0.25
        ) as client:
            async with asyncio.timeout(5):
                with pytest.raises(TransportError, match="in time"):
                    await client.get(PODS, "p", namespace="ns")


LAX = {
    "content-length-plus": b"HTTP/1.1 200 OK\r\nContent-Length: +%d\r\n\r\n" % len(OK_JSON),
    "content-length-underscore": b"HTTP/1.1 200 OK\r\nContent-Length: 7_3\r\n\r\n",
    "chunk-size-0x": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x%x\r\n"
    % len(OK_JSON),
    "status-plus": b"HTTP/1.1 +200 OK\r\nContent-Length: %d\r\n\r\n" % len(OK_JSON),
    "bare-lf-in-value": b"HTTP/1.1 200 OK\r\nX-A: a\nb\r\nContent-Length: %d\r\n\r\n"
    % len(OK_JSON),
    "two-lengths": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Length: 2\r\n\r\n"
    % len(OK_JSON),
    "length-and-chunked": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n" % len(OK_JSON),
    "http-2-status-line": b"HTTP/2.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(OK_JSON),
    "rtsp-status-line": b"RTSP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(OK_JSON),
    "folded-header": b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: %d\r\n\r\n"
    % len(OK_JSON),
}


@pytest.mark.parametrize("head", LAX.values(), ids=LAX.keys())
async def test_lax_answers_are_refused(tmp_path: Path, head: bytes) -> None:
    body = OK_JSON + b"\r\n0\r\n\r\n" if b"chunked" in head else OK_JSON
    async with hostile_server(answer(head, body)) as server:
        async with await client_for(server.url, tmp_path, retry=ONCE) as client:
            async with asyncio.timeout(5):
                with pytest.raises(TransportError, match=r"not a valid|not an HTTP"):
                    await client.get(PODS, "p", namespace="ns")


async def test_a_head_over_64_kib_is_refused_even_when_it_arrives_whole(tmp_path: Path) -> None:
    padding = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 1000) for i in range(100))
    head = b"HTTP/1.1 200 OK\r\n" + padding + b"Content-Length: %d\r\n\r\n" % len(OK_JSON)
    async with hostile_server(answer(head, OK_JSON)) as server:
        async with await client_for(server.url, tmp_path, retry=ONCE) as client:
            with pytest.raises(TransportError, match="exceed 65536"):
                await client.get(PODS, "p", namespace="ns")


GIB = 2**30


async def test_a_gigabyte_announced_by_content_length_is_refused_before_its_body(
    tmp_path: Path,
) -> None:
    async def gigabyte(peer: Peer) -> None:
        await peer.request()
        await peer.send(json_head(GIB))
        piece = b" " * 2**20
        for _ in range(64):  # a server that would go on; 64 MiB is enough to tell
            await peer.send(piece)
        await peer.hold()

    async with hostile_server(gigabyte) as server:
        async with await client_for(server.url, tmp_path) as client:
            async with asyncio.timeout(10):
                with pytest.raises(ResponseTooLarge, match="exceeds 268435456"):
                    await client.get(PODS, "p", namespace="ns")
    assert len(server.requests) == 1  # never retried: the next answer would be as large
    assert server.sent < 32 * 2**20  # refused at the head, the body left unread


async def test_an_endless_chunked_answer_is_refused_at_the_limit(tmp_path: Path) -> None:
    async def endless(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = b"%x\r\n%s\r\n" % (2**16, b" " * 2**16)
        for _ in range(GIB // 2**16):
            await peer.send(piece)

    limit = 4 * 2**20
    async with hostile_server(endless) as server:
        async with await client_for(server.url, tmp_path, max_response_bytes=limit) as client:
            async with asyncio.timeout(10):
                with pytest.raises(ResponseTooLarge, match="exceeds 4194304"):
                    await client.get(PODS, "p", namespace="ns")
    assert len(server.requests) == 1
    # What the client read before it stopped, and what the sockets' buffers held: far from 1 GiB.
    assert server.sent < limit + 16 * 2**20
