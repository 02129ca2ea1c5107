"""Watch decoding and failure modes, byte-exact against a scripted server."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from etctl.errors import Gone, TransportError
from etctl.runtime import PODS, RetryPolicy
from etctl.runtime._client import WatchEvent, WatchIdleTimeout
from etctl.runtime._watch import LineSplitter
from tests.runtime.scripted import (
    InstantClock,
    client_for,
    json_response,
    scripted_server,
    status_body,
)


def line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def pod(name: str, rv: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        **extra,
    }


def streaming(chunks: Sequence[bytes], *, hold: asyncio.Event | None = None) -> Any:
    """A watch handler writing ``chunks`` one write each, then holding or closing the stream."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        if hold is not None:
            await hold.wait()
        return response

    return handler


async def collect(stream: Any) -> list[WatchEvent]:
    return [event async for event in stream]


async def test_events_decode_in_order_and_a_clean_close_ends_the_iteration(tmp_path: Path) -> None:
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "12"}}
    chunks = [
        line("ADDED", pod("a", "10")) + line("MODIFIED", pod("a", "11")),
        b"\n",  # blank lines (keep-alives) are skipped
        line("BOOKMARK", bookmark) + line("DELETED", pod("a", "13")),
    ]
    async with scripted_server() as server:
        server.handler = streaming(chunks)
        async with await client_for(server.url, tmp_path) as client:
            async with client.watch(
                PODS,
                namespace="ns",
                resource_version="9",
                label_selector="app=x",
                field_selector="metadata.name=a",
                timeout_seconds=300,
            ) as stream:
                events = await collect(stream)
                assert stream.resource_version == "13"
                assert stream.closed
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "10"),
        ("MODIFIED", "11"),
        ("BOOKMARK", "12"),
        ("DELETED", "13"),
    ]
    assert server.seen[0].path == "/api/v1/namespaces/ns/pods"
    assert dict(server.seen[0].query) == {
        "watch": "true",
        "labelSelector": "app=x",
        "fieldSelector": "metadata.name=a",
        "resourceVersion": "9",
        "timeoutSeconds": "300",
        "allowWatchBookmarks": "true",
    }


