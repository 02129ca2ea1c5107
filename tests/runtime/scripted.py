"""A scripted HTTP server for client transport tests: each test decides every byte and delay.

The embedded API server answers like Kubernetes; this one answers however a test needs (a line cut
in the middle, a 429 then a 200, a socket that never answers) so transport behaviour can be checked
exactly.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from etctl.runtime import Client, ClientOptions, FakeClock

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    """One request the scripted server received."""

    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class ScriptedServer:
    """An aiohttp server on 127.0.0.1 whose every answer comes from ``handler``."""

    handler: Handler | None = None
    seen: list[Seen] = field(default_factory=list)
    url: str = ""

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.seen.append(
            Seen(
                request.method,
                request.path,
                list(request.query.items()),
                dict(request.headers),
                body,
            )
        )
        assert self.handler is not None, "the test did not script an answer"
        return await self.handler(request)


def status_body(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    """A Kubernetes ``Status`` failure body."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def json_response(body: Any, status: int = 200, **headers: str) -> web.Response:
    """A JSON answer."""
    return web.Response(
        body=json.dumps(body).encode(),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def write_kubeconfig(path: Path, url: str, *, token: str = "t0ken", **user: Any) -> Path:
    """A kubeconfig with one context pointing at ``url``."""
    user_entry: dict[str, Any] = {"token": token} if token else {}
    user_entry.update(user)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": user_entry}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@asynccontextmanager
async def scripted_server() -> AsyncIterator[ScriptedServer]:
    """Serve a :class:`ScriptedServer` on a free loopback port for the block's duration."""
    server = ScriptedServer()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", server._dispatch)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    server.url = f"http://127.0.0.1:{port}"
    try:
        yield server
    finally:
        await runner.cleanup()


@asynccontextmanager
async def silent_server() -> AsyncIterator[str]:
    """A TCP server that accepts connections and never answers; yields its URL."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


def refused_url() -> str:
    """A loopback URL nothing listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class InstantClock(FakeClock):
    """A fake clock whose sleeps return at once, moving time and recording each delay.

    Retry tests use it: the delays a client chose are asserted without any real or driven waiting.
    """

    def __init__(self) -> None:
        super().__init__()
        self.slept: list[float] = []

    async def sleep(self, delay: float) -> None:
        self.slept.append(delay)
        self._now += max(delay, 0.0)
        await asyncio.sleep(0)


async def client_for(url: str, tmp_path: Path, **options: Any) -> Client:
    """A client of ``url`` through a kubeconfig file (retries on an :class:`InstantClock`)."""
    options.setdefault("clock", InstantClock())
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", url)
    return await Client.from_kubeconfig(kubeconfig, options=ClientOptions(**options))
