import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from etctl.errors import CacheSyncError, Conflict, TerminalError, TooManyRequests
from etctl.runtime import (
    REGISTRY,
    EnqueueRequestForObject,
    FakeClock,
    GenerationChanged,
    ReconcileFunc,
    Request,
    Result,
    stop_requested,
)
from etctl.runtime._controller import Controller
from etctl.runtime._ratelimit import ItemExponentialRateLimiter
from etctl.testing import eventually
from tests.runtime._fakes import FakeSource, obj, sample, unique_name

ReconcileFn = Callable[[Request], Awaitable[Result]]


class Harness:
    """A controller on a fake clock and source; tests set ``fn``, the reconcile function."""

    def __init__(self, **options: Any) -> None:
        self.clock = FakeClock()
        self.name = unique_name("ctrl")
        self.source = FakeSource(self.clock)
        self.fn: ReconcileFn = scripted(self.clock, [])
        options.setdefault("rate_limiter", ItemExponentialRateLimiter(1.0, 100.0))
        self.controller = Controller(
            self.name, ReconcileFunc(self._dispatch), clock=self.clock, **options
        )
        self.controller.watch(self.source, EnqueueRequestForObject())

    async def _dispatch(self, request: Request) -> Result:
        return await self.fn(request)

    def metric(self, metric: str, **labels: str) -> float:
        return sample(metric, controller=self.name, **labels)

    def total(self, result: str) -> float:
        return self.metric("controller_runtime_reconcile_total", result=result)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[asyncio.Task[None]]:
        async with asyncio.TaskGroup() as group:
            task = group.create_task(self.controller.run(), name="controller-under-test")
            await self.clock.settle()
            try:
                yield task
            finally:
                task.cancel()


def scripted(
    clock: FakeClock, calls: list[tuple[Request, float]], *outcomes: Result | BaseException
) -> ReconcileFn:
    """A reconciler that records (request, time) and plays ``outcomes`` in order, then succeeds."""
    script = list(outcomes)

    async def reconcile(request: Request) -> Result:
        calls.append((request, clock.monotonic()))
        outcome = script.pop(0) if script else Result()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return reconcile


KEY = Request("ns", "job")


def times(calls: list[tuple[Request, float]]) -> list[float]:
    return [at for _, at in calls]


# -- the result table


async def test_success_forgets_and_counts() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(h.clock, calls)
    h.source.create(obj("job", "ns"))
    async with h.running():
        await eventually(lambda: h.total("success") == 1)
        assert calls == [(KEY, 0.0)]
        assert h.controller.queue.num_requeues(KEY) == 0
        assert h.metric("controller_runtime_reconcile_time_seconds_count") == 1


async def test_errors_requeue_with_backoff_until_success() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(h.clock, calls, Conflict("stale"), Conflict("stale"), Conflict("stale"))
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(100)
        assert times(calls) == [0.0, 1.0, 3.0, 7.0]  # 1 s, 2 s, 4 s of backoff
        assert h.metric("controller_runtime_reconcile_errors_total") == 3
        assert h.total("error") == 3
        assert h.total("success") == 1
        assert h.controller.queue.num_requeues(KEY) == 0  # success forgot the failures
        assert h.metric("workqueue_retries_total", name=h.name) == 3


async def test_terminal_errors_are_counted_and_not_requeued() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(h.clock, calls, Conflict("stale"), TerminalError("bad spec"))
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(1000)
        assert times(calls) == [0.0, 1.0]
        assert h.metric("controller_runtime_terminal_reconcile_errors_total") == 1
        assert h.metric("controller_runtime_reconcile_errors_total") == 2
        assert h.total("error") == 2
        assert h.controller.queue.waiting == 0
        assert h.controller.queue.num_requeues(KEY) == 1  # not forgotten either
        h.source.update(obj("job", "ns", generation=2))  # a new change reconciles afresh
        await h.clock.settle()
        assert times(calls) == [0.0, 1.0, 1000.0]


async def test_requeue_after_resets_the_backoff_and_comes_back_on_time() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(
        h.clock, calls, Conflict("x"), Conflict("x"), Result(requeue_after=30), Result()
    )
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(3)
        assert times(calls) == [0.0, 1.0, 3.0]
        assert h.controller.queue.num_requeues(KEY) == 0
        assert h.controller.queue.waiting == 1
        await h.clock.advance(100)
        assert times(calls) == [0.0, 1.0, 3.0, 33.0]
        assert h.total("requeue_after") == 1
        assert h.total("success") == 1
        assert h.total("requeue") == 0


async def test_a_retry_hint_on_an_error_is_ignored_with_a_warning() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(h.clock, calls, TooManyRequests("slow down", retry_after=60))
    h.source.create(obj("job", "ns"))
    with capture_logs() as logs:
        async with h.running():
            await h.clock.advance(100)
    assert times(calls) == [0.0, 1.0]  # the backoff, not the 60 s hint
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert warnings[0]["retry_after"] == 60
    assert "requeue_after" in warnings[0]["event"]


