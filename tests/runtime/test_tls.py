"""Serving certificates: self-signed in a child process, or from a directory."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from etctl.errors import ConfigError
from etctl.runtime._health import Checks, HttpServer, SecureServing
from etctl.runtime._http_server import Listener, Request, Response, text
from etctl.runtime._tls import (
    directory_context,
    self_signed_context,
    self_signed_pem,
    serving_context,
)


async def allow(_request: Request) -> Response | None:
    return None


async def refuse(_request: Request) -> Response | None:
    return text(401, "Unauthorized\n")


async def https_get(address: tuple[str, int], trust: bytes | None = None) -> bytes:
    context = ssl.create_default_context(cadata=trust.decode() if trust else None)
    if trust is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    reader, writer = await asyncio.open_connection(
        *address, ssl=context, server_hostname="localhost"
    )
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    answer = await reader.read()
    writer.close()
    return answer


def secure_server(secure: SecureServing) -> HttpServer:
    return HttpServer(
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        healthz=Checks("/healthz"),
        readyz=Checks("/readyz"),
        secure=secure,
    )


async def test_a_self_signed_certificate_serves_tls_behind_the_guard() -> None:
    server = secure_server(SecureServing(refuse))
    await server.start()
    try:
        assert server.metrics_address is not None
        answer = await https_get(server.metrics_address)
        assert answer.startswith(b"HTTP/1.1 401 Unauthorized\r\n")
        assert answer.endswith(b"\r\n\r\nUnauthorized\n")
    finally:
        await server.stop()


async def test_concurrent_first_connections_share_one_certificate() -> None:
    # The certificate is made when the first connection arrives; those arriving meanwhile wait
    # for it, their hellos held until TLS takes the connection.
    server = secure_server(SecureServing(refuse))
    await server.start()
    try:
        assert server.metrics_address is not None
        answers = await asyncio.gather(*(https_get(server.metrics_address) for _ in range(12)))
        assert all(answer.startswith(b"HTTP/1.1 401 Unauthorized\r\n") for answer in answers)
    finally:
        await server.stop()


async def test_a_certificate_directory_is_served_and_verifies(tmp_path: Path) -> None:
    cert, key = self_signed_pem("etctl test", names=("localhost",), addresses=("127.0.0.1",))
    (tmp_path / "serving.crt").write_bytes(cert)
    (tmp_path / "serving.key").write_bytes(key)
    server = secure_server(
        SecureServing(
            allow, cert_dir=str(tmp_path), cert_name="serving.crt", key_name="serving.key"
        )
    )
    await server.start()
    try:
        assert server.metrics_address is not None
        answer = await https_get(server.metrics_address, trust=cert)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        await server.stop()
    with pytest.raises(ConfigError, match="cannot serve TLS"):
        directory_context(tmp_path)  # tls.crt and tls.key are not there
    missing = secure_server(SecureServing(allow, cert_dir=str(tmp_path)))
    with pytest.raises(ConfigError, match="cannot be read"):
        await missing.start()  # at start, not at the first scrape


async def test_self_signed_contexts_are_fresh_and_tls_12_at_least() -> None:
    first, second = await asyncio.gather(self_signed_context("a"), self_signed_context("b"))
    assert first.minimum_version == ssl.TLSVersion.TLSv1_2
    assert first is not second


def test_secure_metrics_cannot_share_the_probes_address() -> None:
    with pytest.raises(ConfigError, match="cannot share"):
        HttpServer(
            metrics_bind_address="127.0.0.1:18443",
            health_probe_bind_address="127.0.0.1:18443",
            healthz=Checks("/healthz"),
            readyz=Checks("/readyz"),
            secure=SecureServing(allow),
        )


async def _records_of_answer(address: tuple[str, int], trust: bytes, request: bytes) -> list[bytes]:
    """The plaintext of each TLS record the answer to ``request`` came in (one read each)."""
    context = ssl.create_default_context(cadata=trust.decode())
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    reader, writer = await asyncio.open_connection(*address)
    try:

        async def exchange() -> None:
            writer.write(outgoing.read())
            await writer.drain()
            data = await reader.read(65536)
            assert data, "the server closed the connection"
            incoming.write(data)

        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                await exchange()
        tls.write(request)
        writer.write(outgoing.read())
        records: list[bytes] = []
        while not b"".join(records).endswith(b"\r\n\r\nok\n"):
            try:
                records.append(tls.read(65536))  # OpenSSL reads one record at a time
            except ssl.SSLWantReadError:
                await exchange()
        return records
    finally:
        writer.close()


async def test_an_answer_is_one_tls_record() -> None:
    # Written at once, an answer wakes its client once: a head written alone woke it for nothing
    # and left it waiting for the body (a webhook's caller is the API server, on every write).
    cert, key = self_signed_pem("etctl test", names=("localhost",), addresses=("127.0.0.1",))
    context = serving_context(cert, key)

    async def tls() -> ssl.SSLContext:
        return context

    listener = Listener(lambda _path: lambda _request: text(200, "ok\n"), tls=tls)
    address = await listener.start("127.0.0.1", 0)
    try:
        request = b"GET /ok HTTP/1.1\r\nHost: localhost\r\n\r\n"
        records = await _records_of_answer(address, cert, request)
    finally:
        await listener.close()
    assert len(records) == 1
    assert records[0].startswith(b"HTTP/1.1 200 OK\r\n")
