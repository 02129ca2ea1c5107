"""The leader-election configuration and the Lease record."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from etctl.errors import ConfigError
from etctl.runtime._lease import LeaderElectionConfig, LeaseRecord, default_identity, micro_time


def test_configuration_is_validated() -> None:
    config = LeaderElectionConfig(name="l", namespace="ns")
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15, 10, 2)
    assert config.timeout == 5.0
    assert config.lease_duration_seconds == 15
    assert (
        LeaderElectionConfig(name="l", namespace="ns", lease_duration=10.5).lease_duration_seconds
        == 11
    )
    host, _, suffix = config.identity.rpartition("_")
    assert host
    assert len(suffix) == 36
    assert default_identity() != default_identity()
    bad: list[dict[str, Any]] = [
        {"lease_duration": 10.0},  # not above the renew deadline
        {"renew_deadline": 2.4},  # not above 1.2 * retry period
        {"retry_period": 0.0},
        {"request_timeout": 5.5},  # above renew_deadline / 2
        {"request_timeout": 0.0},
        {"liveness_tolerance": -1.0},
        {"identity": ""},
    ]
    for options in bad:
        with pytest.raises(ConfigError):
            LeaderElectionConfig(name="l", namespace="ns", **options)
    with pytest.raises(ConfigError):
        LeaderElectionConfig(name="", namespace="ns")


def test_micro_time_is_the_apis_format() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 89, tzinfo=UTC)
    assert micro_time(moment) == "2026-03-04T05:06:07.000089Z"


def test_a_record_round_trips_through_a_lease_spec() -> None:
    record = LeaseRecord(
        holder="a",
        duration=15,
        acquire_time="2026-01-01T00:00:00.000000Z",
        renew_time="2026-01-01T00:00:02.000000Z",
        transitions=3,
    )
    assert record.spec() == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "leaseTransitions": 3,
        "acquireTime": "2026-01-01T00:00:00.000000Z",
        "renewTime": "2026-01-01T00:00:02.000000Z",
    }
    assert LeaseRecord.of({"spec": record.spec()}) == record
    empty = LeaseRecord.of({"metadata": {"name": "x"}})
    assert empty == LeaseRecord(
        holder="", duration=0, acquire_time="", renew_time="", transitions=0
    )
    assert "acquireTime" not in empty.spec()
