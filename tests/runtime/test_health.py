"""Health checks and the metrics/probe server, as controller-runtime serves them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Never

import aiohttp
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.registry import Collector

from etctl.errors import ConfigError
from etctl.runtime._health import Checks, HttpServer, parse_bind_address


class Flag:
    """A check whose outcome the test sets."""

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason

    def __call__(self) -> str | None:
        return self.reason


def boom() -> str | None:
    msg = "the check itself broke"
    raise RuntimeError(msg)


def test_an_empty_set_serves_ping() -> None:
    checks = Checks("/healthz")
    assert checks.aggregate() == (200, "ok")
    assert checks.aggregate(verbose=True) == (200, "[+]ping ok\nhealthz check passed\n")
    assert checks.single("ping") == (200, "ok")
    assert checks.failing() == {}


def test_failures_are_verbose_sorted_and_withhold_the_reason() -> None:
    checks = Checks("/readyz")
    checks.add("zeta", Flag())
    checks.add("alpha", Flag("caches are not synced"))
    checks.add("broken", boom)
    status, body = checks.aggregate()
    assert status == 500
    assert body == (
        "[-]alpha failed: reason withheld\n"
        "[-]broken failed: reason withheld\n"
        "[+]zeta ok\n"
        "healthz check failed\n"
    )
    assert "caches" not in body
    assert checks.failing() == {
        "alpha": "caches are not synced",
        "broken": "RuntimeError: the check itself broke",
    }


def test_excluded_checks_pass_and_unknown_excludes_are_reported() -> None:
    checks = Checks("/readyz")
    checks.add("cache", Flag("not synced"))
    checks.add("leader", Flag())
    assert checks.aggregate(exclude=["cache"]) == (200, "ok")
    assert checks.aggregate(exclude=["cache", "nope", "also-nope"], verbose=True) == (
        200,
        "[+]cache excluded: ok\n"
        "[+]leader ok\n"
        'warn: some health checks cannot be excluded: no matches for "also-nope","nope"\n'
        "healthz check passed\n",
    )


def test_a_single_check_shows_its_reason() -> None:
    checks = Checks("/readyz")
    checks.add("cache", Flag("informer pods not synced"))
    assert checks.single("cache") == (500, "internal server error: informer pods not synced\n")
    assert checks.single("missing")[0] == 404
    assert checks.single("ping")[0] == 404  # ping is served only by an empty set


def test_names_are_unique_and_path_safe() -> None:
    checks = Checks("/healthz")
    checks.add("ping", Flag())
    with pytest.raises(ValueError, match="already"):
        checks.add("ping", Flag())
    for bad in ("", "a/b"):
        with pytest.raises(ValueError, match="name"):
            checks.add(bad, Flag())
    with pytest.raises(ValueError, match="path"):
        Checks("healthz")
    assert checks.names == ["ping"]


def test_bind_addresses() -> None:
    assert parse_bind_address("0") is None
    assert parse_bind_address("") is None
    assert parse_bind_address(":8080") == (None, 8080)
    assert parse_bind_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_bind_address("[::1]:9090") == ("::1", 9090)
    assert parse_bind_address("localhost:8081") == ("localhost", 8081)
    for bad in ("8080", "host:", "host:port", ":70000"):
        with pytest.raises(ConfigError):
            parse_bind_address(bad)


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        yield session


async def fetch(
    http: aiohttp.ClientSession, address: tuple[str, int] | None, path: str, **headers: str
) -> tuple[int, str, str]:
    assert address is not None
    host, port = address
    async with http.get(f"http://{host}:{port}{path}", headers=headers) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


def probe_server(*, timeout: float = 15.0, registry: CollectorRegistry | None = None) -> HttpServer:
    if registry is None:
        registry = CollectorRegistry()
        Counter("etctl_probe_test_total", "A counter the test serves", registry=registry).inc(3)
    healthz, readyz = Checks("/healthz"), Checks("/readyz")
    healthz.add("ping", Flag())
    readyz.add("cache-sync", Flag("informer pods not synced"))
    readyz.add("leader-election", Flag())
    return HttpServer(
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        healthz=healthz,
        readyz=readyz,
        registry=registry,
        timeout=timeout,
    )


@pytest_asyncio.fixture
async def served() -> AsyncIterator[HttpServer]:
    server = probe_server()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def test_the_server_serves_metrics_and_probes(
    served: HttpServer, http: aiohttp.ClientSession
) -> None:
    assert served.metrics_address != served.probe_address
    status, content_type, body = await fetch(http, served.metrics_address, "/metrics")
    assert status == 200
    assert content_type.startswith("text/plain")
    assert "etctl_probe_test_total 3.0" in body
    status, content_type, body = await fetch(
        http, served.metrics_address, "/metrics", Accept="application/openmetrics-text"
    )
    assert content_type.startswith("application/openmetrics-text")
    assert body.endswith("# EOF\n")
    assert (await fetch(http, served.metrics_address, "/healthz"))[0] == 404  # probes elsewhere

    assert await fetch(http, served.probe_address, "/healthz") == (
        200,
        "text/plain; charset=utf-8",
        "ok",
    )
    status, _, body = await fetch(http, served.probe_address, "/readyz")
    assert status == 500
    assert "[-]cache-sync failed: reason withheld\n" in body
    assert "[+]leader-election ok\n" in body
    assert await fetch(http, served.probe_address, "/readyz?exclude=cache-sync") == (
        200,
        "text/plain; charset=utf-8",
        "ok",
    )
    status, _, body = await fetch(
        http, served.probe_address, "/readyz?exclude=cache-sync&exclude=leader-election&verbose"
    )
    assert status == 200
    assert body == (
        "[+]cache-sync excluded: ok\n[+]leader-election excluded: ok\nhealthz check passed\n"
    )
    status, _, body = await fetch(http, served.probe_address, "/readyz/cache-sync")
    assert (status, body) == (500, "internal server error: informer pods not synced\n")
    assert (await fetch(http, served.probe_address, "/readyz/leader-election"))[::2] == (200, "ok")
    assert (await fetch(http, served.probe_address, "/readyz/unknown"))[0] == 404
    assert (await fetch(http, served.probe_address, "/readyz/"))[0] == 500
    assert (await fetch(http, served.probe_address, "/metrics"))[0] == 404


async def test_one_address_serves_both_and_zero_disables(http: aiohttp.ClientSession) -> None:
    both = HttpServer(
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        healthz=Checks("/healthz"),
        readyz=Checks("/readyz"),
    )
    # The same *literal* address with port 0 means two free ports; a fixed port is shared.
    await both.start()
    port = both.metrics_address
    await both.stop()
    assert port is not None
    shared = HttpServer(
        metrics_bind_address=f"127.0.0.1:{port[1]}",
        health_probe_bind_address=f"127.0.0.1:{port[1]}",
        healthz=Checks("/healthz"),
        readyz=Checks("/readyz"),
    )
    await shared.start()
    try:
        assert shared.metrics_address == shared.probe_address
        assert (await fetch(http, shared.metrics_address, "/metrics"))[0] == 200
        assert (await fetch(http, shared.probe_address, "/readyz"))[0] == 200
    finally:
        await shared.stop()

    disabled = HttpServer(
        metrics_bind_address="0",
        health_probe_bind_address="0",
        healthz=Checks("/healthz"),
        readyz=Checks("/readyz"),
    )
    await disabled.start()
    assert disabled.metrics_address is None
    assert disabled.probe_address is None
    await disabled.stop()


async def test_a_busy_port_fails_start_and_leaves_nothing_bound(served: HttpServer) -> None:
    assert served.probe_address is not None
    busy = HttpServer(
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address=f"127.0.0.1:{served.probe_address[1]}",
        healthz=Checks("/healthz"),
        readyz=Checks("/readyz"),
    )
    with pytest.raises(OSError, match=r"probes: .*address already in use"):
        await busy.start()
    assert busy.metrics_address is not None  # it had bound metrics, and let it go again
    retry = HttpServer(
        metrics_bind_address=f"127.0.0.1:{busy.metrics_address[1]}",
        health_probe_bind_address="0",
        healthz=Checks("/healthz"),
        readyz=Checks("/readyz"),
    )
    await retry.start()
    await retry.stop()


# -- the HTTP/1.1 server itself, spoken to over raw sockets


class Answer:
    """One parsed response."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.headers}, {self.body!r})"


