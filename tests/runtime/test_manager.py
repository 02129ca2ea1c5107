"""The manager end to end against the cluster under test: start order, probes, metrics, leader
election with failover and fencing, graceful shutdown, failures.

Managers run on a shared virtual clock; requests are real HTTP. Each step advances the clock, then
waits (bounded, in real time) for what the step must cause.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from etctl.errors import CacheSyncError, LeaderElectionLost, ShutdownIncomplete
from etctl.runtime import (
    CONFIGMAPS,
    EVENTS,
    LEASES,
    Client,
    FakeClock,
    Manager,
    ManagerOptions,
    Request,
    Result,
)
from etctl.runtime._leader import LeaderState
from etctl.testing import ApiServer, ClusterTarget, Fault, cluster_target, eventually
from tests.runtime._fakes import unique_name
from tests.runtime._realtime import ManagerRun, NoJitter, answered, client_of, running


@pytest_asyncio.fixture
async def target(tmp_path: Path) -> AsyncIterator[ClusterTarget]:
    async with cluster_target(tmp_path) as found:
        yield found


@pytest.fixture
def server(target: ClusterTarget) -> ApiServer:
    """The embedded server's hooks (tests using them are marked etctl_hooks)."""
    return target.hooks


@pytest.fixture
def ns(target: ClusterTarget) -> str:
    return target.namespace


@pytest_asyncio.fixture
async def client(target: ClusterTarget) -> AsyncIterator[Client]:
    async with client_of(target) as api:
        yield api


@pytest_asyncio.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        yield session


def configmap(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
    }


@dataclass
class Work:
    """A leader-only runnable that records, on the clock, when it started and when it stopped."""

    clock: FakeClock
    started: list[float] = field(default_factory=list)
    stopped: list[float] = field(default_factory=list)

    async def __call__(self) -> None:
        self.started.append(self.clock.monotonic())
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            self.stopped.append(self.clock.monotonic())


@dataclass
class Operator(ManagerRun):
    """One manager under test, with a leader-only runnable."""

    work: Work

    @property
    def elector_state(self) -> LeaderState:
        assert self.manager.elector is not None
        return self.manager.elector.state


def operator(
    client: Client,
    clock: FakeClock,
    *,
    lease: str | None,
    namespace: str = "",
    identity: str = "a",
    **options: Any,
) -> Operator:
    defaults: dict[str, Any] = {
        "metrics_bind_address": "127.0.0.1:0",
        "health_probe_bind_address": "127.0.0.1:0",
    }
    if lease is not None:
        defaults.update(
            leader_election=True,
            leader_election_id=lease,
            leader_election_namespace=namespace,
            leader_election_identity=identity,
        )
    manager = Manager(
        client, options=ManagerOptions(**{**defaults, **options}), clock=clock, rng=NoJitter()
    )
    work = Work(clock)
    manager.add_runnable(f"work-{identity}", work, needs_leader_election=True)
    return Operator(manager, work)


def running_now(op: Operator) -> bool:
    return op.manager.running


def ended_with(op: Operator) -> BaseException | None:
    assert op.task is not None
    assert op.task.done()
    return op.error


async def get(
    http: aiohttp.ClientSession, address: tuple[str, int] | None, path: str
) -> tuple[int, str]:
    assert address is not None
    host, port = address
    async with http.get(f"http://{host}:{port}{path}") as response:
        return response.status, await response.text()


async def spec_of(client: Client, lease: str, namespace: str) -> dict[str, Any]:
    spec: dict[str, Any] = (await client.get(LEASES, lease, namespace=namespace))["spec"]
    return spec


# -- leader election, failover and fencing