async def test_results_are_pre_initialised_to_zero() -> None:
    h = Harness(max_concurrent_reconciles=4)
    for result in ("success", "error", "requeue", "requeue_after"):
        labels = {"controller": h.name, "result": result}
        assert REGISTRY.get_sample_value("controller_runtime_reconcile_total", labels) == 0
    for metric in (
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_active_workers",
    ):
        assert REGISTRY.get_sample_value(metric, {"controller": h.name}) == 0
    assert h.metric("controller_runtime_max_concurrent_reconciles") == 4


# -- panics


async def test_unexpected_exceptions_are_recovered_counted_and_retried() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(h.clock, calls, KeyError("spec"))
    h.source.create(obj("job", "ns"))
    with capture_logs() as logs:
        async with h.running():
            await h.clock.advance(10)
            h.source.create(obj("other", "ns"))
            await h.clock.settle()
    assert times(calls) == [0.0, 1.0, 10.0]  # the key is retried, the controller goes on
    assert h.metric("controller_runtime_reconcile_panics_total") == 1
    assert h.metric("controller_runtime_reconcile_errors_total") == 1
    assert h.total("error") == 1
    errors = [e for e in logs if e["log_level"] == "error"]
    assert "KeyError: 'spec'" in errors[0]["exception"]  # logged with its traceback
    assert "unexpected" in errors[0]["event"]


async def test_stray_cancellations_and_wrong_return_types_count_as_panics() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    bad: Any = "not a result"
    h.fn = scripted(h.clock, calls, asyncio.CancelledError(), bad)
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(10)
    assert times(calls) == [0.0, 1.0, 3.0]
    assert h.metric("controller_runtime_reconcile_panics_total") == 2
    assert h.total("success") == 1


async def test_without_panic_recovery_the_controller_fails() -> None:
    h = Harness(recover_panic=False)
    h.fn = scripted(h.clock, [], ValueError("bug"))
    h.source.create(obj("job", "ns"))
    with pytest.raises(ExceptionGroup) as caught:
        await h.controller.run()
    assert caught.group_contains(ValueError, match="bug", depth=1)
    assert h.metric("controller_runtime_reconcile_panics_total") == 1
    assert h.metric("controller_runtime_reconcile_errors_total") == 0


# -- timeouts


async def test_a_reconcile_past_its_timeout_is_cancelled_counted_and_retried() -> None:
    cancelled: list[float] = []
    calls: list[float] = []
    h = Harness(reconcile_timeout=5.0)

    async def reconcile(request: Request) -> Result:
        calls.append(h.clock.monotonic())
        if len(calls) == 1:
            try:
                await h.clock.sleep(100)
            except asyncio.CancelledError:
                cancelled.append(h.clock.monotonic())
                raise
        return Result()

    h.fn = reconcile
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(20)
    assert cancelled == [5.0]  # cancellation reached the reconciler's own await
    assert calls == [0.0, 6.0]  # then 1 s of backoff
    assert h.metric("controller_runtime_reconcile_timeouts_total") == 1
    assert h.metric("controller_runtime_reconcile_errors_total") == 1
    assert h.total("success") == 1


async def test_outcomes_pass_through_the_timeout_wrapper() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness(reconcile_timeout=5.0)
    h.fn = scripted(h.clock, calls, Conflict("x"), TerminalError("no"))
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(50)
    assert times(calls) == [0.0, 1.0]
    assert h.metric("controller_runtime_terminal_reconcile_errors_total") == 1
    assert h.metric("controller_runtime_reconcile_timeouts_total") == 0


# -- concurrency


async def test_the_concurrency_limit_is_honoured() -> None:
    release = asyncio.Event()
    in_flight: set[Request] = set()
    peak = 0
    done: list[Request] = []

    async def reconcile(request: Request) -> Result:
        nonlocal peak
        in_flight.add(request)
        peak = max(peak, len(in_flight))
        await release.wait()
        in_flight.discard(request)
        done.append(request)
        return Result()

    h = Harness(max_concurrent_reconciles=3)
    h.fn = reconcile
    for i in range(10):
        h.source.create(obj(f"job-{i}", "ns"))
    async with h.running():
        await eventually(lambda: len(in_flight) == 3)
        await h.clock.settle()
        assert len(in_flight) == 3
        assert h.metric("controller_runtime_active_workers") == 3
        assert h.metric("controller_runtime_max_concurrent_reconciles") == 3
        release.set()
        await eventually(lambda: len(done) == 10)
    assert peak == 3
    assert h.metric("controller_runtime_active_workers") == 0


