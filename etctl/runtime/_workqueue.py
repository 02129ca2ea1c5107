"""The workqueue: a deduplicating, delaying, rate-limited priority queue of keys for reconcilers.

Semantics follow client-go's ``util/workqueue`` (base queue, delaying queue, rate-limiting queue)
and controller-runtime's priority queue, in asyncio and on an injectable
:class:`~etctl.runtime.Clock`.

Invariants:

* **Never two workers on one item.** An item handed out by :meth:`WorkQueue.get` is *processing*
  until :meth:`WorkQueue.done`. While it is, it is not in the FIFO: adds only mark it *dirty*, and
  ``done`` puts it back once. However many adds arrive while it runs, it runs exactly once more.
* **Deduplication.** An item waiting in the FIFO is there once; adding it again is a no-op.
* **Earliest wins.** :meth:`WorkQueue.add_after` keeps the earliest ready time of an item already
  waiting, and an :meth:`~WorkQueue.add` while it waits makes it ready now (its timer is dropped,
  which client-go does not do and controller-runtime's priority queue does). An item already in the
  FIFO is not delayed again.
* **One timer.** Delayed items sit in one min-heap served by :meth:`WorkQueue.run`, which sleeps on
  the clock until the earliest ready time. There is no task or timer per item, and ``run`` is the
  only background work: whoever owns the queue runs it in a task group.
* **Priorities** (controller-runtime's priority queue). Every add has a priority (``0`` by
  default, :data:`LOW_PRIORITY` for work that may wait); ready items are handed out highest
  priority first, in arrival order within a priority. An item added again keeps the highest
  priority it was given (raised, it joins its new priority as a new arrival would, and the time it
  waited still counts for aging); an item requeued while it was processing, after a delay or with
  backoff keeps the priority it was handed out with unless the add names one.
* **Aging: nothing starves.** An item that has waited ``aging`` seconds behind items of higher
  priority is handed out before them (the oldest such item first), so a steady stream of urgent
  work delays the rest by ``aging`` at most (controller-runtime's queue has no such bound,
  kubernetes-sigs/controller-runtime#3496).

Shutdown (a deliberate choice, stricter than client-go): once :meth:`~WorkQueue.shut_down` is called
adds are ignored, items still queued or delayed are dropped and every :meth:`~WorkQueue.get`,
waiting or not, raises :class:`ShutDown`. The queue holds keys, not events, and every key is
re-listed when a controller starts, so dropping them loses nothing; handing them out would start
work after shutdown, which a leader that lost its lease must never do. Items already processing
finish normally; :meth:`~WorkQueue.shut_down_with_drain` waits for them.

A queue belongs to one event loop and is not thread-safe; nothing in it blocks.

Metrics (queues with a ``name``, labelled ``name`` and ``controller`` with the same value, as
controller-runtime sets them): ``workqueue_adds_total`` counts real adds,
``workqueue_retries_total`` counts every ``add_after`` with a positive delay, and the two histograms
time add -> get and get -> done. ``workqueue_depth`` (the number of dirty items, which is what
client-go's +1 on add and -1 on get amount to), ``workqueue_unfinished_work_seconds`` and
``workqueue_longest_running_processor_seconds`` are computed when scraped rather than on a 500 ms
ticker: they are always current, cost nothing on the hot path and need no task.
"""

from __future__ import annotations

import asyncio
import bisect
import heapq
import itertools
import weakref
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from etctl.errors import EtctlError
from etctl.runtime import _metrics as metrics
from etctl.runtime._clock import Clock, wait_event
from etctl.runtime._ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["LOW_PRIORITY", "ShutDown", "WorkQueue"]

T = TypeVar("T", bound=Hashable)

LOW_PRIORITY = -100
"""controller-runtime's ``handler.LowPriority``: work that yields to everything else (initial lists,
resyncs, new objects of the reconciled kind)."""

