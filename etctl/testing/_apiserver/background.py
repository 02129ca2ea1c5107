"""An :class:`ApiServer` on its own thread and event loop, for sharing across tests.

pytest-asyncio gives each test its own event loop by default; an aiohttp server bound to one loop
cannot answer while another loop runs. :class:`BackgroundApiServer` sidesteps loop scopes: it runs
the server on a private loop in a daemon thread, so clients on any loop (or none) talk to it over
HTTP. Code that must touch the server object itself (its storage, faults, request log) runs on the
server's loop through :meth:`BackgroundApiServer.call`, which keeps the single-thread invariant of
the storage.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from etctl.testing._apiserver.server import ApiServer

__all__ = ["BackgroundApiServer"]

T = TypeVar("T")


class BackgroundApiServer:
    """Runs an :class:`ApiServer` in a daemon thread until :meth:`stop`.

    Args:
        options: keyword arguments for :class:`ApiServer`.
        start_timeout: seconds to wait for the server to listen.
    """

    def __init__(self, *, start_timeout: float = 10.0, **options: Any) -> None:
        self._options = options
        self._start_timeout = start_timeout
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._server: ApiServer | None = None
        self._error: BaseException | None = None

    @property
    def server(self) -> ApiServer:
        """The server (touch it only through :meth:`call`)."""
        if self._server is None:
            msg = "the background server is not running"
            raise RuntimeError(msg)
        return self._server

    @property
    def url(self) -> str:
        """The server's URL."""
        return self.server.url

    def start(self) -> BackgroundApiServer:
        """Start the thread and wait until the server listens.

        Raises:
            RuntimeError: the server did not start in time (or failed, chained).
        """
        self._thread = threading.Thread(target=self._run, name="etctl-apiserver", daemon=True)
        self._thread.start()
        if not self._ready.wait(self._start_timeout) or self._server is None:
            msg = "the background API server did not start"
            raise RuntimeError(msg) from self._error
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as exc:
            self._error = exc  # chained by start(), which is waiting for the server
            raise
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with ApiServer(**self._options) as server:
            self._server = server
            self._ready.set()
            await self._stop.wait()

    def call(self, fn: Callable[[ApiServer], T], *, timeout: float = 10.0) -> T:
        """Run ``fn(server)`` on the server's loop and return its result."""
        loop = self._loop
        if loop is None:
            msg = "the background server is not running"
            raise RuntimeError(msg)

        async def invoke() -> T:
            return fn(self.server)

        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(invoke(), loop)
        return future.result(timeout)

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig for the server."""
        return self.call(lambda server: server.write_kubeconfig(path))

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server and join its thread."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None

    def __enter__(self) -> BackgroundApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