class Conn:
    """A client connection that writes raw bytes and reads responses one by one."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, address: tuple[str, int] | None) -> Conn:
        assert address is not None
        reader, writer = await asyncio.open_connection(*address)
        return cls(reader, writer)

    async def send(self, raw: bytes) -> None:
        self.writer.write(raw)
        await self.writer.drain()

    async def answer(self, *, head: bool = False) -> Answer:
        async with asyncio.timeout(5):
            raw = await self.reader.readuntil(b"\r\n\r\n")
            status_line, *lines = raw.decode("latin-1").removesuffix("\r\n\r\n").split("\r\n")
            version, status, _ = status_line.split(" ", 2)
            assert version == "HTTP/1.1"
            headers = {}
            for line in lines:
                name, _, value = line.partition(": ")
                headers[name.lower()] = value
            assert "date" in headers
            length = int(headers["content-length"])  # on every answer
            body = b"" if head else await self.reader.readexactly(length)
            return Answer(int(status), headers, body)

    async def closed_by_server(self) -> bool:
        """True when the server closes (after anything already answered was read)."""
        async with asyncio.timeout(5):
            try:
                return await self.reader.read() == b""
            except ConnectionResetError:
                return True

    def close(self) -> None:
        self.writer.close()


def get(path: str, *headers: str, method: str = "GET", version: str = "HTTP/1.1") -> bytes:
    lines = [f"{method} {path} {version}", "Host: test", *headers, "", ""]
    return "\r\n".join(lines).encode()


async def test_head_answers_the_headers_of_get_without_a_body(served: HttpServer) -> None:
    conn = await Conn.open(served.probe_address)
    await conn.send(get("/healthz", method="HEAD"))
    head = await conn.answer(head=True)
    assert (head.status, head.headers["content-length"]) == (200, "2")
    assert head.headers["content-type"] == "text/plain; charset=utf-8"
    # Had HEAD sent a body, it would be read here as the next answer's status line.
    await conn.send(get("/readyz", method="HEAD") + get("/healthz"))
    failing = await conn.answer(head=True)
    assert failing.status == 500
    assert int(failing.headers["content-length"]) > 0
    assert (await conn.answer()).body == b"ok"
    conn.close()

    conn = await Conn.open(served.metrics_address)
    await conn.send(get("/metrics", method="HEAD") + get("/metrics"))
    head = await conn.answer(head=True)
    full = await conn.answer()
    assert head.headers["content-type"] == full.headers["content-type"]
    assert b"etctl_probe_test_total 3.0" in full.body
    assert int(head.headers["content-length"]) == len(full.body)
    conn.close()


async def test_other_methods_are_405_and_unknown_paths_404(served: HttpServer) -> None:
    conn = await Conn.open(served.probe_address)
    await conn.send(get("/healthz", "Content-Length: 5", method="POST") + b"hello")
    refused = await conn.answer()
    assert refused.status == 405
    assert refused.headers["allow"] == "GET, HEAD"
    for path in ("/nope", "/healthz/ping/more", "/metrics", "/healthzz"):
        await conn.send(get(path, method="DELETE"))
        assert (await conn.answer()).status == 404, path
    # The small body was read and dropped: the connection still serves requests.
    await conn.send(get("/readyz/leader%2Delection?verbose"))
    assert (await conn.answer()).body == b"ok"
    conn.close()


async def test_keep_alive_follows_the_http_version_and_connection_header(
    served: HttpServer,
) -> None:
    conn = await Conn.open(served.probe_address)
    await conn.send(get("/healthz"))
    first = await conn.answer()
    await conn.send(get("/readyz?exclude=cache-sync"))
    second = await conn.answer()
    assert (first.status, first.body, second.status, second.body) == (200, b"ok", 200, b"ok")
    assert "connection" not in second.headers
    await conn.send(get("/healthz", "Connection: close"))  # pipelined past a close: not answered
    await conn.send(get("/healthz"))
    closing = await conn.answer()
    assert (closing.status, closing.headers["connection"]) == (200, "close")
    assert await conn.closed_by_server()
    conn.close()

    conn = await Conn.open(served.probe_address)
    await conn.send(get("/healthz", "Connection: Keep-Alive", version="HTTP/1.0"))
    kept = await conn.answer()
    assert kept.headers["connection"] == "keep-alive"
    await conn.send(get("/healthz", version="HTTP/1.0"))
    assert (await conn.answer()).headers["connection"] == "close"
    assert await conn.closed_by_server()
    conn.close()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        pytest.param(get("/" + "a" * 9000), 414, id="request-line"),
        pytest.param(get("/healthz", "X-Big: " + "a" * 9000), 431, id="header-line"),
        pytest.param(get("/healthz", *[f"X-{i}: {'a' * 6000}" for i in range(3)]), 431, id="head"),
        pytest.param(get("/healthz", *[f"X-{i}: a" for i in range(101)]), 431, id="fields"),
        pytest.param(b"GET /healthz HTTP/1.1\r\n\r\n", 400, id="no-host"),
        pytest.param(b"GET /healthz\r\nHost: x\r\n\r\n", 400, id="no-version"),
        pytest.param(get("/healthz", "Bad Name: x"), 400, id="header-name"),
        pytest.param(get("/healthz", " folded"), 400, id="folded"),
        pytest.param(get("/healthz", version="HTTP/2.0"), 505, id="version"),
        pytest.param(get("/healthz", "Transfer-Encoding: chunked"), 411, id="chunked"),
        pytest.param(get("/healthz", "Content-Length: 100000"), 413, id="big-body"),
        pytest.param(get("/healthz", "Content-Length: 1", "Content-Length: 2"), 400, id="lengths"),
    ],
)
async def test_bad_or_oversized_requests_are_refused_and_closed(
    served: HttpServer, request_bytes: bytes, status: int
) -> None:
    conn = await Conn.open(served.probe_address)
    await conn.send(request_bytes)
    refused = await conn.answer()
    assert (refused.status, refused.headers["connection"]) == (status, "close")
    assert await conn.closed_by_server()
    conn.close()


class Broken(Collector):
    def collect(self) -> Iterable[Never]:
        msg = "a collector broke"
        raise RuntimeError(msg)


async def test_a_failing_handler_answers_500_and_the_connection_lives_on() -> None:
    registry = CollectorRegistry()
    registry.register(Broken())
    server = probe_server(registry=registry)
    await server.start()
    try:
        conn = await Conn.open(server.metrics_address)
        await conn.send(get("/metrics") + get("/metrics", method="HEAD"))
        assert (await conn.answer()).status == 500
        assert (await conn.answer(head=True)).status == 500
        conn.close()
    finally:
        await server.stop()


async def test_silent_slow_and_idle_clients_are_dropped_after_the_timeout() -> None:
    server = probe_server(timeout=0.2)
    await server.start()
    try:
        with no_loop_errors():
            silent = await Conn.open(server.probe_address)
            slow = await Conn.open(server.probe_address)
            await slow.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never the blank line
            slower = await Conn.open(server.probe_address)
            await slower.send(b"GET /hea")  # never the end of the request line
            idle = await Conn.open(server.probe_address)
            await idle.send(get("/healthz"))
            assert (await idle.answer()).body == b"ok"

            assert await silent.closed_by_server()  # without an answer
            for begun in (slow, slower):  # a request begun, even its first line, is answered
                timed_out = await begun.answer()
                assert (timed_out.status, timed_out.headers["connection"]) == (408, "close")
                assert await begun.closed_by_server()
            assert await idle.closed_by_server()
            for conn in (silent, slow, slower, idle):
                conn.close()
    finally:
        await server.stop()


@contextmanager
def no_loop_errors() -> Iterator[None]:
    """Fail if anything reaches the event loop's exception handler (an unhandled task error)."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: errors.append(context))
    try:
        yield
    finally:
        loop.set_exception_handler(previous)
    assert errors == []


async def test_stop_drops_open_connections_promptly(served: HttpServer) -> None:
    with no_loop_errors():
        await stop_with_open_connections(served)


async def stop_with_open_connections(served: HttpServer) -> None:
    idle = await Conn.open(served.probe_address)
    await idle.send(get("/healthz"))
    assert (await idle.answer()).status == 200
    silent = await Conn.open(served.probe_address)
    partial = await Conn.open(served.metrics_address)
    await partial.send(b"GET /metrics HTTP/1.1\r\n")

    async with asyncio.timeout(3):  # the read timeout is 15 s: stop must not wait for it
        await served.stop()
    for conn in (idle, silent, partial):
        assert await conn.closed_by_server()
        conn.close()
    with pytest.raises(ConnectionRefusedError):
        await Conn.open(served.probe_address)
    await served.stop()  # idempotent
