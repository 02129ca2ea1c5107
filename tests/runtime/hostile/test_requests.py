"""What the client sends: nothing a caller passes can end the request line or a header."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from etctl.errors import ConfigError, UnsafeRequest
from etctl.runtime import PODS, Resource
from tests.runtime.hostile.server import OK_JSON, answer, hostile_server
from tests.runtime.scripted import client_for

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
    OK_JSON
)
SMUGGLED = (
    " HTTP/1.1\r\nHost: x\r\n\r\n"
    "DELETE /api/v1/namespaces/kube-system/pods/victim HTTP/1.1\r\nHost: x\r\n\r\n"
)


def assert_one_request_line(lines: list[bytes]) -> None:
    """Exactly one request arrived, a GET whose target holds nothing but visible ASCII."""
    assert len(lines) == 1, lines
    method, target, version = lines[0].split(b" ")
    assert (method, version) == (b"GET", b"HTTP/1.1")
    assert all(0x21 <= byte <= 0x7E for byte in target)


async def test_a_subresource_cannot_smuggle_a_second_request(tmp_path: Path) -> None:
    async with hostile_server(answer(OK, OK_JSON)) as server:
        async with await client_for(server.url, tmp_path) as client:
            await client.get_subresource(PODS, "p", "status" + SMUGGLED, namespace="ns")
            async with asyncio.timeout(1):  # a smuggled second request would be answered too
                await asyncio.sleep(0.1)
    assert_one_request_line(server.request_lines())
    assert server.request_lines()[0].startswith(
        b"GET /api/v1/namespaces/ns/pods/p/status%20HTTP%2F1.1%0D%0AHost%3A%20x%0D%0A%0D%0ADELETE"
    )
    assert server.requests[0].count(b"Authorization: Bearer") == 1


async def test_a_resource_plural_cannot_smuggle_a_second_request(tmp_path: Path) -> None:
    evil = Resource("", "v1", "pods" + SMUGGLED, "Pod")
    async with hostile_server(answer(OK, OK_JSON)) as server:
        async with await client_for(server.url, tmp_path) as client:
            await client.get(evil, "p", namespace="ns")
            await asyncio.sleep(0.1)
    assert_one_request_line(server.request_lines())
    assert b"/pods%20HTTP%2F1.1%0D%0A" in server.request_lines()[0]


@pytest.mark.parametrize("name", [".", ".."])
async def test_dot_segments_are_refused_before_anything_is_sent(tmp_path: Path, name: str) -> None:
    async with hostile_server(answer(OK, OK_JSON)) as server:
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(UnsafeRequest, match="path segment"):
                await client.get(PODS, name, namespace="ns")  # would name the collection
            with pytest.raises(UnsafeRequest):
                await client.delete(PODS, "p", namespace=name)
    assert server.connections == 0


async def test_a_user_agent_with_a_line_break_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="User-Agent"):
        await client_for("http://127.0.0.1:1", tmp_path, user_agent="etctl\r\nX-Evil: 1")