async def test_two_managers_elect_one_leader_and_hand_over_on_a_clean_stop(
    ns: str, client: Client, http: aiohttp.ClientSession
) -> None:
    clock, lease = FakeClock(), unique_name("lease")
    a = operator(client, clock, lease=lease, namespace=ns, identity="a")
    async with running(a):
        await eventually(lambda: a.manager.is_leader)
        b = operator(client, clock, lease=lease, namespace=ns, identity="b")
        everywhere = Work(clock)
        b.manager.add_runnable("everywhere", everywhere, needs_leader_election=False)
        async with running(b):
            await eventually(lambda: b.elector_state is LeaderState.STANDBY)
            for op in (a, b):  # both are ready: one leads, the other knows it stands by
                assert await get(http, op.manager.probe_address, "/readyz") == (200, "ok")
            assert a.work.started == [0.0]
            assert b.work.started == []  # leader-only work waits for leadership...
            assert everywhere.started == [0.0]  # ...the rest runs on standbys too

            a.manager.stop()
            await eventually(lambda: a.task is not None and a.task.done())
            assert ended_with(a) is None  # a clean stop returns normally
            assert a.work.stopped == [0.0]
            spec = await spec_of(client, lease, ns)
            assert spec["holderIdentity"] == ""  # released, after the leader-only work stopped
            assert spec["leaseDurationSeconds"] == 1

            await clock.advance(2.0)  # b's next attempt: no need to wait out the lease
            await eventually(lambda: b.manager.is_leader)
            await eventually(lambda: b.work.started == [2.0])
            assert (await spec_of(client, lease, ns))["leaseTransitions"] == 1


async def test_handover_in_real_time(ns: str, client: Client) -> None:
    # The one test on the real clock: short durations, the same handover as above.
    options: dict[str, Any] = {
        "metrics_bind_address": "0",
        "health_probe_bind_address": "127.0.0.1:0",
        "leader_election": True,
        "leader_election_id": unique_name("lease"),
        "leader_election_namespace": ns,
        "lease_duration": 2.0,
        "renew_deadline": 1.5,
        "retry_period": 0.25,
    }
    a = Manager(client, options=ManagerOptions(**options, leader_election_identity="a"))
    b = Manager(client, options=ManagerOptions(**options, leader_election_identity="b"))
    loop = asyncio.get_running_loop()
    async with asyncio.TaskGroup() as group:
        first = group.create_task(a.run())
        await eventually(lambda: a.is_leader)
        group.create_task(b.run())
        assert b.elector is not None
        elector = b.elector
        await eventually(lambda: elector.state is LeaderState.STANDBY)
        assert a.elector is not None
        renewed = a.elector.renewals
        leading = a.elector
        await eventually(lambda: leading.renewals >= renewed + 2)
        assert a.is_leader  # renewing on the real clock keeps the lease
        assert not b.is_leader
        a.stop()
        await eventually(first.done)
        released = loop.time()
        await eventually(lambda: b.is_leader)
        handover = loop.time() - released
        b.stop()
    assert handover < 2.2 * 0.25 + 0.3  # a retry period and its jitter, not a lease duration


@pytest.mark.etctl_hooks("fault injection: a release that never arrives")
async def test_a_killed_leader_is_replaced_after_the_lease_duration(
    server: ApiServer, ns: str, client: Client
) -> None:
    clock, lease = FakeClock(), unique_name("lease")
    a = operator(client, clock, lease=lease, namespace=ns, identity="a")
    b = operator(client, clock, lease=lease, namespace=ns, identity="b")
    async with running(a):
        await eventually(lambda: a.manager.is_leader)
        async with running(b):
            await eventually(lambda: b.elector_state is LeaderState.STANDBY)
            # "Kill" a: it stops, and its release never reaches the server, so the lease stays
            # held by a process that is gone.
            dead = server.faults.add(
                Fault(verb="update", resource="leases", name=lease, status=503, times=None)
            )
            a.manager.stop()
            await eventually(lambda: a.task is not None and a.task.done())
            server.faults.remove(dead)
            assert (await spec_of(client, lease, ns))["holderIdentity"] == "a"
            gets = answered(server, verb="get", name=lease)

            async def reads(count: int) -> None:
                await eventually(lambda: answered(server, verb="get", name=lease) >= count)

            for attempt in range(1, 8):  # b retries at 2 .. 14 s: a's lease is still valid
                await clock.advance(2.0)
                await reads(gets + attempt)
                assert not b.manager.is_leader
            await clock.advance(2.0)  # 16 s: 15 s after b last saw the lease change
            await eventually(lambda: b.manager.is_leader)
            await eventually(lambda: b.work.started == [16.0])
            spec = await spec_of(client, lease, ns)
            assert spec["holderIdentity"] == "b"
            assert spec["leaseTransitions"] == 1


