"""What the built-in controllers need from the API server, and the loop they all run.

A controller here is fed synchronously by the store's change listener, which only *queues*
work and wakes the controller's task; the task then does the queued work synchronously
through the storage API (so its writes are ordinary commits that produce watch events and feed
the other listeners). Nothing sleeps on time: the controllers react to changes only.
:class:`QueueController` is that shape once: subscription, the queue's task, ``pending`` and
``drain``; a controller supplies what it observes, how it handles a key and what it picks up
from storage when it starts.
"""

from __future__ import annotations

import abc
import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, Protocol, TypeVar

from etctl.log import get_logger
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.store import Event

__all__ = ["ControllerHost", "QueueController", "WorkQueue"]

log = get_logger(__name__)

K = TypeVar("K", bound=Hashable)

_YIELD_EVERY = 256


class ControllerHost(Protocol):
    """The API server surface a built-in controller uses (``ApiServer`` has it)."""

    @property
    def storage(self) -> Storage:
        """The synchronous internal API."""
        ...

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` with every committed change."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run a named background task owned by the server."""
        ...


class WorkQueue(Generic[K]):
    """A deduplicating FIFO of keys, drained by one task that handles them synchronously.

    Args:
        handle: called with each key; may add keys (they are handled in the same drain).
    """

    def __init__(self, handle: Callable[[K], None]) -> None:
        self._handle = handle
        self._queue: deque[K] = deque()
        self._queued: set[K] = set()
        self._wake = asyncio.Event()

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: K) -> None:
        """Queue ``key`` (once, however often it is added before being handled)."""
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
            self._wake.set()

    def _pop(self) -> K:
        key = self._queue.popleft()
        self._queued.discard(key)
        return key

    def drain(self) -> int:
        """Handle every queued key, including keys queued meanwhile; returns how many."""
        handled = 0
        while self._queue:
            self._handle(self._pop())
            handled += 1
        return handled

    async def run(self) -> None:
        """Drain whenever keys arrive, yielding to the loop between long runs."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            handled = 0
            while self._queue:
                key = self._pop()
                try:
                    self._handle(key)
                except Exception:
                    # A bug handling one key must not stop the controller for every other key.
                    log.exception("controller failed to handle a key", key=str(key))
                handled += 1
                if handled % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)


class QueueController(abc.ABC, Generic[K]):
    """A built-in controller: store changes queue keys, one task handles them.

    Args:
        storage: the server's storage.
        task_name: the name of the controller's task.
    """

    def __init__(self, storage: Storage, *, task_name: str) -> None:
        self.storage = storage
        self._task_name = task_name
        self._queue: WorkQueue[K] = WorkQueue(self._handle)
        self._unsubscribe: Callable[[], None] | None = None

    def start(self, host: ControllerHost) -> None:
        """Follow every change, pick up what storage already holds, then run the queue."""
        self._unsubscribe = host.subscribe(self.observe)
        self._resume()
        host.spawn(self._queue.run(), name=self._task_name)

    def stop(self) -> None:
        """Stop following changes (the task ends with the server)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @property
    def pending(self) -> int:
        """Work queued and not done yet (0: nothing to do until the store changes)."""
        return len(self._queue)

    def drain(self) -> int:
        """Do all queued work now (tests); returns how many keys were handled."""
        return self._queue.drain()

    @abc.abstractmethod
    def observe(self, event: Event) -> None:
        """Queue the work a committed change calls for."""

    @abc.abstractmethod
    def _resume(self) -> None:
        """Queue the work what is already stored calls for (at start)."""

    @abc.abstractmethod
    def _handle(self, key: K) -> None:
        """Do the work of one key, synchronously."""
