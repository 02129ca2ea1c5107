"""Leader election on a ``coordination.k8s.io/v1`` Lease: client-go's algorithm, gaps closed.

Candidates share one Lease. The holder renews it every ``retry_period``; the others read it and take
it over once it has not changed for ``lease_duration``. What this module guarantees:

* **Local time only.** Every expiry is computed from *when this process observed* the record change,
  on the monotonic clock; the timestamps written into the Lease are informational. A wall-clock jump
  (NTP step, a VM resumed) changes nothing.
* **Fast path, then slow path.** The leader renews with a replace of its cached Lease, guarded by
  its ``resourceVersion``; when that fails (a 409, a lost answer) it reads the Lease and renews from
  the fresh copy, counted in ``leader_election_slowpath_total``.
* **Bounded requests.** Every request has a hard timeout of at most ``renew_deadline / 2`` (its
  retries included), and a renew is cut at the renew deadline, so one hung connection cannot keep
  a leader believing in a lease that others already consider expired.
* **Loss.** Leadership is lost when no renew succeeded within ``renew_deadline`` of the last one
  that did (measured from when that request was *sent*: a renew whose answer arrives after a pause
  extends nothing past its send time plus ``renew_deadline``), or as soon as another holder is
  seen. :meth:`LeaderElector.hold` wakes at that deadline (it never sleeps past it) and then raises
  :class:`~etctl.errors.LeaderElectionLost`. Other candidates cannot take over before
  :attr:`LeaderElector.fence_deadline` (``lease_duration`` after that same send time), which leaves
  ``lease_duration - renew_deadline`` for the caller to stop every leader-only task.
* **Fence.** :meth:`LeaderElector.lapsed` says, from the clock alone, whether that deadline has
  passed; it is the :class:`~etctl.runtime._fence.Fence` every leader-only write and exec checks
  before it is sent (:mod:`etctl.runtime._fence`), so a process that resumes after a pause sends
  nothing as a leader, whatever runs first on its event loop. A lost leadership is logged, not
  recorded as an Event: the process may no longer write.
* **Release.** :meth:`LeaderElector.release` clears the holder and sets ``leaseDurationSeconds`` to
  1, so a successor takes over within about a retry period instead of a lease duration.
* ``leaseTransitions`` counts changes of holder; ``acquireTime`` and ``renewTime`` are written in
  the API's MicroTime format; ``leader_election_master_status`` says whether this process leads.

The configuration and the Lease record live in :mod:`etctl.runtime._lease` (re-exported here).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import NoReturn

from etctl.errors import AlreadyExists, ApiError, LeaderElectionLost, NotFound, TransportError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._client import Client
from etctl.runtime._clock import Clock
from etctl.runtime._lease import (
    JITTER_FACTOR,
    LeaderElectionConfig,
    LeaseRecord,
    default_identity,
    micro_time,
)
from etctl.runtime._objects import KubeObject
from etctl.runtime._recorder import EventRecorder
from etctl.runtime._resources import LEASES
from etctl.runtime._tasks import run_with_timeout

__all__ = [
    "JITTER_FACTOR",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaderState",
    "default_identity",
    "micro_time",
]

log = get_logger(__name__)


class LeaderState(enum.Enum):
    """Where this candidate stands."""

    UNKNOWN = "unknown"
    """No answer yet: the Lease has not been read."""
    STANDBY = "standby"
    """Another candidate holds the Lease (or just won it)."""
    LEADER = "leader"
    """This candidate holds the Lease."""
    LOST = "lost"
    """This candidate held the Lease and could not renew it."""
    RELEASED = "released"
    """This candidate held the Lease and gave it up."""


class LeaderElector:
    """One candidate for one Lease.

    Use :meth:`acquire` (returns once leading), then :meth:`hold` (renews until leadership is
    lost), and :meth:`release` after a clean stop of the leader-only work. The state is readable at
    any time (for readiness, liveness and metrics).

    Args:
        client: the API client.
        config: the Lease, identity and durations.
        clock: the time source of every observation, deadline and pause.
        recorder: records ``became leader`` / ``stopped leading`` Events on the Lease, if given.
        rng: the source of the acquire jitter.
    """

    def __init__(
        self,
        client: Client,
        config: LeaderElectionConfig,
        *,
        clock: Clock,
        recorder: EventRecorder | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._client = client
        self._clock = clock
        self._recorder = recorder
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._lease: KubeObject | None = None  # the last copy read or written
        self._observed: LeaseRecord | None = None  # the last record seen, read or written
        self._observed_at = 0.0  # monotonic: when ``_observed`` last changed
        self._renewed_sent_at: float | None = None  # monotonic: send time of our last good write
        self._state = LeaderState.UNKNOWN
        self._log = log.bind(lease=f"{config.namespace}/{config.name}", identity=config.identity)
        self._master = metrics.LEADER_ELECTION_MASTER_STATUS.labels(config.name)
        self._slowpath = metrics.LEADER_ELECTION_SLOWPATH.labels(config.name)
        self._master.set(0)
        self.renewals = 0
        """Successful writes by this candidate (acquisitions and renewals)."""

    # -- state

    @property
    def identity(self) -> str:
        """This candidate's holder identity."""
        return self.config.identity

    @property
    def state(self) -> LeaderState:
        """Where this candidate stands."""
        return self._state

    @property
    def is_leader(self) -> bool:
        """True while this candidate holds the Lease."""
        return self._state is LeaderState.LEADER

    @property
    def leader(self) -> str:
        """The holder last observed (``""`` when none or not read yet)."""
        return self._observed.holder if self._observed else ""

    @property
    def renewed_at(self) -> float | None:
        """Monotonic send time of this candidate's last successful write, if any."""
        return self._renewed_sent_at

    @property
    def fence_deadline(self) -> float | None:
        """The monotonic time before which no other candidate can take the Lease over.

        ``lease_duration`` after the send time of this candidate's last successful write: others
        start counting when they observe that write, which cannot be earlier. Leader-only work must
        have stopped by then once leadership is lost.
        """
        if self._renewed_sent_at is None:
            return None
        return self._renewed_sent_at + self.config.lease_duration

    @property
    def renew_deadline_at(self) -> float | None:
        """The monotonic time at which leadership ends unless a renew sent before it succeeds."""
        if self._renewed_sent_at is None:
            return None
        return self._renewed_sent_at + self.config.renew_deadline

    def lapsed(self) -> str | None:
        """Why leader-only work must stop now, or None while this candidate may act as leader.

        The fence of leader-only work (:mod:`etctl.runtime._fence`): it lapses when this candidate
        does not lead, or at :attr:`renew_deadline_at`, read on the clock at the moment of asking,
        so it holds even before :meth:`hold` has noticed the loss.
        """
        deadline = self.renew_deadline_at
        if self._state is not LeaderState.LEADER or deadline is None:
            return f"this process does not lead (leader election state {self._state.value})"
        late = self._clock.monotonic() - deadline
        if late >= 0:
            return (
                f"no renew of lease {self.config.namespace}/{self.config.name} succeeded within "
                f"{self.config.renew_deadline:g}s (deadline passed {late:.3f}s ago)"
            )
        return None

    def check(self) -> str | None:
        """Liveness: a reason when this process leads but has not renewed for too long, else None.

        A leader whose renewals stopped without it noticing (a wedged loop) fails once
        ``lease_duration + liveness_tolerance`` passed since its last renew, so that a liveness
        probe restarts it.
        """
        if not self.is_leader:
            return None
        age = self._clock.monotonic() - self._observed_at
        limit = self.config.lease_duration + self.config.liveness_tolerance
        if age > limit:
            return (
                f"leader of lease {self.config.namespace}/{self.config.name} has not renewed it "
                f"for {age:.1f}s (limit {limit:g}s)"
            )
        return None

    # -- the loops

    async def acquire(self) -> None:
        """Try until this candidate holds the Lease; returns once it does.

        Attempts are ``retry_period * (1 + U[0, 1.2))`` apart. Cancellation is the only way out
        without leadership.
        """
        self._log.info("attempting to acquire leader lease")
        while True:
            if await self._try_acquire_or_renew(deadline=None):
                self._became_leader()
                return
            delay = self.config.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)
            await self._clock.sleep(delay)

    async def hold(self) -> None:
        """Renew the Lease every ``retry_period`` until leadership is lost.

        The deadline is checked before every sleep and every attempt, and no sleep runs past it:
        a renew that succeeded only after its deadline (its answer read after a pause) loses
        leadership at once, and a leader whose renewals fail loses it at the deadline itself,
        not a retry period later.

        Raises:
            LeaderElectionLost: no renew succeeded within ``renew_deadline`` of the last good one,
                or another holder was observed.
            RuntimeError: called without holding the Lease.
        """
        if not self.is_leader or self._renewed_sent_at is None:
            msg = "hold() needs the lease: call acquire() first"
            raise RuntimeError(msg)
        while True:
            deadline = self._renewed_sent_at + self.config.renew_deadline
            self._check_deadline(deadline)
            await self._clock.sleep(
                min(self.config.retry_period, deadline - self._clock.monotonic())
            )
            while True:
                self._check_deadline(deadline)
                if await self._try_acquire_or_renew(deadline=deadline):
                    break
                if self._observed is not None and self._observed.holder != self.identity:
                    self._lost(f"the lease is now held by {self._observed.holder or 'nobody'}")
                remaining = deadline - self._clock.monotonic()
                await self._clock.sleep(min(self.config.retry_period, max(remaining, 0.0)))

    def _check_deadline(self, deadline: float) -> None:
        late = self._clock.monotonic() - deadline
        if late >= 0:
            self._lost(
                f"no renew succeeded within {self.config.renew_deadline:g}s "
                f"(deadline passed {late:.3f}s ago)"
            )

    async def release(self) -> bool:
        """Give the Lease up: holder cleared, ``leaseDurationSeconds`` 1.

        Call it only once leader-only work has stopped. Bounded by ``renew_deadline``.

        Returns:
            True when the Lease was released or was not ours; False when the release failed (the
            Lease then expires on its own after ``lease_duration``).
        """
        if self._state is not LeaderState.LEADER or self._observed is None:
            return True
        now = micro_time(self._clock.now())
        record = LeaseRecord(
            holder="",
            duration=1,
            acquire_time=now,
            renew_time=now,
            transitions=self._observed.transitions,
        )
        deadline = self._clock.monotonic() + self.config.renew_deadline
        try:
            try:
                await self._write(record, deadline)
            except (ApiError, TransportError):
                # The cached copy is stale (a renew whose answer was lost, say): release from a
                # fresh read, if the Lease is still ours.
                lease = await self._request(self._get, deadline, "get")
                self._lease = lease
                if LeaseRecord.of(lease).holder != self.identity:
                    self._set_state(LeaderState.RELEASED)
                    return True
                await self._write(record, deadline)
        except (ApiError, TransportError) as err:
            self._log.error("failed to release the leader lease", error=str(err))
            self._set_state(LeaderState.RELEASED)
            return False
        self._log.info("released the leader lease")
        self._event("stopped leading")
        self._set_state(LeaderState.RELEASED)
        return True

    # -- one attempt (client-go's tryAcquireOrRenew)

    async def _try_acquire_or_renew(self, *, deadline: float | None) -> bool:
        now = micro_time(self._clock.now())
        desired = LeaseRecord(
            holder=self.identity,
            duration=self.config.lease_duration_seconds,
            acquire_time=now,
            renew_time=now,
            transitions=0,
        )
        holding = self._observed is not None and self._observed.holder == self.identity
        # 1. Fast path: the leader writes over its cached copy while its lease is valid.
        if holding and self._lease is not None and self._observed is not None and self._valid():
            fast = replace(
                desired,
                acquire_time=self._observed.acquire_time,
                transitions=self._observed.transitions,
            )
            try:
                await self._write(fast, deadline)
            except (ApiError, TransportError) as err:
                self._log.info("optimistic renew failed, trying the slow path", error=str(err))
            else:
                return True
        # 2. Read the Lease, or create it.
        try:
            lease = await self._request(self._get, deadline, "get")
        except NotFound:
            return await self._create(desired, deadline)
        except (ApiError, TransportError) as err:
            self._log.warning("error retrieving the leader lease", error=str(err))
            return False
        self._lease = lease
        record = LeaseRecord.of(lease)
        self._observe(record)
        # 3. Held by someone else, and not expired by our own observation: stand by.
        holding = record.holder == self.identity
        if record.holder and not holding and self._valid():
            if self._state is LeaderState.UNKNOWN:
                self._set_state(LeaderState.STANDBY)
            return False
        # 4. Take over (or renew the slow way).
        if holding:
            desired = replace(
                desired, acquire_time=record.acquire_time, transitions=record.transitions
            )
            self._slowpath.inc()
        else:
            desired = replace(desired, transitions=record.transitions + 1)
        try:
            await self._write(desired, deadline)
        except (ApiError, TransportError) as err:
            self._log.info("failed to update the leader lease", error=str(err))
            if self._state is LeaderState.UNKNOWN:
                self._set_state(LeaderState.STANDBY)
            return False
        return True

    async def _create(self, desired: LeaseRecord, deadline: float | None) -> bool:
        lease: KubeObject = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": desired.spec(),
        }
        sent = self._clock.monotonic()
        try:
            created = await self._request(
                lambda: self._client.create(LEASES, lease), deadline, "create"
            )
        except AlreadyExists:
            # Another candidate created it first: it leads, this one stands by.
            if self._state is LeaderState.UNKNOWN:
                self._set_state(LeaderState.STANDBY)
            return False
        except (ApiError, TransportError) as err:
            self._log.warning("error creating the leader lease", error=str(err))
            return False
        self._wrote(created, desired, sent)
        return True

    async def _write(self, record: LeaseRecord, deadline: float | None) -> None:
        """Replace the cached Lease's spec with ``record`` (conditional on its resourceVersion)."""
        assert self._lease is not None
        # A shallow copy is enough: only the spec changes, and nothing mutates the cached Lease's
        # nested parts (the request body is serialised, the answer replaces the cache).
        body = {**self._lease, "spec": record.spec()}
        sent = self._clock.monotonic()
        written = await self._request(
            lambda: self._client.replace(LEASES, body), deadline, "update"
        )
        self._wrote(written, record, sent)

    def _wrote(self, lease: KubeObject, record: LeaseRecord, sent: float) -> None:
        self._lease = lease
        self._observed = record
        self._observed_at = self._clock.monotonic()
        if record.holder == self.identity:
            self._renewed_sent_at = sent
            self.renewals += 1

    async def _get(self) -> KubeObject:
        return await self._client.get(LEASES, self.config.name, namespace=self.config.namespace)

    async def _request(
        self, work: Callable[[], Awaitable[KubeObject]], deadline: float | None, verb: str
    ) -> KubeObject:
        """Run one client call under the hard timeout, cut at ``deadline`` if that comes first."""
        timeout = self.config.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - self._clock.monotonic())
        if timeout <= 0:
            msg = f"{verb} lease: the renew deadline passed"
            raise TransportError(msg)
        try:
            result: KubeObject = await run_with_timeout(
                self._clock, timeout, work, name=f"leader-election:{verb}"
            )
        except TimeoutError as err:
            msg = f"{verb} lease: no answer within {timeout:g}s"
            raise TransportError(msg) from err
        return result

    def _observe(self, record: LeaseRecord) -> None:
        if record != self._observed:
            previous = self._observed.holder if self._observed is not None else None
            if record.holder not in (previous, self.identity):
                self._log.info("observed a new leader", holder=record.holder or None)
            self._observed = record
            self._observed_at = self._clock.monotonic()

    def _valid(self) -> bool:
        """Whether the observed record has not expired, by this process's own observation."""
        if self._observed is None:
            return False
        return self._observed_at + self._observed.duration > self._clock.monotonic()

    # -- transitions

    def _became_leader(self) -> None:
        self._log.info("successfully acquired the leader lease")
        self._set_state(LeaderState.LEADER)
        self._event("became leader")

    def _lost(self, why: str) -> NoReturn:
        self._log.error("leader election lost", reason=why)
        self._set_state(LeaderState.LOST)
        # No "stopped leading" Event: another candidate may lead by now, and a deposed leader
        # writes nothing (the successor's "became leader" records the change).
        msg = f"leader election lost on lease {self.config.namespace}/{self.config.name}: {why}"
        raise LeaderElectionLost(msg)

    def _set_state(self, state: LeaderState) -> None:
        self._state = state
        self._master.set(1 if state is LeaderState.LEADER else 0)

    def _event(self, what: str) -> None:
        if self._recorder is not None and self._lease is not None:
            self._recorder.event(self._lease, "Normal", "LeaderElection", f"{self.identity} {what}")

    def __repr__(self) -> str:
        return (
            f"LeaderElector({self.config.namespace}/{self.config.name}, "
            f"identity={self.identity!r}, state={self._state.value})"
        )
