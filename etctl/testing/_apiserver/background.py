"""An :class:`ApiServer` on its own thread and event loop, for sharing across tests.

pytest-asyncio gives each test its own event loop by default; an aiohttp server bound to one loop
cannot answer while another loop runs. :class:`BackgroundApiServer` sidesteps loop scopes: it runs
the server on a private loop in a daemon thread, so clients on any loop (or none) talk to it over
HTTP (a :class:`~etctl.testing._loopthread.LoopThread`). Code that must touch the server object
itself (its storage, faults, request log) runs on the server's loop through
:meth:`BackgroundApiServer.call`, which keeps the single-thread invariant of the storage.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from etctl.testing._apiserver.server import ApiServer
from etctl.testing._loopthread import LoopThread

__all__ = ["BackgroundApiServer"]

T = TypeVar("T")


class BackgroundApiServer:
    """Runs an :class:`ApiServer` in a daemon thread until :meth:`stop`.

    Args:
        options: keyword arguments for :class:`ApiServer`.
        start_timeout: seconds to wait for the server to listen.
    """

    def __init__(self, *, start_timeout: float = 10.0, **options: Any) -> None:
        self._start_timeout = start_timeout
        self._helper = LoopThread(
            "etctl-apiserver", "the background server", lambda: ApiServer(**options), reraise=True
        )

    @property
    def server(self) -> ApiServer:
        """The server (touch it only through :meth:`call`)."""
        server = self._helper.value
        if server is None:
            msg = "the background server is not running"
            raise RuntimeError(msg)
        return server

    @property
    def url(self) -> str:
        """The server's URL."""
        return self.server.url

    def start(self) -> BackgroundApiServer:
        """Start the thread and wait until the server listens.

        Raises:
            RuntimeError: the server did not start in time (or failed, chained).
        """
        self._helper.start(self._start_timeout, "the background API server did not start")
        return self

    def call(self, fn: Callable[[ApiServer], T], *, timeout: float = 10.0) -> T:
        """Run ``fn(server)`` on the server's loop and return its result."""

        async def invoke(server: ApiServer) -> T:
            return fn(server)

        return self._helper.submit(invoke).result(timeout)

    def write_kubeconfig(self, path: str | Path) -> Path:
        """Write a kubeconfig for the server."""
        return self.call(lambda server: server.write_kubeconfig(path))

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server and join its thread."""
        self._helper.stop(timeout)

    def __enter__(self) -> BackgroundApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