@pytest.mark.etctl_hooks("fault injection: hanging renews")
async def test_a_hung_renew_fences_leader_work_before_anyone_else_can_lead(
    server: ApiServer, ns: str, client: Client
) -> None:
    clock, lease = FakeClock(), unique_name("lease")
    in_flight: list[float] = []
    cancelled: list[float] = []

    async def reconcile(request: Request) -> Result:
        in_flight.append(clock.monotonic())
        try:
            await asyncio.get_running_loop().create_future()  # a reconcile that never ends
        finally:
            cancelled.append(clock.monotonic())
        return Result()

    a = operator(client, clock, lease=lease, namespace=ns, identity="a")
    a.manager.controller("stuck", reconcile).for_(CONFIGMAPS).build()
    b = operator(client, clock, lease=lease, namespace=ns, identity="b")
    await client.create(CONFIGMAPS, configmap("held", ns))
    async with running(a):
        await eventually(lambda: a.manager.is_leader and bool(in_flight))
        async with running(b):
            await eventually(lambda: b.elector_state is LeaderState.STANDBY)
            # Every renew from now on hangs: the server takes the request and never answers.
            hang = server.faults.add(
                Fault(verb="update", resource="leases", name=lease, delay=3600, times=2)
            )
            # Each step waits for the reads it causes (b polls every 2 s, a reads once on its slow
            # path), so that both candidates act exactly on time.
            reads = answered(server, verb="get", name=lease)

            async def step(seconds: float, new_reads: int, done: Any = lambda: True) -> None:
                nonlocal reads
                await clock.advance(seconds)
                reads += new_reads
                await eventually(
                    lambda: answered(server, verb="get", name=lease) >= reads and done()
                )

            await step(2.0, 1, lambda: hang.fired == 1)  # 2 s: the fast-path renew hangs...
            await step(2.0, 1)
            await step(2.0, 1)
            await step(1.0, 1, lambda: hang.fired == 2)  # 7 s: cut; the slow-path renew hangs
            assert a.manager.is_leader
            await step(1.0, 1)
            await step(2.0, 1, lambda: a.task is not None and a.task.done())  # 10 s: deadline
            error = ended_with(a)
            assert isinstance(error, LeaderElectionLost)
            # Everything leader-only stopped at the deadline, before anyone else may lead (15 s).
            assert a.manager.elector is not None
            assert a.manager.elector.fence_deadline == 15.0
            assert a.manager.fenced_at == 10.0
            assert cancelled == [10.0]
            assert a.work.stopped == [10.0]
            await step(2.0, 1)
            await step(2.0, 1)
            assert not b.manager.is_leader  # 14 s: a's lease is still valid as far as b knows
            await step(2.0, 1, lambda: b.manager.is_leader)
            await eventually(lambda: b.work.started == [16.0])


_READS = ("get", "list", "watch")


