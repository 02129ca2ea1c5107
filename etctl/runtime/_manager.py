"""The manager: one object that runs an operator's cache, controllers, elections and probes.

A :class:`Manager` owns the client, the shared :class:`~etctl.runtime.Cache`, the event
recorders, the controllers and other runnables, leader election and the HTTP server. Its
:meth:`Manager.run` runs all of them as named tasks of one ``asyncio.TaskGroup`` (nothing is
fire-and-forget) and keeps these invariants:

* **Start order** (controller-runtime's): HTTP server (metrics and probes) -> the webhook server
  and the rotation of its certificate, when a webhook is registered (a CRD converted by webhook
  cannot be listed before its converter serves) -> cache, waited for until synced (a cache that
  cannot sync within ``cache_sync_timeout`` fails :meth:`run` with the reason, for example an
  RBAC 403) -> runnables and controllers that do not need leadership -> leader election -> once
  leading, the leader-only runnables and controllers.
* **Readiness** (``/readyz``) needs the caches synced, the webhook server serving (when it runs)
  and, when electing, a known election state (leader or standby). **Liveness** (``/healthz``)
  fails when this process leads but has not renewed its lease for ``lease_duration`` plus a
  tolerance (a wedged process).
* **Failure.** A runnable or controller that raises stops the manager; :meth:`run` raises that
  error itself (never an ``ExceptionGroup``) after the shutdown below.
* **Graceful shutdown** (:meth:`stop`, or SIGTERM/SIGINT when :meth:`run` installs handlers), within
  ``graceful_shutdown_timeout``: leader-only work stops first (controllers take no new work and
  let reconciles in flight finish; nothing starts after), then the other runnables; the lease is
  renewed throughout, and released only once leader-only work has stopped, so a successor takes
  over at once; event recorders flush; the cache, then the webhook server, then the HTTP server
  stop last. :meth:`run` then
  returns normally, unless the shutdown was incomplete: when the grace period ran out (or a second
  signal, which skips what is left of it, cut it short) while work still ran, which was
  cancelled, or while Events were unsent, which were dropped, :meth:`run` raises
  :class:`~etctl.errors.ShutdownIncomplete` saying what was lost (controller-runtime's manager
  returns an error too).
* **Fencing.** Leader-only work runs under the elector's fence (:mod:`etctl.runtime._fence`):
  from the renew deadline on, its writes and execs are refused (:class:`~etctl.errors.Fenced`)
  before they are sent and no reconcile starts, even when the process resumes from a pause and
  its reconciles run before the election loop does. When leadership is lost, every leader-only
  task is cancelled at once (a reconcile in flight included) and awaited before anything else,
  inside the window between the renew deadline and the moment another candidate may take over;
  :meth:`run` then raises :class:`~etctl.errors.LeaderElectionLost` after stopping everything else
  without grace. A binary exits non-zero and is restarted: a manager never leads twice.

Cancelling the task that awaits :meth:`run` shuts down gracefully as well, then lets the
cancellation through. The client is shared, not closed: whoever made it closes it.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from etctl.errors import LeaderElectionLost, ShutdownIncomplete
from etctl.log import get_logger
from etctl.runtime._builder import ControllerBuilder, ReconcilerLike
from etctl.runtime._cache import Cache
from etctl.runtime._client import Client
from etctl.runtime._clock import Clock, RealClock
from etctl.runtime._controller import Controller
from etctl.runtime._delegated_auth import DelegatedAuth
from etctl.runtime._fence import fenced_context
from etctl.runtime._health import Checker, Checks, HttpServer, SecureServing, ping
from etctl.runtime._leader import LeaderElector, LeaderState
from etctl.runtime._manager_options import ManagerOptions
from etctl.runtime._recorder import ClientEventSink, EventRecorder
from etctl.runtime._resources import Resource
from etctl.runtime._tasks import (
    guarded,
    run_with_timeout,
    stop_now,
    unless,
    wait_first,
    wait_tasks,
)

if TYPE_CHECKING:
    from etctl.runtime._cert_rotator import CertRotator
    from etctl.runtime._webhook_builder import WebhookBuilder
    from etctl.runtime._webhook_server import WebhookServer

__all__ = ["Manager", "ManagerOptions", "RunnableFunc"]

log = get_logger(__name__)

RunnableFunc = Callable[[], Awaitable[None]]
"""A runnable: an ``async def`` that works until it is cancelled (returning early is allowed)."""


@dataclass(frozen=True, slots=True)
class _Runnable:
    name: str
    fn: RunnableFunc
    needs_leader_election: bool


class Manager:
    """Runs an operator: cache, controllers, runnables, leader election and probes.

    Args:
        client: the API client everything shares.
        options: serving, election and lifecycle settings.
        clock: the time source of every wait (a ``FakeClock`` in tests).
        cache: the cache to share (built from ``client`` and ``options.namespaces`` by default).
        rng: the randomness of election and cache jitter (seed it in tests).

    Raises:
        ConfigError: the options are unusable (bad bind address, election durations, no lease
            namespace).
    """

    def __init__(
        self,
        client: Client,
        *,
        options: ManagerOptions | None = None,
        clock: Clock | None = None,
        cache: Cache | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.options = options or ManagerOptions()
        self.clock: Clock = clock or RealClock()
        rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self.cache = cache or Cache(
            client,
            clock=self.clock,
            options=self.options.cache,
            rng=random.Random(rng.random()),  # noqa: S311 - jitter, not cryptography
        )
        self._group: asyncio.TaskGroup | None = None
        self._started = False
        self._ready = asyncio.Event()  # caches synced and the work that needs no lease started
        self._settled = asyncio.Event()  # ready, or run() is over
        self._start_error: Exception | None = None  # why run() ended before it was ready
        self._wake = asyncio.Event()  # stop requested, a task failed, or leadership was lost
        self._hurry = asyncio.Event()  # skip what is left of the grace period
        self._stopping = False
        self._failure: Exception | None = None
        self._lost: list[str] = []  # what an incomplete shutdown cancelled or dropped
        self._leader_tasks: list[asyncio.Task[None]] = []
        self._other_tasks: list[asyncio.Task[None]] = []
        self._recorder_tasks: list[asyncio.Task[None]] = []
        self._cache_tasks: list[asyncio.Task[None]] = []  # the cache and its sync wait
        self._webhook_tasks: list[asyncio.Task[None]] = []  # the webhook server, its certificates
        self._election_task: asyncio.Task[None] | None = None
        self.fenced_at: float | None = None
        """Clock time at which leader-only work had stopped after leadership was lost."""
        self._controllers: dict[str, Controller] = {}
        self._runnables: dict[str, _Runnable] = {}
        self._recorders: dict[str, EventRecorder] = {}
        self.healthz = Checks("/healthz")
        self.readyz = Checks("/readyz")
        self.healthz.add("ping", ping)
        self.readyz.add("cache-sync", self._cache_synced)
        self.elector: LeaderElector | None = None
        config = self.options.leader_election_config()
        if config is not None:
            self.elector = LeaderElector(
                client, config, clock=self.clock, recorder=self.recorder(config.identity), rng=rng
            )
            self.healthz.add("leader-election", self.elector.check)
            self.readyz.add("leader-election", self._election_known)
        secure = None
        if self.options.metrics_secure:
            auth = DelegatedAuth(client, self.clock)
            secure = SecureServing(
                auth.check,
                cert_dir=self.options.metrics_cert_dir,
                cert_name=self.options.metrics_cert_name,
                key_name=self.options.metrics_key_name,
            )
        self._webhook_server: WebhookServer | None = None
        self.cert_rotator: CertRotator | None = None
        """The rotation of the webhook server's certificate (``options.cert_rotation``)."""
        if self.options.cert_rotation is not None:
            from etctl.runtime._cert_rotator import CertRotator  # noqa: PLC0415 - see webhook_server

            webhook = self.options.webhook
            self.cert_rotator = CertRotator(
                client,
                self.options.cert_rotation,
                cert_dir=webhook.cert_dir,
                cert_name=webhook.cert_name,
                key_name=webhook.key_name,
                clock=self.clock,
                rng=random.Random(rng.random()),  # noqa: S311 - jitter, not cryptography
                on_written=self.webhook_server.certificate.load,
            )
        self._server = HttpServer(
            metrics_bind_address=self.options.metrics_bind_address,
            health_probe_bind_address=self.options.health_probe_bind_address,
            healthz=self.healthz,
            readyz=self.readyz,
            secure=secure,
        )

    @property
    def webhook_server(self) -> WebhookServer:
        """The webhook server, run when a webhook is registered (see :meth:`webhook`).

        Made on first use: a manager that registers no webhook and rotates no certificate never
        loads the server, the admission reviews or the certificate code.
        """
        if self._webhook_server is None:
            from etctl.runtime._webhook_server import WebhookServer  # noqa: PLC0415

            self._webhook_server = WebhookServer(self.options.webhook, clock=self.clock)
        return self._webhook_server

    # -- setup

    def controller(self, name: str, reconciler: ReconcilerLike) -> ControllerBuilder:
        """Start building a controller that this manager will run (see :mod:`.builder`)."""
        return ControllerBuilder(self, name, reconciler)

    def webhook(self, resource: Resource, *, versions: Sequence[str] = ()) -> WebhookBuilder:
        """Start wiring the webhooks of ``resource`` into :attr:`webhook_server`.

        ``manager.webhook(R).with_defaulter(d).with_validator(v).with_converter(c).build()``; see
        :class:`~etctl.runtime.WebhookBuilder`.
        """
        # Loaded on first use: the admission handlers' review models (pydantic) cost an operator
        # without webhooks nothing.
        from etctl.runtime._webhook_builder import WebhookBuilder  # noqa: PLC0415

        return WebhookBuilder(self.webhook_server, resource, versions=versions)

    def add_controller(self, controller: Controller) -> None:
        """Run ``controller`` (while leading, if it needs leader election).

        Raises:
            ValueError: another controller or runnable has that name.
            RuntimeError: the manager has started.
        """
        self._check_new(controller.name)
        self._controllers[controller.name] = controller

    def add_runnable(self, name: str, fn: RunnableFunc, *, needs_leader_election: bool) -> None:
        """Run ``fn()`` as a named task (only while leading, if ``needs_leader_election``).

        A leader-only runnable must stop promptly when cancelled: on leadership loss it is given no
        grace at all.

        Raises:
            ValueError: another controller or runnable has that name.
            RuntimeError: the manager has started.
        """
        self._check_new(name)
        self._runnables[name] = _Runnable(name, fn, needs_leader_election)

    def _check_new(self, name: str) -> None:
        if self._started:
            msg = f"cannot add {name!r}: the manager has started"
            raise RuntimeError(msg)
        if not name:
            msg = "controllers and runnables need a name"
            raise ValueError(msg)
        if name in self._controllers or name in self._runnables:
            msg = f"a controller or runnable named {name!r} exists already: names must be unique"
            raise ValueError(msg)

    def recorder(self, component: str) -> EventRecorder:
        """The event recorder of ``component`` (one per component, sent by the manager)."""
        recorder = self._recorders.get(component)
        if recorder is None:
            recorder = EventRecorder(
                ClientEventSink(self.client), component=component, clock=self.clock
            )
            self._recorders[component] = recorder
            if self._group is not None and not self._stopping:
                self._start_recorder(self._group, component, recorder)
        return recorder

    def add_health_check(self, name: str, check: Checker) -> None:
        """Serve ``check`` as part of ``/healthz`` (liveness) and at ``/healthz/<name>``."""
        self.healthz.add(name, check)

    def add_ready_check(self, name: str, check: Checker) -> None:
        """Serve ``check`` as part of ``/readyz`` (readiness) and at ``/readyz/<name>``."""
        self.readyz.add(name, check)

    # -- state

    @property
    def controllers(self) -> tuple[Controller, ...]:
        """Every controller this manager runs (those needing leadership only while leading)."""
        return tuple(self._controllers.values())

    @property
    def running(self) -> bool:
        """True from the start of :meth:`run` until its shutdown begins."""
        return self._started and not self._stopping

    async def wait_started(self) -> None:
        """Return once :meth:`run` has synced the caches and started its work.

        Controllers and runnables that need no lease are running then; leader-only work starts
        when the lease is won (see :attr:`is_leader`). Safe to call before :meth:`run`.

        Raises:
            Exception: the error :meth:`run` failed with before it started (a cache that could not
                sync, an unusable bind address).
            RuntimeError: the manager stopped before it started.
        """
        await self._settled.wait()
        if self._ready.is_set():
            return
        if self._start_error is not None:
            raise self._start_error
        msg = "the manager stopped before it started"
        raise RuntimeError(msg)

    @property
    def is_leader(self) -> bool:
        """True while leader-only work may run: leading, or not electing and running."""
        if self.elector is None:
            return self.running
        return self.elector.is_leader

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """Where ``/metrics`` is served, once running."""
        return self._server.metrics_address

    @property
    def probe_address(self) -> tuple[str, int] | None:
        """Where ``/healthz`` and ``/readyz`` are served, once running."""
        return self._server.probe_address

    def _cache_synced(self) -> str | None:
        return None if self.cache.has_synced() else "the caches have not synced"

    def _election_known(self) -> str | None:
        assert self.elector is not None
        if self.elector.state in (LeaderState.LEADER, LeaderState.STANDBY):
            return None
        return f"leader election state is {self.elector.state.value}"

    # -- running

    def stop(self) -> None:
        """Ask for a graceful shutdown; :meth:`run` returns once it is done. Idempotent."""
        if not self._wake.is_set():
            log.info("shutdown requested")
        self._wake.set()

    async def run(self, *, handle_signals: bool = False) -> None:
        """Run everything until :meth:`stop`, a failure, or leadership loss.

        Args:
            handle_signals: install SIGTERM and SIGINT handlers that stop the manager gracefully
                (a second signal skips the grace period). Only for a process that the manager
                owns: never when embedded as a library.

        Raises:
            CacheSyncError: the cache did not sync in time (the reason is in the message).
            LeaderElectionLost: leadership was lost; leader-only work has been stopped.
            OSError: a bind address is unusable.
            RuntimeError: the manager ran before.
            ShutdownIncomplete: the shutdown cancelled work or dropped Events (grace period over,
                or a second signal).
            Exception: the first error a runnable or controller raised.
        """
        if self._started:
            msg = "a manager runs once"
            raise RuntimeError(msg)
        self._started = True
        loop = asyncio.get_running_loop()
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            await self._server.start()
            try:
                async with asyncio.TaskGroup() as group:
                    self._group = group
                    try:
                        await self._start(group)
                        await self._wake.wait()
                    finally:
                        await self._shutdown()
            finally:
                self._group = None
                await self._server.stop()
            if self._failure is not None:
                raise self._failure
            if self._lost:
                msg = "the graceful shutdown was incomplete: " + "; ".join(self._lost)
                raise ShutdownIncomplete(msg)
        except Exception as exc:
            if not self._ready.is_set():
                self._start_error = exc
            raise
        finally:
            if handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
            self._settled.set()
        log.info("manager stopped")

    def _on_signal(self, sig: signal.Signals) -> None:
        if self._wake.is_set():
            log.warning("second signal: stopping without grace", signal=sig.name)
            self._hurry.set()
        else:
            log.info("signal received: shutting down gracefully", signal=sig.name)
        self._wake.set()

    async def _start(self, group: asyncio.TaskGroup) -> None:
        self._start_webhooks(group)
        self._cache_tasks.append(self._spawn(group, "cache", self.cache.run, finishable=False))
        for component, recorder in self._recorders.items():
            self._start_recorder(group, component, recorder)
        log.info("waiting for the caches to sync", timeout=self.options.cache_sync_timeout)
        syncing = self._spawn(group, "cache-sync", self._sync)
        self._cache_tasks.append(syncing)
        await wait_first(syncing, self._wake)
        if self._wake.is_set():
            return
        self._spawn_work(group, leader=False)
        if self.elector is None:
            self._start_leader_work(group)
        else:
            self._election_task = self._spawn(group, "leader-election", self._elect)
        self._ready.set()
        self._settled.set()

    def _start_webhooks(self, group: asyncio.TaskGroup) -> None:
        """Start the webhook server (when a webhook is registered) and its certificate rotation."""
        if self.cert_rotator is not None:
            rotator = self.cert_rotator
            self._webhook_tasks.append(
                self._spawn(group, "cert-rotator", rotator.run, finishable=False)
            )
        server = self._webhook_server
        if server is not None and server.active:
            if "webhook" not in self.readyz.names:
                self.readyz.add("webhook", server.check)
            self._webhook_tasks.append(
                self._spawn(group, "webhook-server", server.run, finishable=False)
            )

    async def _sync(self) -> None:
        await self.cache.wait_for_sync(self.options.cache_sync_timeout)
        log.info("caches synced")

    def _start_leader_work(self, group: asyncio.TaskGroup) -> None:
        if self._wake.is_set():
            return  # stopping: leadership came too late to start anything
        self._spawn_work(group, leader=True)

    def _spawn_work(self, group: asyncio.TaskGroup, *, leader: bool) -> None:
        """Start the controllers, then the runnables, that run only while leading (or never do).

        Each task is recorded as soon as it starts (leader-only work in ``_leader_tasks``, the rest
        in ``_other_tasks``), so a stop finds every one that started. Leader-only work starts under
        the elector's fence (:mod:`etctl.runtime._fence`): its writes and execs are refused once
        the renew deadline has passed, whether or not the election loop has noticed yet.
        """
        tasks = self._leader_tasks if leader else self._other_tasks
        context = fenced_context(self.elector) if leader and self.elector is not None else None
        for name, controller in self._controllers.items():
            if bool(controller.needs_leader_election) == leader:
                tasks.append(
                    self._spawn(group, f"controller:{name}", controller.run, context=context)
                )
        for runnable in self._runnables.values():
            if bool(runnable.needs_leader_election) == leader:
                tasks.append(self._spawn(group, runnable.name, runnable.fn, context=context))

    def _spawn(
        self,
        group: asyncio.TaskGroup,
        name: str,
        fn: RunnableFunc,
        *,
        finishable: bool = True,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[None]:
        work = guarded(
            name, fn, on_failure=self._fail, finishable=finishable, quiet=(LeaderElectionLost,)
        )
        return group.create_task(work, name=f"manager:{name}", context=context)

    def _start_recorder(
        self, group: asyncio.TaskGroup, component: str, recorder: EventRecorder
    ) -> None:
        self._recorder_tasks.append(
            self._spawn(group, f"events:{component}", recorder.run, finishable=False)
        )

    def _fail(self, err: Exception) -> None:
        """Record the first failure (run() raises it) and stop."""
        if self._failure is None:
            self._failure = err
            if not isinstance(err, LeaderElectionLost):
                log.error("stopping the manager after a failure", error=str(err))
        self._wake.set()

    async def _elect(self) -> None:
        elector = self.elector
        assert elector is not None
        assert self._group is not None
        await elector.acquire()
        self._start_leader_work(self._group)
        try:
            await elector.hold()
        except LeaderElectionLost:
            self._hurry.set()
            await self._fence(elector)
            raise

    async def _fence(self, elector: LeaderElector) -> None:
        """Stop every leader-only task now, and check that it happened before others may lead."""
        log.warning("leadership lost: stopping leader-only work", tasks=len(self._leader_tasks))
        await stop_now(self._leader_tasks)
        self.fenced_at = self.clock.monotonic()
        deadline = elector.fence_deadline
        if deadline is not None and self.fenced_at >= deadline:
            # A pause (SIGSTOP, a frozen VM) past the lease: another candidate may lead already.
            # The fence refused every write since the renew deadline, so none overlapped.
            log.warning(
                "leader-only work stopped after the lease could have passed to another candidate; "
                "its writes were fenced since the renew deadline",
                late_by=self.fenced_at - deadline,
            )
        else:
            margin = None if deadline is None else deadline - self.fenced_at
            log.info("leader-only work stopped in time", margin_seconds=margin)

    async def _shutdown(self) -> None:
        """Stop in reverse start order within the grace period (none after leadership loss)."""
        self._stopping = True
        lost = isinstance(self._failure, LeaderElectionLost)
        grace = 0.0 if lost else self.options.graceful_shutdown_timeout
        deadline = self.clock.monotonic() + grace
        log.info("stopping", grace_seconds=grace)
        await self._stop_tasks("leader-only", self._leader_tasks, deadline)
        await self._stop_tasks("other", self._other_tasks, deadline)
        abandoned = sum(controller.abandoned for controller in self._controllers.values())
        if abandoned:
            self._lost.append(f"{abandoned} reconcile(s) cancelled past the grace period")
        await self._stop_election()
        await self._flush_recorders(deadline)
        await stop_now(self._cache_tasks)
        await stop_now(self._webhook_tasks)

    async def _stop_tasks(
        self, what: str, tasks: list[asyncio.Task[None]], deadline: float
    ) -> None:
        pending = [task for task in tasks if not task.done()]
        if not pending:
            return
        for task in pending:
            task.cancel()  # controllers stop taking work and drain what is in flight
        remaining = deadline - self.clock.monotonic()
        if await unless(lambda: wait_tasks(self.clock, pending, remaining), self._hurry):
            return
        still = [task for task in pending if not task.done()]
        log.warning("grace period over: cancelling what is still running", tasks=what)
        await stop_now(pending)
        if still:
            self._lost.append(f"{len(still)} {what} task(s) cancelled before they finished")

    async def _stop_election(self) -> None:
        elector = self.elector
        if elector is None:
            return
        if self._election_task is not None:
            await stop_now([self._election_task])
        if elector.is_leader:
            await elector.release()

    async def _flush_recorders(self, deadline: float) -> None:
        for recorder in self._recorders.values():
            remaining = deadline - self.clock.monotonic()
            if self._hurry.is_set() or remaining <= 0:
                break
            try:
                await run_with_timeout(
                    self.clock, remaining, recorder.flush, name="manager:flush-events"
                )
            except TimeoutError:
                break
        unsent = sum(recorder.pending for recorder in self._recorders.values())
        if unsent:
            log.warning("events still unsent at shutdown are dropped", events=unsent)
            self._lost.append(f"{unsent} event(s) dropped unsent")
        await stop_now(self._recorder_tasks)

    def __repr__(self) -> str:
        return (
            f"Manager(controllers={list(self._controllers)}, runnables={list(self._runnables)}, "
            f"leader_election={self.elector is not None})"
        )
