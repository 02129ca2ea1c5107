"""When the client repeats a request: a create only when the server provably did not act, and
never sooner than the server asked."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from etctl.errors import ServerError, TooManyRequests, TransportError
from etctl.runtime import PODS, RetryPolicy
from tests.runtime.hostile.server import OK_JSON, Peer, Script, hostile_server
from tests.runtime.scripted import InstantClock, client_for

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
EXISTS = (
    b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"AlreadyExists",'
    b'"message":"pods \\"p\\" already exists","code":409}'
)


def status(code: int, reason: bytes, body: bytes, *headers: bytes) -> bytes:
    extra = b"".join(header + b"\r\n" for header in headers)
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        code,
        reason,
        len(body),
        extra,
        body,
    )


async def test_a_named_create_whose_answer_was_lost_is_not_repeated(tmp_path: Path) -> None:
    async def lose_the_first_answer(peer: Peer) -> None:
        await peer.request()
        if len(peer.server.requests) == 1:
            return  # the create happened; its answer never leaves
        await peer.send(status(409, b"Conflict", EXISTS))  # what a repeat would meet
        await peer.hold()

    async with hostile_server(lose_the_first_answer) as server:
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(TransportError) as raised:
                await client.create(PODS, POD)
    # The truth (the answer was lost), not AlreadyExists for the caller's own object.
    assert type(raised.value) is TransportError
    assert [line.split(b" ")[0] for line in server.request_lines()] == [b"POST"]


def answers(*scripted: bytes) -> Script:
    """Successive requests (on any connection) answered with ``scripted`` in turn, the last
    answer repeated."""

    async def script(peer: Peer) -> None:
        while True:
            await peer.request()
            index = len(peer.server.requests) - 1
            await peer.send(scripted[min(index, len(scripted) - 1)])

    return script


OK = status(200, b"OK", OK_JSON)
THROTTLED = status(429, b"Too Many Requests", b"{}", b"Retry-After: 3")


@pytest.mark.parametrize(
    ("first", "waited"),
    [
        (THROTTLED, 3.0),
        (status(503, b"Service Unavailable", b"{}", b"Retry-After: 7"), 7.0),
        (status(429, b"Too Many Requests", b"{}", b"Retry-After: 600"), 60.0),  # capped
    ],
    ids=["429", "503", "capped"],
)
async def test_retry_after_is_waited(tmp_path: Path, first: bytes, waited: float) -> None:
    clock = InstantClock()
    script = answers(first, OK)
    async with hostile_server(script) as server:
        async with await client_for(server.url, tmp_path, clock=clock) as client:
            assert (await client.get(PODS, "p", namespace="ns"))["kind"] == "Pod"
    assert clock.slept == [waited]


async def test_a_retry_after_of_zero_does_not_hammer_the_server(tmp_path: Path) -> None:
    clock = InstantClock()
    script = answers(status(503, b"Service Unavailable", b"{}", b"Retry-After: 0"))
    policy = RetryPolicy(max_attempts=4, backoff_base=0.2)
    async with hostile_server(script) as server:
        async with await client_for(server.url, tmp_path, clock=clock, retry=policy) as client:
            with pytest.raises(ServerError):
                await client.get(PODS, "p", namespace="ns")
    # The backoff still applies (client-go waits the longer of the two).
    assert len(clock.slept) == 3
    assert all(delay >= 0.1 for delay in clock.slept)


async def test_a_create_is_repeated_on_429_with_retry_after_only(tmp_path: Path) -> None:
    clock = InstantClock()
    created = status(201, b"Created", OK_JSON)
    script = answers(THROTTLED, created, status(429, b"Too Many Requests", b"{}"))
    async with hostile_server(script) as server:
        async with await client_for(server.url, tmp_path, clock=clock) as client:
            assert (await client.create(PODS, POD))["kind"] == "Pod"
            with pytest.raises(TooManyRequests):
                await client.create(PODS, POD)  # throttled, not told when: an answer
    assert clock.slept == [3.0]
    assert len(server.requests) == 3


async def test_a_create_is_not_repeated_on_5xx(tmp_path: Path) -> None:
    script = answers(status(503, b"Service Unavailable", b"{}", b"Retry-After: 1"))
    async with hostile_server(script) as server:
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(ServerError):
                await client.create(PODS, POD)
            await asyncio.sleep(0)
    assert len(server.requests) == 1