@pytest.mark.etctl_hooks("the request log says who wrote when")
async def test_a_leader_paused_past_its_lease_sends_no_write_after_it_resumes(
    server: ApiServer, ns: str, client: Client, tmp_path: Path
) -> None:
    """SIGSTOP right after a renew, SIGCONT 16 s later: reconciles woken on resume are fenced."""
    clock, lease = FakeClock(), unique_name("lease")
    beat = unique_name("beat")
    clients: dict[str, Client] = {}

    def beating(op: str) -> Any:
        async def reconcile(request: Request) -> Result:
            # A leader-only write every 1.5 s of the clock, recording who wrote it and when, to
            # another object (so that the write wakes nothing).
            if request.name != beat:
                return Result()
            stamp = {"metadata": {"annotations": {"by": op, "at": str(clock.monotonic())}}}
            await clients[op].patch(CONFIGMAPS, f"{beat}-out", stamp, namespace=ns)
            return Result(requeue_after=1.5)

        return reconcile

    def beats_of_a() -> list[Any]:
        return [r for r in server.requests if r.user_agent == "replica-a" and r.verb == "patch"]

    async with client_of(server, tmp_path, user_agent="replica-a") as client_a:
        clients.update(a=client_a, b=client)
        a = operator(client_a, clock, lease=lease, namespace=ns, identity="a")
        a.manager.controller("beat", beating("a")).for_(CONFIGMAPS).build()
        b = operator(client, clock, lease=lease, namespace=ns, identity="b")
        b.manager.controller("beat", beating("b")).for_(CONFIGMAPS).build()
        await client.create(CONFIGMAPS, configmap(f"{beat}-out", ns))
        await client.create(CONFIGMAPS, configmap(beat, ns))
        real = client_a.replace
        resumed: list[int] = []  # the request log's length when the process resumed
        armed: list[bool] = []

        async def replace(res: Any, obj: Any, **options: Any) -> Any:
            written = await real(res, obj, **options)
            if res == LEASES and armed and not resumed:
                clock.jump(16.0)  # stopped just after the renew's answer arrived, for 16 s
                resumed.append(len(server.requests))
            return written

        client_a.replace = replace  # type: ignore[method-assign]
        async with running(a):
            await eventually(lambda: a.manager.is_leader and a.work.started == [0.0])
            async with running(b):
                await eventually(lambda: b.elector_state is LeaderState.STANDBY)
                await clock.advance(1.5)  # a's second write, answered before the pause
                await eventually(lambda: [r.code for r in beats_of_a()] == [200, 200])
                armed.append(True)
                await clock.advance(0.5)  # a renews at 2 s, then the pause; a resumes at 18 s
                await eventually(lambda: bool(resumed) and a.task is not None and a.task.done())
                assert isinstance(ended_with(a), LeaderElectionLost)
                assert a.manager.fenced_at == 18.0
                for _ in range(12):  # b takes over 15 s after it last saw a renew
                    if b.manager.is_leader:
                        break
                    await clock.advance(2.0)
                    await asyncio.sleep(0.05)
                await eventually(lambda: b.manager.is_leader)
                await eventually(
                    lambda: any(
                        r.verb == "patch" and r.user_agent != "replica-a"
                        for r in list(server.requests)[resumed[0] :]
                    )
                )
    # Everything a sent was sent before the pause: its beats at 0 and 1.5 s, the renew at 2 s;
    # after it, not one write (no beat, no Event, no release of the lease).
    assert len(beats_of_a()) == 2
    after = list(server.requests)[resumed[0] :]
    assert [r for r in after if r.user_agent == "replica-a" and r.verb not in _READS] == []


# -- graceful shutdown


async def test_graceful_shutdown_lets_the_reconcile_in_flight_finish(
    ns: str, client: Client
) -> None:
    clock, lease = FakeClock(), unique_name("lease")
    started: list[str] = []
    finished: list[str] = []
    proceed = asyncio.Event()
    op = operator(client, clock, lease=lease, namespace=ns)
    events = op.manager.recorder("graceful-test")

    async def reconcile(request: Request) -> Result:
        started.append(request.name)
        await proceed.wait()
        obj = op.manager.cache.get(CONFIGMAPS, request.name, namespace=request.namespace)
        assert obj is not None
        events.event(obj, "Normal", "Reconciled", f"{request.name} reconciled")
        finished.append(request.name)
        return Result()

    # The test's own ConfigMaps only: every namespace also holds kube-root-ca.crt.
    mine = "metadata.name!=kube-root-ca.crt"
    controller = (
        op.manager.controller("graceful", reconcile).for_(CONFIGMAPS, field_selector=mine).build()
    )
    await client.create(CONFIGMAPS, configmap("first", ns))
    async with running(op):
        await eventually(lambda: started == ["first"])
        await client.create(CONFIGMAPS, configmap("second", ns))
        # Queued behind the busy worker, whenever its watch event comes (as late as it may).
        await eventually(
            lambda: (
                op.manager.cache.get(CONFIGMAPS, "second", namespace=ns) is not None
                and controller.queue.depth == 1
            )
        )
        op.manager.stop()
        await clock.advance(5.0)  # well inside the 30 s grace period
        assert op.task is not None
        assert not op.task.done()
        assert (await spec_of(client, lease, ns))["holderIdentity"] == "a"  # still renewed
        proceed.set()
        await eventually(op.task.done)
    assert ended_with(op) is None
    assert started == ["first"]  # nothing started after the stop
    assert finished == ["first"]
    assert (await spec_of(client, lease, ns))["holderIdentity"] == ""  # released last
    recorded = await client.list(EVENTS, namespace=ns)
    assert [e["message"] for e in recorded.items if e["reason"] == "Reconciled"] == [
        "first reconciled"
    ]