DEFAULT_AGING = 30.0
"""Seconds an item may wait behind items of higher priority before it is handed out first."""

# Ready times within a nanosecond of now count as due: ``now + (deadline - now)`` may land one ulp
# short of ``deadline``, and Go's durations have no finer resolution anyway.
_DUE_TOLERANCE = 1e-9


class ShutDown(EtctlError):
    """The queue was shut down: no more items will be handed out."""


class _QueueMetrics(Generic[T]):
    """The Prometheus side of one named queue; all times come from the queue's clock."""

    __slots__ = ("_adds", "_clock", "_queue_duration", "_retries", "_work_duration", "add_times")

    def __init__(self, name: str, clock: Clock, queue: WorkQueue[T]) -> None:
        self._clock = clock
        self._adds = metrics.WORKQUEUE_ADDS.labels(name, name)
        self._retries = metrics.WORKQUEUE_RETRIES.labels(name, name)
        self._queue_duration = metrics.WORKQUEUE_QUEUE_DURATION.labels(name, name)
        self._work_duration = metrics.WORKQUEUE_WORK_DURATION.labels(name, name)
        self.add_times: dict[T, float] = {}
        # The scrape-time gauges hold the queue weakly: a registry child outlives any queue, and a
        # dropped queue reads as empty instead of being kept alive by its metrics.
        ref = weakref.ref(queue)

        def depth() -> float:
            q = ref()
            return float(q.depth) if q is not None else 0.0

        def unfinished() -> float:
            q = ref()
            return q.unfinished_work_seconds() if q is not None else 0.0

        def longest() -> float:
            q = ref()
            return q.longest_running_processor_seconds() if q is not None else 0.0

        metrics.WORKQUEUE_DEPTH.labels(name, name, "").set_function(depth)
        metrics.WORKQUEUE_UNFINISHED_WORK.labels(name, name).set_function(unfinished)
        metrics.WORKQUEUE_LONGEST_RUNNING.labels(name, name).set_function(longest)

    def added(self, item: T) -> None:
        self._adds.inc()
        if item not in self.add_times:
            self.add_times[item] = self._clock.monotonic()

    def got(self, item: T, now: float) -> None:
        self._queue_duration.observe(now - self.add_times.pop(item, now))

    def done(self, started: float) -> None:
        self._work_duration.observe(self._clock.monotonic() - started)

    def retried(self) -> None:
        self._retries.inc()


