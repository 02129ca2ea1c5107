"""EndpointClient: requests to one endpoint over kept-alive connections, errors by what happened."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from etctl.errors import RequestNotSent, ResponseTooLarge, TransportError, UnsafeRequest
from etctl.runtime import EndpointClient
from tests.runtime.test_client_connection import self_signed
from tests.runtime.test_http import RawServer, answering, nothing, raw_server

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


def verifying(ca_pem: bytes) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca_pem.decode())


async def test_requests_reuse_one_tls_connection_and_send_what_was_given() -> None:
    certificate = self_signed()
    async with raw_server(nothing, tls=certificate.context) as server:
        server.handler = answering(OK, b"HTTP/1.1 422 X\r\nContent-Length: 1\r\n\r\n!")(server)
        client = EndpointClient(
            "127.0.0.1", server.port, tls=verifying(certificate.ca_pem), server_hostname="127.0.0.1"
        )
        try:
            first = await client.request(
                "POST", "/v?timeout=10s", headers={"Host": "hook.ns.svc:443"}, body=b'{"a":1}'
            )
            second = await client.request("POST", "/v", headers={"Host": "h"}, body=b"{}")
        finally:
            await client.close()
    assert first == (200, b"{}")
    assert second == (422, b"!")  # any status is an answer
    assert server.connections == 1
    head = server.requests[0].decode()
    assert head.startswith("POST /v?timeout=10s HTTP/1.1\r\nHost: hook.ns.svc:443\r\n")
    assert "Content-Length: 7\r\n" in head


async def test_a_certificate_not_signed_by_the_ca_is_not_connected_with_its_cause() -> None:
    async with raw_server(nothing, tls=self_signed().context) as server:
        client = EndpointClient("127.0.0.1", server.port, tls=verifying(self_signed().ca_pem))
        try:
            with pytest.raises(RequestNotSent) as refused:
                await client.request("POST", "/v", headers={}, body=b"{}")
        finally:
            await client.close()
    assert isinstance(refused.value.__cause__, ssl.SSLCertVerificationError)
    assert server.requests == []


async def test_a_refused_connection_is_not_connected_with_its_cause() -> None:
    async with raw_server(nothing) as server:
        port = server.port
    client = EndpointClient("127.0.0.1", port, tls=None)
    with pytest.raises(RequestNotSent) as refused:
        await client.request("GET", "/", headers={})
    assert isinstance(refused.value.__cause__, ConnectionRefusedError)


async def test_an_answer_past_the_limit_is_refused() -> None:
    big = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100
    async with raw_server(nothing) as server:
        server.handler = answering(big)(server)
        client = EndpointClient("127.0.0.1", server.port, tls=None, max_response_bytes=99)
        try:
            with pytest.raises(ResponseTooLarge):
                await client.request("GET", "/", headers={})
        finally:
            await client.close()


async def test_a_connection_closed_without_an_answer_is_a_transport_error() -> None:
    async def close_after_reading(reader: asyncio.StreamReader, _w: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")

    async with raw_server(close_after_reading) as server:
        client = EndpointClient("127.0.0.1", server.port, tls=None)
        try:
            with pytest.raises(TransportError) as failed:
                await client.request("GET", "/", headers={}, timeout=5)
        finally:
            await client.close()
    assert not isinstance(failed.value, RequestNotSent)


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        ("POST", "/v HTTP/1.1\r\nX: y", {}),
        ("POST", "/v w", {}),
        ("POST", "v", {}),
        ("POST", "/vé", {}),
        ("PO ST", "/v", {}),
        ("POST", "/v", {"X": "a\r\nInjected: 1"}),
    ],
)
async def test_what_cannot_be_sent_safely_is_refused_before_connecting(
    method: str, target: str, headers: dict[str, str]
) -> None:
    server = RawServer(nothing)
    async with raw_server(server.serve) as listening:
        client = EndpointClient("127.0.0.1", listening.port, tls=None)
        try:
            with pytest.raises(UnsafeRequest):
                await client.request(method, target, headers=headers, body=b"{}")
        finally:
            await client.close()
    assert server.connections == 0