async def test_one_key_is_never_reconciled_twice_at_once() -> None:
    release = asyncio.Event()
    runs = 0
    running_now = 0
    overlap = False

    async def reconcile(request: Request) -> Result:
        nonlocal runs, running_now, overlap
        runs += 1
        running_now += 1
        overlap = overlap or running_now > 1
        if runs == 1:
            await release.wait()
        running_now -= 1
        return Result()

    h = Harness(max_concurrent_reconciles=4)
    h.fn = reconcile
    h.source.create(obj("job", "ns"))
    async with h.running():
        await eventually(lambda: runs == 1)
        for generation in range(2, 52):
            h.source.update(obj("job", "ns", generation=generation))
        await h.clock.settle()
        assert runs == 1
        release.set()
        await eventually(lambda: h.total("success") == 2)
        await h.clock.settle()
    assert runs == 2  # fifty changes during the run: exactly one more run
    assert not overlap


async def test_a_thousand_events_before_start_cause_one_reconcile() -> None:
    calls: list[tuple[Request, float]] = []
    h = Harness()
    h.fn = scripted(h.clock, calls)
    h.source.create(obj("job", "ns"))
    for generation in range(2, 1002):
        h.source.update(obj("job", "ns", generation=generation))
    async with h.running():
        await h.clock.advance(1)
    assert calls == [(KEY, 0.0)]


# -- shutdown


async def test_graceful_shutdown_finishes_work_in_flight_and_drops_the_rest() -> None:
    started: list[str] = []
    finished: list[str] = []
    h = Harness(shutdown_grace=30.0)

    async def reconcile(request: Request) -> Result:
        started.append(request.name)
        await h.clock.sleep(5)
        finished.append(request.name)
        return Result()

    h.fn = reconcile
    for name in ("first", "second", "third"):
        h.source.create(obj(name, "ns"))
    async with asyncio.TaskGroup() as group:
        task = group.create_task(h.controller.run())
        await h.clock.advance(1)
        assert started == ["first"]
        task.cancel()
        await h.clock.settle()
        assert not task.done()  # waiting for the reconcile in flight
        h.source.create(obj("late", "ns"))  # ignored: the queue is shut down
        await h.clock.advance(4)
        await h.clock.settle()
        assert task.done()
    assert task.cancelled()
    assert started == finished == ["first"]
    await h.clock.advance(100)
    assert started == ["first"]


async def test_work_still_running_after_the_grace_period_is_cancelled() -> None:
    outcome: list[str] = []
    h = Harness(shutdown_grace=10.0)

    async def reconcile(request: Request) -> Result:
        try:
            await h.clock.sleep(100)
        except asyncio.CancelledError:
            outcome.append(f"cancelled at {h.clock.monotonic()}")
            raise
        return Result()

    h.fn = reconcile
    h.source.create(obj("slow", "ns"))
    with capture_logs() as logs:
        async with asyncio.TaskGroup() as group:
            task = group.create_task(h.controller.run())
            await h.clock.advance(2)
            task.cancel()
            await h.clock.advance(10)
    assert outcome == ["cancelled at 12.0"]
    assert any("grace" in e["event"] for e in logs if e["log_level"] == "warning")
    assert h.metric("controller_runtime_active_workers") == 0


async def test_a_long_reconcile_sees_the_stop_and_ends_early() -> None:
    steps: list[float] = []
    h = Harness(shutdown_grace=30.0)

    async def reconcile(request: Request) -> Result:
        # A burst of many writes, one a second, asking between them whether to go on.
        while not stop_requested() and len(steps) < 1000:
            steps.append(h.clock.monotonic())
            await h.clock.sleep(1)
        return Result()

    h.fn = reconcile
    h.source.create(obj("burst", "ns"))
    assert not stop_requested()  # outside a reconcile
    async with asyncio.TaskGroup() as group:
        task = group.create_task(h.controller.run())
        await h.clock.advance(5)
        task.cancel()
        await h.clock.advance(1)
        await h.clock.settle()
        # Done after its current step, not after the 30 s grace period nor its 1000 steps.
        assert task.done()
    assert len(steps) == 6
    assert h.metric("controller_runtime_active_workers") == 0


# -- start-up


async def test_a_source_that_never_syncs_fails_the_controller_loudly() -> None:
    clock = FakeClock()
    name = unique_name("ctrl")
    controller = Controller(
        name, ReconcileFunc(scripted(clock, [])), clock=clock, cache_sync_timeout=120
    )
    controller.watch(FakeSource(clock, synced=False), EnqueueRequestForObject())
    task = asyncio.create_task(controller.run())
    await clock.advance(119)
    assert not task.done()
    await clock.advance(1)
    with pytest.raises(CacheSyncError, match=rf"controller {name}: .*403 Forbidden"):
        await task
    assert controller.queue.shutting_down