class WorkQueue(Generic[T]):
    """A FIFO of hashable items with dirty/processing sets, delays and rate-limited retries.

    Args:
        clock: the time source of delays, rate limits and metrics.
        name: names the queue's metrics (controllers pass their own name); without a name the queue
            records no metrics.
        rate_limiter: decides the delay of :meth:`add_rate_limited`; controller-runtime's default
            (exponential 5 ms to 1000 s, and a 10 qps / burst 100 bucket) when omitted.
        aging: seconds after which an item waiting behind items of higher priority goes first
            (``None``: strict priority order, which may starve low-priority items).

    Raises:
        ValueError: ``aging`` is not positive.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        name: str | None = None,
        rate_limiter: RateLimiter[T] | None = None,
        aging: float | None = DEFAULT_AGING,
    ) -> None:
        self._clock = clock
        self.name = name
        self._limiter: RateLimiter[T] = (
            default_controller_rate_limiter(clock) if rate_limiter is None else rate_limiter
        )
        if aging is not None and aging <= 0:
            msg = f"aging must be positive (or None), got {aging}"
            raise ValueError(msg)
        self._aging = aging
        # Ready items: one FIFO per priority (two deques appended together: sequence numbers and
        # items, so that queueing allocates no tuple for the garbage collector to track) and the
        # priorities that have one, highest first as negated values. An entry is live while
        # _entries[item] is its sequence number; a priority raised while queued appends a live
        # entry to the higher FIFO and leaves a stale one behind, dropped when it reaches the
        # front. _queued_at keeps when each ready item was first queued, for aging.
        self._fifos: dict[int, tuple[deque[int], deque[T]]] = {}
        self._priorities: list[int] = []
        self._entries: dict[T, int] = {}
        self._queued_at: dict[T, float] = {}
        self._dirty: dict[T, int] = {}  # added and not handed out -> the priority it runs with
        self._processing: dict[T, tuple[float, int]] = {}  # item -> (handed out at, priority)
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._drained = asyncio.Event()
        # Delayed items: item -> ready time, and a heap of (ready time, sequence, item) whose
        # entries go stale when an item's ready time moves earlier or it is added or dropped.
        self._ready_at: dict[T, float] = {}
        self._delayed_priority: dict[T, int] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._timer_wake = asyncio.Event()
        self._timer_deadline: float | None = None  # what run() sleeps until (None: no deadline)
        self._running = False
        self._now = clock.monotonic
        self._metrics = _QueueMetrics(name, clock, self) if name else None

    # -- the base queue

    def add(self, item: T, *, priority: int = 0) -> None:
        """Queue ``item`` with ``priority``, unless it is queued already or the queue is shut down.

        An item already queued only has its priority raised, if ``priority`` is higher. An item
        that is processing is only marked dirty and is queued again by :meth:`done`. An item
        waiting for its delay becomes ready now (with the higher of both priorities).
        """
        if self._shutting_down:
            return
        if self._ready_at:
            delayed = self._cancel_delay(item)
            if delayed is not None and delayed > priority:
                priority = delayed
        queued = self._dirty.get(item)
        if queued is not None:
            if priority > queued:
                self._dirty[item] = priority
                if item in self._entries:  # waiting in a FIFO: move it up; its wait still counts
                    self._push(item, priority, self._queued_at[item])
            return
        if self._metrics is not None:
            self._metrics.added(item)
        self._dirty[item] = priority
        if item in self._processing:
            return
        self._push(item, priority, self._now())
        if self._getters:
            self._wake_getter()

    async def get(self) -> T:
        """Wait for the next item and mark it processing; call :meth:`done` when finished with it.

        The next item is the oldest of the highest priority, unless an item of lower priority has
        waited ``aging`` seconds: then the oldest such item.

        Raises:
            ShutDown: the queue is shut down (items still queued are not handed out).
        """
        while True:
            if self._shutting_down:
                raise ShutDown
            if self._entries:
                break
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()
                try:
                    self._getters.remove(getter)
                except ValueError:
                    # It had been woken: hand the wake-up to the next waiter instead of losing it.
                    if self._entries:
                        self._wake_getter()
                raise
        now = self._clock.monotonic()
        item = self._pop(now)
        priority = self._dirty.pop(item)
        self._processing[item] = (now, priority)
        if self._metrics is not None:
            self._metrics.got(item, now)
        return item

    def done(self, item: T) -> None:
        """Mark ``item`` finished; if it was added while processing, queue it again (once)."""
        handed = self._processing.pop(item, None)
        if handed is None:
            return
        if self._metrics is not None:
            self._metrics.done(handed[0])
        priority = self._dirty.get(item)
        if priority is not None:
            self._push(item, priority, self._clock.monotonic())
            self._wake_getter()
        elif self._shutting_down and not self._processing:
            self._drained.set()

    def priority_of(self, item: T) -> int | None:
        """The priority ``item`` runs with: as handed out, or as queued; None when neither."""
        handed = self._processing.get(item)
        if handed is not None:
            return handed[1]
        return self._dirty.get(item)

    def __len__(self) -> int:
        """How many items are ready to be handed out (not those processing or delayed)."""
        return len(self._entries)

    @property
    def depth(self) -> int:
        """Items added and not yet handed out, including those to re-run after processing."""
        return len(self._dirty)

    @property
    def processing(self) -> int:
        """How many items are handed out and not yet done."""
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """How many items wait for their delay to pass."""
        return len(self._ready_at)

    @property
    def idle(self) -> bool:
        """True when nothing happens until the clock moves.

        No item is queued or processing, and no delayed item's time has come (:meth:`run`
        releases those as soon as it runs). Items still waiting for their delay are fine.
        """
        if self._dirty or self._processing:
            return False
        now = self._clock.monotonic()
        return all(ready_at - now > _DUE_TOLERANCE for ready_at in self._ready_at.values())

    @property
    def shutting_down(self) -> bool:
        """True once :meth:`shut_down` was called."""
        return self._shutting_down

    def shut_down(self) -> None:
        """Stop: ignore adds, drop queued and delayed items, make every :meth:`get` raise."""
        if self._shutting_down:
            return
        self._shutting_down = True
        self._fifos.clear()
        self._priorities.clear()
        self._entries.clear()
        self._queued_at.clear()
        self._dirty.clear()
        self._ready_at.clear()
        self._delayed_priority.clear()
        self._heap.clear()
        if self._metrics is not None:
            self._metrics.add_times.clear()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
        self._timer_wake.set()
        if not self._processing:
            self._drained.set()

    async def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait up to ``timeout`` clock seconds for processing items to be done.

        Returns:
            True when nothing is processing any more, False if the timeout passed first.
        """
        self.shut_down()
        return await wait_event(self._clock, self._drained, timeout)

    # -- delays and rate limits

    def add_after(self, item: T, delay: float, *, priority: int | None = None) -> None:
        """Add ``item`` once ``delay`` seconds have passed (now when ``delay <= 0``).

        If the item already waits, the earlier ready time and the higher priority win; if it is
        already queued, this is a no-op. ``priority`` defaults to the one the item is processing
        with (0 if it is not processing). Counts a retry in the metrics when ``delay > 0``.
        """
        if self._shutting_down:
            return
        if priority is None:
            priority = self._requeue_priority(item)
        if delay <= 0:
            self.add(item, priority=priority)
            return
        if self._metrics is not None:
            self._metrics.retried()
        if item in self._dirty:
            # It runs as soon as a worker is free, which is sooner; a higher priority still counts.
            self.add(item, priority=priority)
            return
        current_priority = self._delayed_priority.get(item)
        if current_priority is None or priority > current_priority:
            self._delayed_priority[item] = priority
        ready_at = self._clock.monotonic() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), item))
        if len(self._heap) > 2 * len(self._ready_at) + 64:
            self._compact()
        if self._timer_deadline is None or ready_at < self._timer_deadline:
            self._timer_wake.set()

    def add_rate_limited(self, item: T, *, priority: int | None = None) -> None:
        """Add ``item`` after the delay the rate limiter decides (and let it count a failure).

        ``priority`` defaults to the one the item is processing with, as in :meth:`add_after`.
        """
        if self._shutting_down:
            return
        self.add_after(item, self._limiter.when(item), priority=priority)

    def forget(self, item: T) -> None:
        """Reset the rate limiter's failure count of ``item`` (call it after a success)."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many failures of ``item`` the rate limiter tracks."""
        return self._limiter.num_requeues(item)

    async def run(self) -> None:
        """Move delayed items into the queue when they are due; returns once the queue shuts down.

        Run it in the owner's task group for as long as the queue is used; delayed items are only
        released while it runs. The queue shuts down when ``run`` ends, cancelled or not.

        Raises:
            RuntimeError: ``run`` is already running.
        """
        if self._running:
            msg = f"workqueue {self.name or ''} is already running"
            raise RuntimeError(msg)
        self._running = True
        try:
            while not self._shutting_down:
                self._timer_wake.clear()
                self._timer_deadline = self._release_due()
                timeout = None
                if self._timer_deadline is not None:
                    timeout = self._timer_deadline - self._clock.monotonic()
                await wait_event(self._clock, self._timer_wake, timeout)
        finally:
            self._timer_deadline = None
            self.shut_down()

    # -- scrape-time metrics

    def unfinished_work_seconds(self) -> float:
        """The summed age of every item processing right now."""
        now = self._clock.monotonic()
        return sum(now - started for started, _ in list(self._processing.values()))

    def longest_running_processor_seconds(self) -> float:
        """The age of the oldest item processing right now (0 when none is)."""
        starts = [started for started, _ in list(self._processing.values())]
        return self._clock.monotonic() - min(starts) if starts else 0.0

    # -- internals

    def _wake_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _cancel_delay(self, item: T) -> int | None:
        """Drop ``item``'s delay; the priority it was delayed with (None: it was not delayed)."""
        ready_at = self._ready_at.pop(item, None)
        if ready_at is None:
            return None
        if ready_at == self._timer_deadline:
            self._timer_wake.set()  # run() slept for this item: let it pick the next deadline
        return self._delayed_priority.pop(item)

    def _requeue_priority(self, item: T) -> int:
        handed = self._processing.get(item)
        return handed[1] if handed is not None else 0

    def _push(self, item: T, priority: int, queued_at: float) -> None:
        seq = next(self._seq)
        self._entries[item] = seq
        self._queued_at[item] = queued_at
        fifo = self._fifos.get(priority)
        if fifo is None:
            fifo = self._fifos[priority] = (deque(), deque())
            bisect.insort(self._priorities, -priority)
        fifo[0].append(seq)
        fifo[1].append(item)

    def _head(self, priority: int) -> T | None:
        """The oldest live item of ``priority`` (stale entries at the front are dropped)."""
        seqs, items = self._fifos[priority]
        entries = self._entries
        while seqs:
            item = items[0]
            if entries.get(item) == seqs[0]:
                return item
            seqs.popleft()
            items.popleft()
        return None

    def _take(self, priority: int, item: T) -> T:
        """Remove ``item``, the front of its FIFO, from the ready items."""
        seqs, items = self._fifos[priority]
        seqs.popleft()
        items.popleft()
        del self._entries[item]
        del self._queued_at[item]
        return item

    def _pop(self, now: float) -> T:
        """Take the next item out of the FIFOs (there is one)."""
        if len(self._priorities) == 1:  # the common case: one priority, no aging to weigh
            priority = -self._priorities[0]
            item = self._head(priority)
            if item is not None:
                return self._take(priority, item)
        heads: list[tuple[int, T]] = []
        for negated in list(self._priorities):
            item = self._head(-negated)
            if item is None:
                del self._fifos[-negated]
                self._priorities.remove(negated)
                continue
            heads.append((-negated, item))
            if self._aging is None:
                break
        chosen = heads[0]
        if self._aging is not None and len(heads) > 1:
            aged_at = now - self._aging
            waited = [head for head in heads[1:] if self._queued_at[head[1]] <= aged_at]
            if waited:  # waited ``aging`` behind higher priorities: the oldest such goes first
                chosen = min(waited, key=lambda head: self._queued_at[head[1]])
        return self._take(*chosen)

    def _release_due(self) -> float | None:
        """Add every item whose time has come; return the next ready time, if any."""
        now = self._clock.monotonic()
        heap = self._heap
        while heap:
            ready_at, _, item = heap[0]
            if self._ready_at.get(item) != ready_at:
                heapq.heappop(heap)  # stale: moved earlier, added meanwhile, or dropped
                continue
            if ready_at - now > _DUE_TOLERANCE:
                return ready_at
            heapq.heappop(heap)
            del self._ready_at[item]
            self.add(item, priority=self._delayed_priority.pop(item))
        return None

    def _compact(self) -> None:
        self._heap = [entry for entry in self._heap if self._ready_at.get(entry[2]) == entry[0]]
        heapq.heapify(self._heap)