async def test_cancelling_run_stops_everything_and_releases_the_lease(
    ns: str, client: Client
) -> None:
    clock, lease = FakeClock(), unique_name("lease")
    op = operator(client, clock, lease=lease, namespace=ns)
    async with asyncio.TaskGroup() as group:
        task = group.create_task(op.manager.run())
        await eventually(lambda: op.work.started == [0.0])
        task.cancel()
        await eventually(task.done)
    assert task.cancelled()
    assert op.work.stopped == [0.0]
    assert (await spec_of(client, lease, ns))["holderIdentity"] == ""


async def test_the_grace_period_bounds_the_shutdown(ns: str, client: Client) -> None:
    clock = FakeClock()
    cancelled: list[float] = []

    async def reconcile(request: Request) -> Result:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            cancelled.append(clock.monotonic())
        return Result()

    op = operator(client, clock, lease=None, graceful_shutdown_timeout=10.0)
    op.manager.controller("slow", reconcile).for_(CONFIGMAPS).build()
    await client.create(CONFIGMAPS, configmap("forever", ns))
    async with running(op):
        await eventually(lambda: op.work.started == [0.0] and clock.sleepers > 0)
        op.manager.stop()
        await eventually(lambda: op.work.stopped == [0.0])
        await clock.advance(9.5)
        assert cancelled == []
        await clock.advance(0.5)
        assert op.task is not None
        await eventually(op.task.done)
    # The reconcile was cancelled: the shutdown is reported incomplete, not as a clean stop.
    error = ended_with(op)
    assert isinstance(error, ShutdownIncomplete)
    assert "1 reconcile(s) cancelled past the grace period" in str(error)
    assert cancelled == [10.0]


async def test_signals_stop_gracefully_and_a_second_one_skips_the_grace(
    ns: str, client: Client
) -> None:
    clock = FakeClock()
    in_flight: list[float] = []
    cancelled: list[float] = []

    async def reconcile(request: Request) -> Result:
        in_flight.append(clock.monotonic())
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            cancelled.append(clock.monotonic())
        return Result()

    op = operator(client, clock, lease=None)
    op.manager.controller("sig", reconcile).for_(CONFIGMAPS).build()
    await client.create(CONFIGMAPS, configmap("sig", ns))
    task = asyncio.create_task(op.manager.run(handle_signals=True))
    await eventually(lambda: op.work.started == [0.0] and in_flight == [0.0])
    os.kill(os.getpid(), signal.SIGTERM)
    await eventually(lambda: op.work.stopped == [0.0])  # leader-only work stops first...
    assert not task.done()  # ...while the reconcile gets its grace period
    os.kill(os.getpid(), signal.SIGINT)
    # The second signal cut the reconcile short: an incomplete shutdown, not a clean one.
    with pytest.raises(ShutdownIncomplete, match="cancelled"):
        await asyncio.wait_for(task, timeout=10)
    assert cancelled == [0.0]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handlers removed


# -- failures


@pytest.mark.etctl_hooks("fault injection: a 403 on list")
async def test_a_cache_that_cannot_sync_fails_run_and_is_never_ready(
    server: ApiServer, ns: str, client: Client, http: aiohttp.ClientSession
) -> None:
    clock = FakeClock()
    server.faults.add(Fault(verb="list", resource="configmaps", status=403, times=None))
    op = operator(client, clock, lease=unique_name("lease"), namespace=ns)

    async def reconcile(request: Request) -> Result:
        return Result()

    op.manager.controller("forbidden", reconcile).for_(CONFIGMAPS).build()
    async with running(op):
        await eventually(lambda: op.manager.probe_address is not None)
        await eventually(lambda: answered(server, verb="list", resource="configmaps") > 0)
        status, body = await get(http, op.manager.probe_address, "/readyz")
        assert status == 500
        assert "[-]cache-sync failed: reason withheld" in body
        assert "[-]leader-election failed: reason withheld" in body  # not even trying yet
        assert (await get(http, op.manager.probe_address, "/healthz"))[0] == 200
        for _ in range(12):
            await clock.advance(10.0)
        assert op.task is not None
        await eventually(op.task.done)
    error = ended_with(op)
    assert isinstance(error, CacheSyncError)
    assert "configmaps" in str(error)
    assert "403" in str(error)
    assert op.work.started == []
    assert answered(server, verb="create", resource="leases") == 0  # never ran for leadership