async def test_the_controller_waits_for_its_handler_replay() -> None:
    calls: list[tuple[Request, float]] = []
    clock = FakeClock()
    source = FakeSource(clock, replay_pending=True)
    source.create(obj("job", "ns"))
    controller = Controller(
        unique_name(), ReconcileFunc(scripted(clock, calls)), clock=clock, cache_sync_timeout=10
    )
    controller.watch(source, EnqueueRequestForObject())
    async with asyncio.TaskGroup() as group:
        task = group.create_task(controller.run())
        await clock.advance(5)
        assert calls == []  # workers not started yet
        source.finish_replay()
        await clock.advance(0.02)
        assert [r for r, _ in calls] == [KEY]
        task.cancel()

    stuck = Controller(
        unique_name(), ReconcileFunc(scripted(clock, [])), clock=clock, cache_sync_timeout=10
    )
    stuck.watch(FakeSource(clock, replay_pending=True), EnqueueRequestForObject())
    run = asyncio.create_task(stuck.run())
    await clock.advance(9.9)
    assert not run.done()
    await clock.advance(0.2)
    with pytest.raises(CacheSyncError, match="initial objects"):
        await run


async def test_each_reconcile_logs_with_its_own_context() -> None:
    contexts: list[dict[str, Any]] = []

    async def reconcile(request: Request) -> Result:
        contexts.append(structlog.contextvars.get_contextvars())
        return Result()

    h = Harness()
    h.fn = reconcile
    h.source.create(obj("a", "ns"))
    h.source.create(obj("b", "other"))
    async with h.running():
        await eventually(lambda: len(contexts) == 2)
    assert [(c["controller"], c["namespace"], c["name"]) for c in contexts] == [
        (h.name, "ns", "a"),
        (h.name, "other", "b"),
    ]
    ids = {c["reconcile_id"] for c in contexts}
    assert len(ids) == 2
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert structlog.contextvars.get_contextvars() == {}


async def test_predicates_given_to_watch_filter_events() -> None:
    calls: list[tuple[Request, float]] = []
    clock = FakeClock()
    source = FakeSource(clock)
    controller = Controller(unique_name(), ReconcileFunc(scripted(clock, calls)), clock=clock)
    controller.watch(source, EnqueueRequestForObject(), GenerationChanged())
    source.create(obj("job", "ns"))
    async with asyncio.TaskGroup() as group:
        task = group.create_task(controller.run())
        await clock.settle()
        source.update(obj("job", "ns", generation=1))  # status only
        source.resync("ns/job")
        await clock.settle()
        assert len(calls) == 1
        source.update(obj("job", "ns", generation=2))
        await clock.settle()
        assert len(calls) == 2
        late = FakeSource(clock)
        controller.watch(late, EnqueueRequestForObject())  # registered at once while running
        late.create(obj("late", "ns"))
        await clock.settle()
        assert calls[-1][0] == Request("ns", "late")
        task.cancel()


async def test_a_controller_runs_once_and_validates_its_options() -> None:
    clock = FakeClock()
    reconciler = ReconcileFunc(scripted(clock, []))
    controller = Controller(unique_name(), reconciler, clock=clock)
    assert controller.needs_leader_election is True
    assert "workers=1" in repr(controller)
    task = asyncio.create_task(controller.run())
    await clock.settle()
    with pytest.raises(RuntimeError, match="already ran"):
        await controller.run()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(ValueError, match="name"):
        Controller("", reconciler, clock=clock)
    with pytest.raises(ValueError, match="max_concurrent"):
        Controller("x", reconciler, clock=clock, max_concurrent_reconciles=0)
    with pytest.raises(ValueError, match="reconcile_timeout"):
        Controller("x", reconciler, clock=clock, reconcile_timeout=0)
    follower = Controller(unique_name(), reconciler, clock=clock, needs_leader_election=False)
    assert follower.needs_leader_election is False


async def test_reconcile_time_is_measured_on_the_clock() -> None:
    h = Harness()

    async def reconcile(request: Request) -> Result:
        await h.clock.sleep(2)
        return Result()

    h.fn = reconcile
    h.source.create(obj("job", "ns"))
    async with h.running():
        await h.clock.advance(3)
    assert h.metric("controller_runtime_reconcile_time_seconds_sum") == 2.0
    assert h.metric("controller_runtime_reconcile_time_seconds_bucket", le="2.0") == 1
    assert h.metric("controller_runtime_reconcile_time_seconds_bucket", le="1.75") == 0


async def test_sources_and_working_describe_the_running_controller() -> None:
    h = Harness()
    assert h.controller.sources == (h.source,)
    assert not h.controller.working
    async with h.running():
        await eventually(lambda: h.controller.working)
        assert h.controller.queue.idle
    assert not h.controller.working
