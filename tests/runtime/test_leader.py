"""Leader election against the cluster under test, in virtual time."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from etctl.errors import LeaderElectionLost
from etctl.runtime import EVENTS, LEASES, Client, Clock, FakeClock, objects
from etctl.runtime._leader import (
    LeaderElectionConfig,
    LeaderElector,
    LeaderState,
    micro_time,
)
from etctl.runtime._recorder import ClientEventSink, EventRecorder
from etctl.testing import ApiServer, ClusterTarget, Fault, cluster_target, eventually
from tests.runtime._fakes import sample, unique_name
from tests.runtime._realtime import NoJitter, SkewedClock, answered, client_of

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest_asyncio.fixture
async def target(tmp_path: Path) -> AsyncIterator[ClusterTarget]:
    async with cluster_target(tmp_path) as found:
        yield found


@pytest_asyncio.fixture
async def client(target: ClusterTarget) -> AsyncIterator[Client]:
    async with client_of(target) as api:
        yield api


class Election:
    """Candidates for one fresh Lease on a shared virtual clock (the candidates' clock).

    The cluster only stores the Lease: every time in it comes from the candidates, so elections
    run in virtual time on a real cluster too.
    """

    def __init__(self, target: ClusterTarget, client: Client) -> None:
        self.target = target
        self.ns = target.namespace
        self.client = client
        self.clock = FakeClock()
        self.lease = unique_name("lease")

    def candidate(
        self, identity: str, *, clock: Clock | None = None, **options: Any
    ) -> LeaderElector:
        config = LeaderElectionConfig(
            name=self.lease, namespace=self.ns, identity=identity, **options
        )
        return LeaderElector(self.client, config, clock=clock or self.clock, rng=NoJitter())

    async def spec(self) -> dict[str, Any]:
        lease = await self.client.get(LEASES, self.lease, namespace=self.ns)
        spec: dict[str, Any] = lease["spec"]
        return spec

    @property
    def server(self) -> ApiServer:
        """The embedded server's hooks."""
        return self.target.hooks

    def answered(self, verb: str) -> int:
        return answered(self.server, verb=verb, name=self.lease)

    async def step(self, seconds: float, condition: Any = None) -> None:
        """Advance the clock, then wait for ``condition`` (what the step triggers) to hold."""
        await self.clock.advance(seconds)
        if condition is not None:
            await eventually(condition)

    def status(self) -> float:
        return sample("leader_election_master_status", name=self.lease)

    def slowpath(self) -> float:
        return sample("leader_election_slowpath_total", name=self.lease)


@pytest.fixture
def election(target: ClusterTarget, client: Client) -> Election:
    return Election(target, client)


async def test_the_first_candidate_creates_the_lease_and_leads(election: Election) -> None:
    a = election.candidate("a")
    assert a.state is LeaderState.UNKNOWN
    assert election.status() == 0
    await a.acquire()
    assert a.is_leader
    assert a.leader == "a"
    assert election.status() == 1
    spec = await election.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"] == "2026-01-01T00:00:00.000000Z"
    assert MICRO_TIME.match(micro_time(election.clock.now()))
    assert a.renewed_at == 0.0
    assert a.fence_deadline == 15.0


async def test_candidates_racing_for_a_missing_lease_elect_exactly_one(election: Election) -> None:
    candidates = [election.candidate(f"c{i}") for i in range(3)]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(c.acquire()) for c in candidates]
        await eventually(lambda: sum(c.is_leader for c in candidates) == 1)
        await eventually(lambda: all(c.state is not LeaderState.UNKNOWN for c in candidates))
        leader = next(c for c in candidates if c.is_leader)
        assert all(c.state is LeaderState.STANDBY for c in candidates if c is not leader)
        assert (await election.spec())["holderIdentity"] == leader.identity
        for task in tasks:
            task.cancel()