async def test_a_failing_runnable_stops_the_manager_with_its_error(ns: str, client: Client) -> None:
    clock = FakeClock()
    op = operator(client, clock, lease=None)

    async def broken() -> None:
        msg = "the runnable broke"
        raise RuntimeError(msg)

    op.manager.add_runnable("broken", broken, needs_leader_election=False)
    async with running(op):
        assert op.task is not None
        await eventually(op.task.done)
    error = ended_with(op)
    assert isinstance(error, RuntimeError)
    assert str(error) == "the runnable broke"
    assert op.work.stopped == op.work.started  # whatever started has stopped


# -- probes and metrics


async def test_probes_follow_sync_and_election(
    ns: str, client: Client, http: aiohttp.ClientSession
) -> None:
    clock = FakeClock()
    op = operator(client, clock, lease=unique_name("lease"), namespace=ns)
    op.manager.add_ready_check("custom", lambda: None)
    op.manager.add_health_check("custom-live", lambda: "always failing")
    async with running(op):
        await eventually(lambda: op.manager.is_leader)
        probes = op.manager.probe_address
        assert await get(http, probes, "/readyz") == (200, "ok")
        assert await get(http, probes, "/readyz?verbose") == (
            200,
            "[+]cache-sync ok\n[+]custom ok\n[+]leader-election ok\nhealthz check passed\n",
        )
        assert await get(http, probes, "/readyz/leader-election") == (200, "ok")
        assert await get(http, probes, "/readyz/cache-sync") == (200, "ok")
        status, body = await get(http, probes, "/healthz")
        assert status == 500
        assert body == (
            "[-]custom-live failed: reason withheld\n"
            "[+]leader-election ok\n"
            "[+]ping ok\n"
            "healthz check failed\n"
        )
        assert await get(http, probes, "/healthz/custom-live") == (
            500,
            "internal server error: always failing\n",
        )
        assert await get(http, probes, "/healthz?exclude=custom-live") == (200, "ok")
        assert (await get(http, probes, "/healthz/nope"))[0] == 404


def sample_names(exposition: str) -> dict[str, list[dict[str, str]]]:
    series: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            series.setdefault(sample.name, []).append(dict(sample.labels))
    return series


# controller-runtime's metric names (and client-go's, as controller-runtime registers them).
GOLDEN = (
    "controller_runtime_active_workers",
    "controller_runtime_max_concurrent_reconciles",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_panics_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "controller_runtime_reconcile_time_seconds_count",
    "controller_runtime_reconcile_time_seconds_sum",
    "controller_runtime_reconcile_timeouts_total",
    "controller_runtime_reconcile_total",
    "controller_runtime_terminal_reconcile_errors_total",
    "leader_election_master_status",
    "leader_election_slowpath_total",
    "rest_client_requests_total",
    "workqueue_adds_total",
    "workqueue_depth",
    "workqueue_longest_running_processor_seconds",
    "workqueue_queue_duration_seconds_bucket",
    "workqueue_queue_duration_seconds_count",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "workqueue_work_duration_seconds_bucket",
    "workqueue_work_duration_seconds_count",
)


async def test_metrics_expose_controller_runtime_names_with_zero_series(
    ns: str, client: Client, http: aiohttp.ClientSession
) -> None:
    clock, lease = FakeClock(), unique_name("lease")
    name = unique_name("golden")
    op = operator(client, clock, lease=lease, namespace=ns)

    async def reconcile(request: Request) -> Result:
        return Result()

    op.manager.controller(name, reconcile).for_(CONFIGMAPS).build()
    async with running(op):
        await eventually(lambda: op.manager.is_leader)
        status, body = await get(http, op.manager.metrics_address, "/metrics")
    assert status == 200
    series = sample_names(body)
    missing = [metric for metric in GOLDEN if metric not in series]
    assert missing == []
    results = {
        labels["result"]
        for labels in series["controller_runtime_reconcile_total"]
        if labels["controller"] == name
    }
    assert results == {"success", "error", "requeue", "requeue_after"}
    for metric in (
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_active_workers",
        "controller_runtime_max_concurrent_reconciles",
    ):
        assert {"controller": name} in series[metric], metric
    assert {"name": lease} in series["leader_election_master_status"]
    assert {"name": lease} in series["leader_election_slowpath_total"]
    assert f'leader_election_master_status{{name="{lease}"}} 1.0' in body
    assert f'leader_election_slowpath_total{{name="{lease}"}} 0.0' in body


