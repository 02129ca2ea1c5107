"""What a delete does to an object, decided without the store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from etctl.errors import Invalid
from etctl.testing._apiserver.deletion import DeleteOptions, plan_delete, timestamp

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _obj(**meta: object) -> dict[str, object]:
    return {"metadata": {"name": "a", **meta}}


def test_no_finalizers_and_no_grace_removes_at_once() -> None:
    plan = plan_delete(_obj(), DeleteOptions(), grace_period=None, now=NOW)
    assert plan.update is None
    assert plan.remove


def test_finalizers_mark_the_object_as_deleting() -> None:
    plan = plan_delete(
        _obj(finalizers=["x/y"], generation=3), DeleteOptions(), grace_period=None, now=NOW
    )
    assert not plan.remove
    assert plan.update is not None
    meta = plan.update["metadata"]
    assert meta["deletionTimestamp"] == "2026-01-01T12:00:00Z"
    assert meta["deletionGracePeriodSeconds"] == 0
    assert meta["generation"] == 4


@pytest.mark.parametrize(
    ("policy", "orphan", "before", "after"),
    [
        ("Foreground", None, [], ["foregroundDeletion"]),
        ("Orphan", None, [], ["orphan"]),
        ("Background", None, ["orphan", "x/y"], ["x/y"]),
        (None, True, [], ["orphan"]),
        (None, None, ["orphan"], ["orphan"]),
    ],
)
def test_propagation_policy_rewrites_the_gc_finalizers(
    policy: str | None, orphan: bool | None, before: list[str], after: list[str]
) -> None:
    options = DeleteOptions(propagation_policy=policy, orphan_dependents=orphan)
    plan = plan_delete(_obj(finalizers=before), options, grace_period=None, now=NOW)
    if after:
        assert plan.update is not None
        assert plan.update["metadata"]["finalizers"] == after
    else:
        assert plan.remove


def test_graceful_deletion_sets_the_deadline_and_waits() -> None:
    plan = plan_delete(_obj(), DeleteOptions(), grace_period=30, now=NOW)
    assert not plan.remove
    assert plan.update is not None
    assert plan.update["metadata"]["deletionTimestamp"] == "2026-01-01T12:00:30Z"
    assert plan.update["metadata"]["deletionGracePeriodSeconds"] == 30


def test_graceful_deletion_with_zero_grace_removes_after_marking() -> None:
    plan = plan_delete(_obj(), DeleteOptions(), grace_period=0, now=NOW)
    assert plan.update is not None
    assert plan.remove


def test_pending_graceful_deletion_can_only_be_shortened() -> None:
    deleting = _obj(deletionTimestamp="2026-01-01T12:00:30Z", deletionGracePeriodSeconds=30)
    same = plan_delete(deleting, DeleteOptions(grace_period_seconds=40), grace_period=40, now=NOW)
    assert same.update is None
    assert not same.remove
    shorter = plan_delete(
        deleting, DeleteOptions(grace_period_seconds=10), grace_period=10, now=NOW
    )
    assert shorter.update is not None
    assert shorter.update["metadata"]["deletionTimestamp"] == "2026-01-01T12:00:10Z"
    negative = plan_delete(
        deleting, DeleteOptions(grace_period_seconds=-5), grace_period=1, now=NOW
    )
    assert negative.update is not None
    assert negative.update["metadata"]["deletionGracePeriodSeconds"] == 1


def test_contradictory_options_are_invalid() -> None:
    with pytest.raises(
        Invalid, match="orphanDependents and deletionPropagation cannot be both set"
    ):
        DeleteOptions(propagation_policy="Orphan", orphan_dependents=True).validate()


def test_timestamps_are_seconds_precision_utc() -> None:
    assert timestamp(datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)) == "2026-03-04T05:06:07Z"