async def test_the_leader_renews_on_the_fast_path(election: Election) -> None:
    a = election.candidate("a")
    await a.acquire()
    gets = election.answered("get") if election.target.embedded else 0
    async with asyncio.TaskGroup() as group:
        holding = group.create_task(a.hold())
        for second in (2, 4, 6):
            await election.step(2, lambda n=second // 2 + 1: a.renewals == n)
            spec = await election.spec()
            assert spec["renewTime"] == f"2026-01-01T00:00:0{second}.000000Z"
            assert spec["acquireTime"] == "2026-01-01T00:00:00.000000Z"
            assert spec["leaseTransitions"] == 0
        holding.cancel()
    if election.target.embedded:  # the server's request log
        assert election.answered("get") == gets + 3  # the test's own reads: renewals never read
        assert election.answered("update") == 3
    assert election.slowpath() == 0
    assert a.fence_deadline == 6.0 + 15.0


@pytest.mark.etctl_hooks("fault injection: a 409 on update")
async def test_a_conflict_on_renew_takes_the_slow_path_and_counts_it(election: Election) -> None:
    a = election.candidate("a")
    await a.acquire()
    conflict = election.server.faults.add(Fault(verb="update", resource="leases", status=409))
    async with asyncio.TaskGroup() as group:
        holding = group.create_task(a.hold())
        await election.step(2, lambda: a.renewals == 2)
        holding.cancel()
    assert conflict.fired == 1
    assert election.slowpath() == 1
    assert a.is_leader
    spec = await election.spec()
    assert spec["renewTime"] == "2026-01-01T00:00:02.000000Z"
    assert spec["leaseTransitions"] == 0


@pytest.mark.etctl_hooks("the request log paces the standby's attempts")
async def test_a_standby_takes_over_only_after_the_lease_duration(election: Election) -> None:
    a, b = election.candidate("a"), election.candidate("b")
    await a.acquire()  # and is never heard of again (killed without releasing)
    async with asyncio.TaskGroup() as group:
        group.create_task(b.acquire())
        await eventually(lambda: b.state is LeaderState.STANDBY)
        assert b.leader == "a"
        assert a.is_leader
        gets = election.answered("get")
        for attempt in range(1, 8):  # attempts at 2 .. 14 s: a's lease is still valid
            await election.step(2, lambda n=attempt: election.answered("get") == gets + n)
            assert b.state is LeaderState.STANDBY
        await election.step(2, lambda: b.is_leader)  # the attempt at 16 s, past 0 + 15
    spec = await election.spec()
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == "2026-01-01T00:00:16.000000Z"


async def test_a_released_lease_is_taken_over_within_a_retry_period(election: Election) -> None:
    a, b = election.candidate("a"), election.candidate("b")
    await a.acquire()
    async with asyncio.TaskGroup() as group:
        group.create_task(b.acquire())
        await eventually(lambda: b.state is LeaderState.STANDBY)
        assert await a.release()
        assert a.state is LeaderState.RELEASED
        assert not a.is_leader
        spec = await election.spec()
        assert spec["holderIdentity"] == ""
        assert spec["leaseDurationSeconds"] == 1
        await election.step(2, lambda: b.is_leader)  # b's very next attempt
    assert (await election.spec())["leaseTransitions"] == 1
    assert election.clock.monotonic() == 2.0


async def test_release_recovers_from_a_stale_cached_lease(election: Election) -> None:
    a = election.candidate("a")
    await a.acquire()
    # Someone touches the lease (a renew whose answer was lost looks the same): the cached copy's
    # resourceVersion is stale, and the release must still go through.
    await election.client.patch(
        LEASES, election.lease, {"metadata": {"labels": {"touched": "yes"}}}, namespace=election.ns
    )
    assert await a.release()
    spec = await election.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1


async def test_release_is_a_no_op_for_a_standby(election: Election) -> None:
    a, b = election.candidate("a"), election.candidate("b")
    await a.acquire()
    async with asyncio.TaskGroup() as group:
        task = group.create_task(b.acquire())
        await eventually(lambda: b.state is LeaderState.STANDBY)
        task.cancel()
    assert await b.release()
    assert (await election.spec())["holderIdentity"] == "a"


@pytest.mark.etctl_hooks("fault injection: hanging updates")
async def test_a_hung_renew_loses_leadership_at_the_renew_deadline(election: Election) -> None:
    a = election.candidate("a")
    await a.acquire()
    # Every update now hangs: the server holds the request and never answers.
    hang = election.server.faults.add(
        Fault(verb="update", resource="leases", delay=3600, times=None)
    )
    lost_at: list[float] = []

    async def hold() -> None:
        with pytest.raises(LeaderElectionLost):
            await a.hold()
        lost_at.append(election.clock.monotonic())

    async with asyncio.TaskGroup() as group:
        holding = group.create_task(hold())
        await election.step(2, lambda: hang.fired == 1)  # the fast-path renew hangs...
        await election.step(5, lambda: hang.fired == 2)  # ...is cut at 5 s; slow path hangs too
        assert a.is_leader
        await election.step(3, holding.done)  # cut at the deadline: 0 + 10 s
    assert lost_at == [10.0]
    assert a.fence_deadline == 15.0
    assert lost_at[0] < a.fence_deadline
    assert a.state is LeaderState.LOST
    assert election.status() == 0


async def test_seeing_another_holder_loses_leadership_at_once(election: Election) -> None:
    a = election.candidate("a")
    await a.acquire()
    lease = await election.client.get(LEASES, election.lease, namespace=election.ns)
    usurped = {**lease, "spec": {**lease["spec"], "holderIdentity": "usurper"}}
    await election.client.replace(LEASES, usurped)

    async def hold() -> None:
        with pytest.raises(LeaderElectionLost, match="held by usurper"):
            await a.hold()

    async with asyncio.TaskGroup() as group:
        holding = group.create_task(hold())
        await election.step(2, holding.done)
    assert election.clock.monotonic() == 2.0


async def test_a_wall_clock_jump_changes_nothing(election: Election) -> None:
    # The leader's wall clock runs an hour behind, the standby's an hour ahead: lease timestamps
    # look expired to one and from the future to the other, and neither may care.
    a = election.candidate("a", clock=SkewedClock(election.clock, timedelta(hours=-1)))
    b = election.candidate("b", clock=SkewedClock(election.clock, timedelta(hours=1)))
    await a.acquire()
    async with asyncio.TaskGroup() as group:
        holding = group.create_task(a.hold())
        standby = group.create_task(b.acquire())
        await eventually(lambda: b.state is LeaderState.STANDBY)
        for step in range(1, 16):  # 30 s: twice the lease duration
            await election.step(2, lambda n=step: a.renewals == n + 1)
            assert a.is_leader
            assert b.state is LeaderState.STANDBY
        assert not holding.done()
        spec = await election.spec()
        assert spec["renewTime"] == "2025-12-31T23:00:30.000000Z"
        standby.cancel()
        holding.cancel()


async def test_liveness_fails_when_the_leader_stops_renewing(election: Election) -> None:
    a = election.candidate("a", liveness_tolerance=20.0)
    assert a.check() is None
    await a.acquire()
    await election.clock.advance(35.0)  # lease duration + tolerance, exactly
    assert a.check() is None
    await election.clock.advance(0.5)
    reason = a.check()
    assert reason is not None
    assert "has not renewed" in reason


async def test_leadership_changes_are_recorded_as_events_on_the_lease(election: Election) -> None:
    recorder = EventRecorder(
        ClientEventSink(election.client), component="etctl-test", clock=election.clock
    )
    config = LeaderElectionConfig(name=election.lease, namespace=election.ns, identity="a")
    a = LeaderElector(election.client, config, clock=election.clock, recorder=recorder)
    await a.acquire()
    await a.release()
    async with asyncio.TaskGroup() as group:
        sending = group.create_task(recorder.run())
        await recorder.flush()
        sending.cancel()
    events = await election.client.list(EVENTS, namespace=election.ns)
    mine = [e for e in events.items if e["involvedObject"].get("name") == election.lease]
    assert sorted(e["message"] for e in mine) == ["a became leader", "a stopped leading"]
    assert {e["involvedObject"]["kind"] for e in mine} == {"Lease"}
    assert {e["reason"] for e in mine} == {"LeaderElection"}
    assert all(objects.namespace(e) == election.ns for e in mine)


def pause_after_answer(election: Election, seconds: float) -> list[float]:
    """Stop the process for ``seconds`` right after the next lease update's answer arrives.

    The answer is in, its request was sent before the pause: what SIGSTOP just after a renew
    looks like once SIGCONT comes. Returns the list the pause's end time is appended to.
    """
    real = election.client.replace
    resumed: list[float] = []

    async def replace(res: Any, obj: Any, **options: Any) -> Any:
        written = await real(res, obj, **options)
        if res == LEASES and not resumed:
            election.clock.jump(seconds)
            resumed.append(election.clock.monotonic())
        return written

    election.client.replace = replace  # type: ignore[method-assign]
    return resumed


async def test_a_renew_answered_after_a_pause_loses_leadership_at_once(
    election: Election,
) -> None:
    a = election.candidate("a")
    await a.acquire()
    resumed = pause_after_answer(election, 12)
    lost_at: list[float] = []

    async def hold() -> None:
        with pytest.raises(LeaderElectionLost, match="deadline passed"):
            await a.hold()
        lost_at.append(election.clock.monotonic())

    async with asyncio.TaskGroup() as group:
        holding = group.create_task(hold())
        await election.step(2, lambda: bool(resumed))  # renew sent at 2 s; answered at 14 s
        # The renew succeeded, but only up to 2 + 10 s: leadership is lost now, without waiting
        # for another retry period, and the fence lapsed before hold() even looked.
        await eventually(holding.done)
    assert resumed == [14.0]
    assert lost_at == [14.0]
    assert a.renewed_at == 2.0
    assert a.renew_deadline_at == 12.0
    assert a.state is LeaderState.LOST
    reason = a.lapsed()
    assert reason is not None
    assert "does not lead" in reason


async def test_the_fence_lapses_at_the_renew_deadline_on_the_clock_alone(
    election: Election,
) -> None:
    a = election.candidate("a")
    assert a.lapsed() is not None  # not leading yet
    await a.acquire()
    assert a.lapsed() is None
    await election.clock.advance(9.9)
    assert a.lapsed() is None
    await election.clock.advance(0.1)  # nobody renewed: 0 + 10 s
    reason = a.lapsed()
    assert reason is not None
    assert "succeeded within 10s" in reason
    assert a.is_leader  # hold() is not running: the fence does not wait for it


@pytest.mark.etctl_hooks("fault injection: refused renews")
async def test_a_failing_leader_loses_at_the_deadline_not_a_retry_period_later(
    election: Election,
) -> None:
    a = election.candidate("a", renew_deadline=9.0)
    await a.acquire()
    # Every renew is refused at once (503): the attempts at 2, 4, 6 and 8 s fail; the deadline is
    # 9 s, between two retry periods.
    election.server.faults.add(Fault(verb="update", resource="leases", status=503, times=None))
    election.server.faults.add(Fault(verb="get", resource="leases", status=503, times=None))
    lost_at: list[float] = []

    async def hold() -> None:
        with pytest.raises(LeaderElectionLost):
            await a.hold()
        lost_at.append(election.clock.monotonic())

    async with asyncio.TaskGroup() as group:
        holding = group.create_task(hold())
        for _ in range(4):
            await election.step(2)
            await asyncio.sleep(0.05)  # let the refused attempt finish
        assert not holding.done()
        await election.step(1, holding.done)
    assert lost_at == [9.0]
