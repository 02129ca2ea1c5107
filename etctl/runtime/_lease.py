"""What a leader election writes and how it is tuned: the Lease record and the configuration.

A :class:`LeaseRecord` is the election's view of a ``coordination.k8s.io/v1`` Lease spec
(client-go's LeaderElectionRecord): holder, duration, acquire and renew times, transitions. Two
records compare equal exactly when a candidate would consider the Lease unchanged, which is what
expiry is measured from. Times are written in the API's MicroTime format and never read back for
decisions.

:class:`LeaderElectionConfig` validates client-go's constraints
(``lease_duration > renew_deadline > 1.2 * retry_period``) and the hard request timeout
(at most ``renew_deadline / 2``) when it is built, so a bad setting fails at start-up.
"""

from __future__ import annotations

import math
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from etctl.errors import ConfigError
from etctl.runtime._objects import KubeObject

__all__ = ["JITTER_FACTOR", "LeaderElectionConfig", "LeaseRecord", "default_identity", "micro_time"]

JITTER_FACTOR = 1.2
"""client-go's jitter: a candidate retries after ``retry_period * (1 + U[0, 1.2))``."""


def default_identity() -> str:
    """``<hostname>_<uuid>``: unique per process, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(moment: datetime) -> str:
    """Format an aware datetime as the API's MicroTime (``2006-01-02T15:04:05.000000Z``)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaderElectionConfig:
    """Which Lease to compete for, as whom, and how fast.

    Attributes:
        name: the Lease's name (the manager's ``leader_election_id``).
        namespace: the Lease's namespace.
        identity: this candidate's holder identity.
        lease_duration: how long others wait, after they last saw the Lease change, before taking
            it over. Written into the Lease rounded up to whole seconds.
        renew_deadline: how long the leader keeps trying to renew before it gives up leadership.
        retry_period: the pause between attempts (jittered while acquiring).
        request_timeout: the hard timeout of one request, retries included; at most, and by
            default, ``renew_deadline / 2``.
        liveness_tolerance: how far past ``lease_duration`` a leader may go without a renew before
            :meth:`LeaderElector.check` reports it unhealthy (a wedged renew loop).

    Raises:
        ConfigError: the durations do not satisfy ``lease_duration > renew_deadline > 1.2 *
            retry_period > 0``, or the request timeout is too long.
    """

    name: str
    namespace: str
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    request_timeout: float | None = None
    liveness_tolerance: float = 20.0

    def __post_init__(self) -> None:
        if not self.name or not self.namespace:
            msg = "leader election needs a lease name and a namespace"
            raise ConfigError(msg)
        if not self.identity:
            msg = "leader election needs a non-empty identity"
            raise ConfigError(msg)
        if self.retry_period <= 0:
            msg = f"retry_period must be positive, got {self.retry_period}"
            raise ConfigError(msg)
        if self.lease_duration <= self.renew_deadline:
            msg = (
                f"lease_duration ({self.lease_duration}s) must be greater than renew_deadline "
                f"({self.renew_deadline}s)"
            )
            raise ConfigError(msg)
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            msg = (
                f"renew_deadline ({self.renew_deadline}s) must be greater than "
                f"{JITTER_FACTOR} * retry_period ({self.retry_period}s)"
            )
            raise ConfigError(msg)
        if self.request_timeout is not None and not (
            0 < self.request_timeout <= self.renew_deadline / 2
        ):
            msg = (
                f"request_timeout must be in (0, renew_deadline / 2 = {self.renew_deadline / 2}s], "
                f"got {self.request_timeout}"
            )
            raise ConfigError(msg)
        if self.liveness_tolerance < 0:
            msg = f"liveness_tolerance must not be negative, got {self.liveness_tolerance}"
            raise ConfigError(msg)

    @property
    def timeout(self) -> float:
        """The effective hard timeout of one request."""
        return self.request_timeout or self.renew_deadline / 2

    @property
    def lease_duration_seconds(self) -> int:
        """The ``leaseDurationSeconds`` written: whole seconds, never shorter than configured."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The election fields of a Lease spec (client-go's LeaderElectionRecord).

    Attributes:
        holder: ``holderIdentity``; empty when nobody holds the Lease (released).
        duration: ``leaseDurationSeconds``.
        acquire_time: ``acquireTime`` (MicroTime), when the holder took the Lease.
        renew_time: ``renewTime`` (MicroTime), when the holder last renewed it.
        transitions: ``leaseTransitions``, how many times the holder changed.
    """

    holder: str
    duration: int
    acquire_time: str
    renew_time: str
    transitions: int

    @classmethod
    def of(cls, lease: KubeObject) -> LeaseRecord:
        """The record in ``lease``'s spec (missing fields read as empty)."""
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        """The Lease spec that stores this record."""
        spec: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time:
            spec["renewTime"] = self.renew_time
        return spec
