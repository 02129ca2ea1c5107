"""Health checks and the metrics/probe server, as controller-runtime serves them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry, Counter

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


@pytest_asyncio.fixture
async def served() -> AsyncIterator[HttpServer]:
    registry = CollectorRegistry()
    Counter("etctl_probe_test_total", "A counter the test serves", registry=registry).inc(3)
    healthz, readyz = Checks("/healthz"), Checks("/readyz")
    healthz.add("ping", Flag())
    readyz.add("cache-sync", Flag("informer pods not synced"))
    readyz.add("leader-election", Flag())
    server = HttpServer(
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        healthz=healthz,
        readyz=readyz,
        registry=registry,
    )
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
    with pytest.raises(OSError, match="address"):
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
