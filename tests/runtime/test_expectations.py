from __future__ import annotations

import pytest

from etctl.runtime import FakeClock
from etctl.runtime._expectations import DEFAULT_TTL, Expectations, Pending

KEY = "ns/job/worker/pods"


def test_creations_are_satisfied_once_all_are_observed() -> None:
    exp = Expectations(clock=FakeClock())
    assert exp.satisfied(KEY)
    exp.expect_creations(KEY, 2)
    exp.expect_creations(KEY, 1)
    assert not exp.satisfied(KEY)
    exp.creation_observed(KEY)
    exp.creation_observed(KEY)
    assert exp.pending(KEY) == Pending(1, frozenset(), 0.0)
    assert not exp.satisfied(KEY)
    exp.creation_observed(KEY)
    assert exp.satisfied(KEY)
    assert exp.pending(KEY) is None
    assert len(exp) == 0  # fulfilled records do not linger


def test_unexpected_creations_cannot_prepay_a_future_expectation() -> None:
    exp = Expectations(clock=FakeClock())
    exp.creation_observed(KEY)  # someone else's pod, or a late duplicate
    exp.expect_creations(KEY, 1)
    exp.creation_observed(KEY)
    exp.creation_observed(KEY)  # the same create lowered twice (error path, then the event)
    exp.expect_creations(KEY, 1)
    assert not exp.satisfied(KEY)


def test_duplicate_delete_events_count_once() -> None:
    exp = Expectations(clock=FakeClock())
    exp.expect_deletions(KEY, ["job-worker-1", "job-worker-2"])
    exp.deletion_observed(KEY, "job-worker-1")
    exp.deletion_observed(KEY, "job-worker-1")  # the watch DELETE and then a relist tombstone
    exp.deletion_observed(KEY, "someone-else")
    assert exp.pending(KEY) == Pending(0, frozenset({"job-worker-2"}), 0.0)
    assert not exp.satisfied(KEY)
    exp.deletion_observed(KEY, "job-worker-2")
    assert exp.satisfied(KEY)


async def test_records_expire_after_the_ttl_from_the_last_raise() -> None:
    clock = FakeClock()
    exp = Expectations(clock=clock)
    exp.expect_creations(KEY, 1)
    await clock.advance(200)
    exp.expect_deletions(KEY, ["p"])  # a new write renews the window
    await clock.advance(DEFAULT_TTL - 1)
    assert not exp.satisfied(KEY)
    pending = exp.pending(KEY)
    assert pending is not None
    assert pending.age == DEFAULT_TTL - 1
    await clock.advance(1)
    assert exp.satisfied(KEY)
    # The expired record was dropped: new expectations start from zero, not from stale counts.
    exp.expect_creations(KEY, 1)
    exp.creation_observed(KEY)
    assert exp.satisfied(KEY)


async def test_raising_after_expiry_discards_stale_counts() -> None:
    clock = FakeClock()
    exp = Expectations(clock=clock, ttl=10)
    exp.expect_creations(KEY, 3)
    await clock.advance(10)
    exp.expect_creations(KEY, 1)
    exp.creation_observed(KEY)
    assert exp.satisfied(KEY)


def test_and_semantics_across_a_jobs_keys_and_forgetting_a_job() -> None:
    exp = Expectations(clock=FakeClock())
    keys = ["ns/job/worker/pods", "ns/job/worker/services", "ns/job/launcher/pods"]
    exp.expect_creations(keys[1], 1)
    exp.expect_creations("ns/job2/worker/pods", 1)
    assert not exp.all_satisfied(keys)  # one pending key blocks the job
    exp.creation_observed(keys[1])
    assert exp.all_satisfied(keys)
    exp.expect_creations(keys[0], 1)
    exp.forget_prefix("ns/job/")
    assert exp.all_satisfied(keys)
    assert not exp.satisfied("ns/job2/worker/pods")
    exp.forget("ns/job2/worker/pods")
    assert len(exp) == 0


def test_invalid_counts_are_rejected() -> None:
    exp = Expectations(clock=FakeClock())
    with pytest.raises(ValueError, match="negative"):
        exp.expect_creations(KEY, -1)
    exp.expect_creations(KEY, 0)
    exp.expect_deletions(KEY, [])
    assert exp.pending(KEY) is None