# -- setup rules


@pytest.mark.etctl_hooks("the request log paces the event's creation")
async def test_names_are_unique_and_setup_ends_at_start(
    server: ApiServer, ns: str, client: Client
) -> None:
    clock = FakeClock()
    op = operator(client, clock, lease=None)

    async def reconcile(request: Request) -> Result:
        return Result()

    async def idle() -> None:
        await asyncio.get_running_loop().create_future()

    controller = op.manager.controller("c", reconcile).for_(CONFIGMAPS).build()
    assert op.manager.controllers == (controller,)
    assert not running_now(op)
    await client.create(CONFIGMAPS, configmap("late-event", ns))
    with pytest.raises(ValueError, match="unique"):
        op.manager.controller("c", reconcile).for_(CONFIGMAPS).build()
    with pytest.raises(ValueError, match="unique"):
        op.manager.add_runnable("c", idle, needs_leader_election=False)
    assert op.manager.recorder("x") is op.manager.recorder("x")
    async with running(op):
        await eventually(lambda: op.work.started == [0.0])
        assert running_now(op)
        with pytest.raises(RuntimeError, match="started"):
            op.manager.add_runnable("late", idle, needs_leader_election=False)
        with pytest.raises(RuntimeError, match="runs once"):
            await op.manager.run()
        late = op.manager.recorder("late-component")  # recorders may come later: sent too
        obj = op.manager.cache.get(CONFIGMAPS, "late-event", namespace=ns)
        assert obj is not None
        late.event(obj, "Normal", "Late", "recorded after start")
        await eventually(lambda: answered(server, verb="create", resource="events") == 1)
    assert not running_now(op)
    recorded = await client.list(EVENTS, namespace=ns)
    assert [e["message"] for e in recorded.items] == ["recorded after start"]


async def test_wait_started_returns_once_caches_synced_and_work_runs(
    ns: str, client: Client
) -> None:
    clock = FakeClock()
    op = operator(client, clock, lease=None)
    seen: list[str] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request.name)
        return Result()

    op.manager.controller("started", reconcile).for_(CONFIGMAPS).build()
    await client.create(CONFIGMAPS, configmap("before-start", ns))
    async with running(op):
        await asyncio.wait_for(op.manager.wait_started(), timeout=30)
        assert op.manager.cache.has_synced()
        assert op.manager.running
        # Called again (or late), it returns at once.
        await asyncio.wait_for(op.manager.wait_started(), timeout=1)
        await eventually(lambda: "before-start" in seen)


@pytest.mark.etctl_hooks("fault injection: a 403 on list")
async def test_wait_started_raises_what_stopped_the_start(
    server: ApiServer, client: Client
) -> None:
    clock = FakeClock()
    server.faults.add(Fault(verb="list", resource="configmaps", status=403, times=None))
    op = operator(client, clock, lease=None, cache_sync_timeout=5.0)

    async def reconcile(request: Request) -> Result:
        return Result()

    op.manager.controller("never-synced", reconcile).for_(CONFIGMAPS).build()
    async with running(op):
        waiting = asyncio.ensure_future(op.manager.wait_started())
        await eventually(lambda: answered(server, verb="list", resource="configmaps") > 0)
        await clock.advance(10.0)
        with pytest.raises(CacheSyncError, match="configmaps"):
            await asyncio.wait_for(waiting, timeout=30)


async def test_a_default_manager_claims_no_port(client: Client) -> None:
    manager = Manager(client, options=ManagerOptions(), clock=FakeClock())
    async with asyncio.TaskGroup() as group:
        task = group.create_task(manager.run(), name="manager")
        await asyncio.wait_for(manager.wait_started(), timeout=30)
        assert manager.metrics_address is None
        assert manager.probe_address is None
        manager.stop()
    assert task.done()
