"""The controller: sources feed a workqueue, and N workers reconcile what comes out of it.

A :class:`Controller` watches event sources (informers) through handlers and predicates, and runs
a :class:`~etctl.runtime.Reconciler` over the keys they enqueue, with controller-runtime's
semantics:

* **Start.** :meth:`Controller.run` registers its handlers, waits until every source (and its
  handler's replay) has synced, failing with :class:`~etctl.errors.CacheSyncError` after
  ``cache_sync_timeout`` so that an operator that cannot list what it watches fails loudly, then
  starts ``max_concurrent_reconciles`` named workers in a task group.
* **One key, one worker.** The workqueue never hands a key to two workers at once.
* **Outcomes** (first match wins; each is counted in ``reconcile_total{result=...}``):

  - raises ``TerminalError``: not requeued; ``terminal_reconcile_errors_total``; ``error``.
  - runs past ``reconcile_timeout``: cancelled, requeued with backoff (``add_rate_limited``);
    ``reconcile_timeouts_total``; ``error``.
  - raises another ``EtctlError``: requeued with backoff; ``error``. A leader-only controller
    whose fence lapsed (:mod:`etctl.runtime._fence`) does not call the reconciler at all: the key
    fails with :class:`~etctl.errors.Fenced` this way.
  - raises anything else (a bug: Go would call it a panic): the traceback is logged, the key is
    requeued with backoff and the process survives; ``reconcile_panics_total``; ``error``.
  - returns ``Result(requeue_after=s)`` with ``s > 0``: ``forget`` (the backoff resets), then
    ``add_after(s)``; ``requeue_after``.
  - returns ``Result()``: ``forget``; ``success``.

  Every error also counts in ``reconcile_errors_total``. A Python reconciler cannot both return a
  result and raise, so controller-runtime's "result set alongside an error" shows up as an error
  carrying a retry hint (an ``ApiError`` with ``retry_after``): the error wins, the hint is ignored
  and a warning says how to honour it. ``requeue`` stays pre-initialised at zero for dashboards.
* **Context.** Each reconcile runs inside ``bind_context(controller, namespace, name,
  reconcile_id)``, so every line it logs names the key and the attempt.
* **Stop.** Cancelling :meth:`run` stops handing out work, drops queued keys, lets reconciles in
  flight finish for up to ``shutdown_grace`` seconds, then cancels what is left (each one logs a
  warning naming its key: ``reconcile cut short``). No reconcile starts after the stop began, and
  those in flight see :func:`~etctl.runtime.stop_requested` turn True, so a long one can end
  early: it should start no new act and write no new decision from then on, only complete the act
  under way with its record.

A controller runs once; a manager that regains leadership builds a new one.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

from etctl.errors import ApiError, CacheSyncError, EtctlError, TerminalError
from etctl.log import bind_context, get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._clock import Clock
from etctl.runtime._fence import check_fence, current_fence
from etctl.runtime._handler import EnqueueingHandler, EventHandler, PriorityFunc
from etctl.runtime._predicate import Predicate
from etctl.runtime._ratelimit import RateLimiter
from etctl.runtime._reconcile import STOPPING, Reconciler, Request, Result
from etctl.runtime._source import EventSource, HandlerRegistration
from etctl.runtime._tasks import WorkTimedOut, run_with_timeout
from etctl.runtime._workqueue import ShutDown, WorkQueue

__all__ = ["Controller"]

log = get_logger(__name__)

_RESULTS = ("success", "error", "requeue", "requeue_after")
# Reconcile ids are random UUIDs (version 4), drawn from a generator seeded once from the OS rather
# than from os.urandom for every reconcile: they tell attempts apart in logs, they guard nothing.
_IDS = random.Random()  # noqa: S311 - log correlation ids, not secrets
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def _reconcile_id() -> str:
    """A random version-4 UUID as 32 hex digits (what ``uuid.uuid4().hex`` gives)."""
    return f"{(_IDS.getrandbits(128) & _UUID4_CLEAR) | _UUID4_SET:032x}"


# How often a handler registration's replay is checked during the start-up sync.
_SYNC_POLL_SECONDS = 0.01


class _ReconcileTimeout(EtctlError):
    """The reconciler ran past ``reconcile_timeout`` and was cancelled."""


class Controller:
    """Reconciles the keys its watches enqueue.

    Args:
        name: unique among the manager's controllers; labels metrics and logs, names tasks.
        reconciler: what runs for each key.
        clock: the time source of delays, timeouts and metrics.
        max_concurrent_reconciles: the number of workers (distinct keys reconciled at once).
        rate_limiter: the backoff of failed keys; controller-runtime's default when omitted.
        reconcile_timeout: cancel a reconcile after this many seconds (none by default).
        cache_sync_timeout: how long :meth:`run` waits for its sources to sync.
        recover_panic: when False, an unexpected exception from the reconciler stops the controller
            instead of being logged, counted and retried.
        needs_leader_election: whether a manager runs this controller only while it leads.
        shutdown_grace: how long reconciles in flight may run on once the controller is stopped.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        clock: Clock,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter[Request] | None = None,
        reconcile_timeout: float | None = None,
        cache_sync_timeout: float = 120.0,
        recover_panic: bool = True,
        needs_leader_election: bool = True,
        shutdown_grace: float = 30.0,
        priority: PriorityFunc | None = None,
    ) -> None:
        if not name:
            msg = "a controller needs a name"
            raise ValueError(msg)
        if max_concurrent_reconciles < 1:
            msg = f"max_concurrent_reconciles must be at least 1, got {max_concurrent_reconciles}"
            raise ValueError(msg)
        if reconcile_timeout is not None and reconcile_timeout <= 0:
            msg = f"reconcile_timeout must be positive, got {reconcile_timeout}"
            raise ValueError(msg)
        self.name = name
        self.needs_leader_election = needs_leader_election
        self._reconciler = reconciler
        self._clock = clock
        self._workers = max_concurrent_reconciles
        self._reconcile_timeout = reconcile_timeout
        self._cache_sync_timeout = cache_sync_timeout
        self._recover_panic = recover_panic
        self._priority = priority
        self._shutdown_grace = shutdown_grace
        self._queue: WorkQueue[Request] = WorkQueue(
            clock=clock, name=name, rate_limiter=rate_limiter
        )
        self._watches: list[tuple[EventSource, EnqueueingHandler]] = []
        self._started = False
        self._working = False
        self._stopping = asyncio.Event()
        self.abandoned = 0
        """Reconciles cancelled because they outlasted ``shutdown_grace`` when the controller
        stopped (0 after a complete drain)."""
        # controller-runtime pre-creates every series at zero, so rates and alerts work from the
        # first scrape; the children are kept to keep label lookups off the reconcile path.
        self._total = {result: metrics.RECONCILE_TOTAL.labels(name, result) for result in _RESULTS}
        self._errors = metrics.RECONCILE_ERRORS.labels(name)
        self._terminal = metrics.TERMINAL_RECONCILE_ERRORS.labels(name)
        self._panics = metrics.RECONCILE_PANICS.labels(name)
        self._timeouts = metrics.RECONCILE_TIMEOUTS.labels(name)
        self._time = metrics.RECONCILE_TIME.labels(name)
        self._active = metrics.ACTIVE_WORKERS.labels(name)
        self._active.set(0)
        metrics.MAX_CONCURRENT_RECONCILES.labels(name).set(max_concurrent_reconciles)

    @property
    def queue(self) -> WorkQueue[Request]:
        """The controller's workqueue (for sources that enqueue directly, and for tests)."""
        return self._queue

    @property
    def sources(self) -> tuple[EventSource, ...]:
        """The event sources this controller watches, in the order they were added."""
        return tuple(source for source, _ in self._watches)

    @property
    def working(self) -> bool:
        """True while the workers run: from the end of the start-up sync until the stop."""
        return self._working

    def watch(
        self,
        source: EventSource,
        handler: EventHandler,
        *predicates: Predicate,
        primary: bool = False,
        batch: float = 0.0,
        batch_creations: bool = True,
    ) -> None:
        """Enqueue the requests ``handler`` maps each ``source`` event to, if the predicates pass.

        Watches added before :meth:`run` are registered when it starts and waited for; a watch
        added while running is registered at once, without waiting for its replay. A ``primary``
        watch (of the kind the controller reconciles) queues new objects at low priority, behind
        the follow-ups of objects in progress (see :mod:`etctl.runtime._handler`). With ``batch``
        (seconds), an event's requests are queued that much later, joined by the events meanwhile
        (creations too, unless ``batch_creations`` is False).
        """
        adapter = EnqueueingHandler(
            handler,
            self._queue,
            predicates,
            new_objects_low=primary,
            priority=self._priority,
            batch=batch,
            batch_creations=batch_creations,
        )
        self._watches.append((source, adapter))
        if self._started:
            source.add_handler(adapter)

    async def run(self) -> None:
        """Sync the sources, then reconcile until cancelled (see the module docs for the stop).

        Raises:
            CacheSyncError: a source did not sync within ``cache_sync_timeout``.
            RuntimeError: the controller already ran.
        """
        if self._started:
            msg = f"controller {self.name} already ran; build a new one"
            raise RuntimeError(msg)
        self._started = True
        clog = log.bind(controller=self.name)
        try:
            clog.info("starting controller", sources=[str(s.resource) for s, _ in self._watches])
            registrations = [(s, s.add_handler(adapter)) for s, adapter in self._watches]
            await self._wait_for_sync(registrations)
        except BaseException:
            self._queue.shut_down()
            raise
        clog.info("starting workers", worker_count=self._workers)
        async with asyncio.TaskGroup() as group:
            group.create_task(self._queue.run(), name=f"controller:{self.name}:queue")
            for index in range(self._workers):
                group.create_task(self._worker(), name=f"controller:{self.name}:worker-{index}")
            self._working = True
            try:
                await asyncio.get_running_loop().create_future()  # until cancelled
            finally:
                self._working = False
                self._stopping.set()
                clog.info("stopping controller", in_flight=self._queue.processing)
                if not await self._queue.shut_down_with_drain(self._shutdown_grace):
                    self.abandoned = self._queue.processing
                    clog.warning(
                        "reconciles still running after the grace period are cancelled",
                        in_flight=self._queue.processing,
                        grace_seconds=self._shutdown_grace,
                    )

    async def _wait_for_sync(
        self, registrations: Sequence[tuple[EventSource, HandlerRegistration]]
    ) -> None:
        deadline = self._clock.monotonic() + self._cache_sync_timeout
        for source, registration in registrations:
            if not source.has_synced():
                try:
                    await source.wait_for_sync(max(deadline - self._clock.monotonic(), 0.0))
                except CacheSyncError as err:
                    msg = f"controller {self.name}: {err}"
                    raise CacheSyncError(msg) from err
            while not registration.has_synced():
                if self._clock.monotonic() >= deadline:
                    msg = (
                        f"controller {self.name}: the handler on {source.resource} did not receive "
                        f"its initial objects within {self._cache_sync_timeout}s"
                    )
                    raise CacheSyncError(msg)
                await self._clock.sleep(_SYNC_POLL_SECONDS)

    async def _worker(self) -> None:
        STOPPING.set(self._stopping)  # this worker task's context, inherited by its reconciles
        queue = self._queue
        while True:
            try:
                request = await queue.get()
            except ShutDown:
                return
            self._active.inc()
            try:
                await self._reconcile_handler(request)
            finally:
                self._active.dec()
                queue.done(request)
            # A reconciler that never suspends would otherwise keep this worker on the loop for
            # as long as the queue has items, starving the sources that feed it.
            await asyncio.sleep(0)

    async def _reconcile_handler(self, request: Request) -> None:
        with bind_context(
            controller=self.name,
            namespace=request.namespace,
            name=request.name,
            reconcile_id=_reconcile_id(),
        ):
            started = self._clock.monotonic()
            try:
                result = await self._call(request)
            except TerminalError as err:
                self._count_error()
                self._terminal.inc()
                log.error("reconciler error, not requeued (terminal)", error=str(err))
                return
            except _ReconcileTimeout:
                self._count_error()
                self._timeouts.inc()
                self._queue.add_rate_limited(request)
                log.error("reconcile timed out and was cancelled", timeout=self._reconcile_timeout)
                return
            except EtctlError as err:
                self._count_error()
                if isinstance(err, ApiError) and err.retry_after:
                    log.warning(
                        "the error wins over its retry hint: requeued with backoff; catch it and "
                        "return Result(requeue_after=...) to honour the hint",
                        retry_after=err.retry_after,
                    )
                self._queue.add_rate_limited(request)
                log.error("reconciler error", error=str(err), error_type=type(err).__name__)
                return
            except Exception:
                self._panics.inc()
                if not self._recover_panic:
                    raise
                self._count_error()
                self._queue.add_rate_limited(request)
                log.exception("reconciler raised an unexpected exception (recovered)")
                return
            finally:
                self._time.observe(self._clock.monotonic() - started)
            self._queue.forget(request)
            if result.requeue_after is not None and result.requeue_after > 0:
                self._queue.add_after(request, result.requeue_after)
                self._total["requeue_after"].inc()
            else:
                self._total["success"].inc()

    def _count_error(self) -> None:
        self._errors.inc()
        self._total["error"].inc()

    async def _call(self, request: Request) -> Result:
        # A fenced leader (its renew deadline passed) starts no reconcile: one woken when the
        # process resumes from a pause must not act before the election loop notices the loss.
        if current_fence() is not None:  # the message is built only when there is a fence
            check_fence(f"reconcile of {request}")
        try:
            if self._reconcile_timeout is None:
                result = await self._reconciler.reconcile(request)
            else:
                # Runs on the injectable clock; the reconciler's own exceptions (a TimeoutError of
                # its own included) come back as themselves, only the deadline is a WorkTimedOut.
                result = await run_with_timeout(
                    self._clock,
                    self._reconcile_timeout,
                    lambda: self._reconciler.reconcile(request),
                    name=f"controller:{self.name}:reconcile:{request}",
                )
        except WorkTimedOut as err:
            raise _ReconcileTimeout from err
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # This worker is being stopped without grace (the grace period ran out, or the
                # lease was lost): say which reconcile was cut short, in the middle of what.
                log.warning(
                    "reconcile cut short: cancelled before it finished; the next run of the "
                    "controller judges the object again"
                )
                raise
            # Nobody cancelled this worker: the reconciler let a stray cancellation escape. Treat
            # it as the bug it is instead of letting it end the worker silently.
            msg = "the reconciler raised CancelledError without being cancelled"
            raise RuntimeError(msg) from None
        returned: object = result  # the protocol says Result; a plain function may say otherwise
        if not isinstance(returned, Result):
            msg = f"the reconciler returned {type(returned).__name__}, not a Result"
            raise TypeError(msg)
        return returned

    def __repr__(self) -> str:
        return f"Controller({self.name!r}, workers={self._workers}, watches={len(self._watches)})"
