"""An async context manager held open on a private event loop in a daemon thread.

pytest-asyncio gives each test its own event loop; an object bound to one loop (an aiohttp server,
a client's session) cannot be used from another. :class:`LoopThread` enters such an object on a
loop of its own, in a daemon thread, and runs coroutines there for callers on any loop (or none):
the shared :class:`~etctl.testing.BackgroundApiServer` and the :class:`~etctl.testing.RealCluster`
client both live on one.

Invariants: the object is entered, used and exited on the helper loop only; :meth:`submit` from
the helper thread itself is refused (the caller would wait for itself); :meth:`start` and
:meth:`stop` may be called more than once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Generic, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")
R = TypeVar("R")


class LoopThread(Generic[T]):
    """Holds ``enter()``'s value open on a private loop in a daemon thread until :meth:`stop`.

    Args:
        name: the thread's name.
        what: what is held, as errors name it (``the background server``).
        enter: makes the async context manager to hold open (called on the helper loop).
        reraise: also raise an error of the helper loop in its thread (reported by
            :func:`threading.excepthook`), not only chain it to :meth:`start`'s error.
    """

    def __init__(
        self,
        name: str,
        what: str,
        enter: Callable[[], AbstractAsyncContextManager[T]],
        *,
        reraise: bool = False,
    ) -> None:
        self._name = name
        self._what = what
        self._enter = enter
        self._reraise = reraise
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._value: T | None = None
        self._error: BaseException | None = None

    @property
    def value(self) -> T | None:
        """The entered object while it is held open, else None."""
        return self._value

    @property
    def started(self) -> bool:
        """True once :meth:`start` was called (even if it failed, or :meth:`stop` followed)."""
        return self._thread is not None

    @property
    def running(self) -> bool:
        """True from a successful :meth:`start` until :meth:`stop`."""
        return self._loop is not None and self._value is not None

    def start(self, timeout: float, failure: str) -> T:
        """Start the thread (once) and wait until the object is entered; returns it.

        Raises:
            RuntimeError: ``failure``, when it was not entered in time (the cause is chained).
        """
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        if not self._ready.wait(timeout) or self._value is None:
            raise RuntimeError(failure) from self._error
        return self._value

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as exc:
            self._error = exc  # chained by start(), which may be waiting for the value
            if self._reraise:
                raise
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with self._enter() as value:
            self._value = value
            self._ready.set()
            await self._stop.wait()

    def submit(self, fn: Callable[[T], Awaitable[R]]) -> concurrent.futures.Future[R]:
        """Run ``fn(value)`` on the helper loop; the future holds its result.

        Raises:
            RuntimeError: the object is not held open, or called from the helper thread.
        """
        loop, value = self._loop, self._value
        if loop is None or value is None:
            msg = f"{self._what} is not running"
            raise RuntimeError(msg)
        if threading.current_thread() is self._thread:
            msg = f"a call on {self._what} from its own thread would wait for itself"
            raise RuntimeError(msg)

        async def invoke() -> R:
            return await fn(value)

        return asyncio.run_coroutine_threadsafe(invoke(), loop)

    def stop(self, timeout: float) -> None:
        """Exit the object on its loop and join the thread."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout)
        self._loop = None
        self._value = None