async def test_a_line_split_across_chunks_and_a_large_object(tmp_path: Path) -> None:
    big = pod("big", "20", data={"blob": "x" * (3 * 1024 * 1024 // 2)})  # a 1.5 MiB object
    encoded = line("ADDED", big)
    small = line("ADDED", pod("small", "21"))
    # Cut the big line into odd pieces, the last sharing a chunk with the next event's start.
    pieces = [encoded[:7], encoded[7:100_003], encoded[100_003:-5], encoded[-5:] + small[:9]]
    pieces.append(small[9:])
    async with scripted_server() as server:
        server.handler = streaming(pieces)
        async with await client_for(server.url, tmp_path) as client:
            async with client.watch(PODS) as stream:
                events = await collect(stream)
    assert [e.object["metadata"]["name"] for e in events] == ["big", "small"]
    assert events[0].object == big


async def test_an_error_event_raises_gone_for_410(tmp_path: Path) -> None:
    expired = status_body(410, "Expired", "too old resource version: 5 (100)")
    chunks = [line("ADDED", pod("a", "101")), line("ERROR", expired)]
    async with scripted_server() as server:
        server.handler = streaming(chunks)
        async with await client_for(server.url, tmp_path) as client:
            async with client.watch(PODS, resource_version="5") as stream:
                first = await anext(stream)
                with pytest.raises(Gone, match="too old"):
                    await anext(stream)
                assert stream.closed
                with pytest.raises(StopAsyncIteration):
                    await anext(stream)
    assert first.object["metadata"]["name"] == "a"


async def test_a_silent_watch_ends_with_the_idle_timeout(tmp_path: Path) -> None:
    hold = asyncio.Event()
    async with scripted_server() as server:
        server.handler = streaming([line("ADDED", pod("a", "1"))], hold=hold)
        async with await client_for(server.url, tmp_path) as client:
            async with client.watch(PODS, idle_timeout=0.2) as stream:
                await anext(stream)
                with pytest.raises(WatchIdleTimeout, match="idle"):
                    await anext(stream)
        hold.set()


async def test_a_broken_stream_is_a_transport_error(tmp_path: Path) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(line("ADDED", pod("a", "1")) + b'{"type":"MODIFI')
        assert request.transport is not None
        request.transport.abort()  # the connection dies mid-event
        return response

    async with scripted_server() as server:
        server.handler = handler
        async with await client_for(server.url, tmp_path) as client:
            async with client.watch(PODS) as stream:
                await anext(stream)
                with pytest.raises(TransportError) as exc:
                    await anext(stream)
    assert not isinstance(exc.value, WatchIdleTimeout)


async def test_a_garbled_line_is_a_transport_error(tmp_path: Path) -> None:
    async with scripted_server() as server:
        server.handler = streaming([b"not json\n"])
        async with await client_for(server.url, tmp_path) as client:
            async with client.watch(PODS) as stream:
                with pytest.raises(TransportError, match="undecodable"):
                    await anext(stream)


async def test_watch_start_is_retried_and_a_refusal_is_mapped(tmp_path: Path) -> None:
    clock = InstantClock()
    answers: list[Any] = [
        lambda: json_response(status_body(503, "ServiceUnavailable", "x"), 503),
        lambda: None,
    ]

    async def handler(request: web.Request) -> web.StreamResponse:
        answer = answers.pop(0)()
        if answer is not None:
            return answer  # type: ignore[no-any-return]
        return await streaming([line("ADDED", pod("a", "1"))])(request)  # type: ignore[no-any-return]

    async with scripted_server() as server:
        server.handler = handler
        async with await client_for(server.url, tmp_path, clock=clock) as client:
            async with client.watch(PODS) as stream:
                assert [e.type for e in await collect(stream)] == ["ADDED"]
            assert len(clock.slept) == 1

            async def gone(_request: web.Request) -> web.StreamResponse:
                return json_response(status_body(410, "Expired", "too old"), 410)

            server.handler = gone
            with pytest.raises(Gone):
                async with client.watch(PODS, resource_version="1"):
                    pass
            assert len(server.seen) == 3  # a 410 at the start is not retried


async def test_send_initial_events_brings_the_required_parameters(tmp_path: Path) -> None:
    end = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "7", "annotations": {"k8s.io/initial-events-end": "true"}},
    }
    async with scripted_server() as server:
        server.handler = streaming([line("ADDED", pod("a", "3")), line("BOOKMARK", end)])
        async with await client_for(
            server.url, tmp_path, retry=RetryPolicy(max_attempts=1)
        ) as client:
            async with client.watch(
                PODS, send_initial_events=True, allow_bookmarks=False
            ) as stream:
                events = await collect(stream)
    assert events[-1].type == "BOOKMARK"
    query = dict(server.seen[0].query)
    assert query["sendInitialEvents"] == "true"
    assert query["resourceVersionMatch"] == "NotOlderThan"
    assert query["allowWatchBookmarks"] == "true"


def test_line_splitter_rejects_lines_over_the_limit() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"0123456789\n") == [b"0123456789"]
    with pytest.raises(TransportError, match="exceeds"):
        splitter.feed(b"0123456789AB")
    splitter = LineSplitter(10)
    splitter.feed(b"012345")
    with pytest.raises(TransportError):
        splitter.feed(b"6789ABC\n")


def test_line_splitter_keeps_an_unterminated_tail() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b"a\nb") == [b"a"]
    assert splitter.finish() == b"b"
    assert splitter.finish() == b""


@given(
    lines=st.lists(
        st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"_")), max_size=20
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=1000), max_size=30),
)
def test_line_splitter_is_independent_of_chunk_boundaries(
    lines: list[bytes], cuts: list[int]
) -> None:
    lines = [item for item in lines if item.strip()]
    data = b"".join(item + b"\n" for item in lines)
    bounds = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    splitter = LineSplitter(1000)
    out: list[bytes] = []
    for start, end in itertools.pairwise(bounds):
        out.extend(splitter.feed(data[start:end]))
    assert out == lines
    assert splitter.finish() == b""
