from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from etctl.common import ConditionStatus, JobCondition, JobConditionType
from etctl.common._conditions import (
    get_condition,
    is_finished,
    is_true,
    set_condition,
    set_job_condition,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=30, microseconds=250)
TRUE, FALSE = ConditionStatus.TRUE, ConditionStatus.FALSE
CREATED, RUNNING = JobConditionType.CREATED, JobConditionType.RUNNING
RESTARTING, SUCCEEDED, FAILED = (
    JobConditionType.RESTARTING,
    JobConditionType.SUCCEEDED,
    JobConditionType.FAILED,
)


def cond(kind: str, status: ConditionStatus, at: datetime = T0, reason: str = "") -> JobCondition:
    return JobCondition(
        type=kind, status=status, reason=reason, last_update_time=at, last_transition_time=at
    )


def test_set_adds_a_new_condition_at_the_end_with_whole_second_times() -> None:
    result = set_condition([cond(CREATED, TRUE)], RUNNING, TRUE, reason="Started", now=T1)
    assert [c.type for c in result] == [CREATED, RUNNING]
    added = result[-1]
    assert added.reason == "Started"
    assert added.last_transition_time == added.last_update_time == T1.replace(microsecond=0)


def test_unchanged_condition_is_a_no_op() -> None:
    before = [cond(CREATED, TRUE, reason="JobCreated"), cond(RUNNING, TRUE)]
    after = set_condition(before, CREATED, TRUE, reason="JobCreated", now=T1)
    assert after == before
    assert after is not before


def test_reason_change_keeps_transition_time_and_moves_to_end() -> None:
    before = [cond(CREATED, TRUE), cond(RUNNING, TRUE)]
    after = set_condition(before, CREATED, TRUE, reason="Again", message="m", now=T1)
    assert [c.type for c in after] == [RUNNING, CREATED]
    changed = after[-1]
    assert changed.last_transition_time == T0
    assert changed.last_update_time == T1.replace(microsecond=0)
    assert (changed.reason, changed.message) == ("Again", "m")


def test_status_change_sets_transition_time() -> None:
    after = set_condition([cond(RUNNING, TRUE)], RUNNING, FALSE, reason="Stopped", now=T1)
    assert len(after) == 1
    assert after[0].status is FALSE
    assert after[0].last_transition_time == T1.replace(microsecond=0)


def test_input_is_never_mutated() -> None:
    before = [cond(CREATED, TRUE)]
    snapshot = list(before)
    set_condition(before, RUNNING, TRUE, now=T1)
    set_job_condition(before, FAILED, TRUE, now=T1)
    assert before == snapshot


def test_getters() -> None:
    conditions = [cond(CREATED, TRUE), cond(RUNNING, FALSE)]
    assert get_condition(conditions, RUNNING) == conditions[1]
    assert get_condition(conditions, FAILED) is None
    assert is_true(conditions, CREATED)
    assert not is_true(conditions, RUNNING)
    assert not is_true(conditions, FAILED)
    assert not is_finished(conditions)
    assert is_finished([*conditions, cond(SUCCEEDED, TRUE)])
    assert is_finished([cond(FAILED, TRUE)])
    assert not is_finished([cond(FAILED, FALSE)])


def test_running_and_restarting_exclude_each_other() -> None:
    restarting = set_job_condition(
        [cond(CREATED, TRUE), cond(RUNNING, TRUE)], RESTARTING, TRUE, now=T1
    )
    assert [c.type for c in restarting] == [CREATED, RESTARTING]
    running = set_job_condition(restarting, RUNNING, TRUE, now=T1)
    assert [c.type for c in running] == [CREATED, RUNNING]


def test_terminal_conditions_turn_running_false_and_stay_last() -> None:
    result = set_job_condition([cond(CREATED, TRUE), cond(RUNNING, TRUE)], SUCCEEDED, TRUE, now=T1)
    assert [(c.type, c.status) for c in result] == [
        (CREATED, TRUE),
        (RUNNING, FALSE),
        (SUCCEEDED, TRUE),
    ]
    assert result[1].last_transition_time == T1.replace(microsecond=0)


def test_a_finished_job_stays_finished() -> None:
    failed = set_job_condition([cond(RUNNING, TRUE)], FAILED, TRUE, reason="Boom", now=T1)
    assert is_true(failed, FAILED)
    assert not is_true(failed, RUNNING)
    later = T1 + timedelta(hours=1)
    assert set_job_condition(failed, RUNNING, TRUE, now=later) == failed
    assert set_job_condition(failed, SUCCEEDED, TRUE, now=later) == failed
    succeeded = set_job_condition([cond(RUNNING, TRUE)], SUCCEEDED, TRUE, now=T1)
    assert set_job_condition(succeeded, RUNNING, TRUE, now=later) == succeeded
    assert set_job_condition(succeeded, FAILED, TRUE, now=later) == succeeded


def test_false_conditions_do_not_trigger_lifecycle_rules() -> None:
    before = [cond(RUNNING, TRUE)]
    after = set_job_condition(before, RESTARTING, FALSE, now=T1)
    assert [(c.type, c.status) for c in after] == [(RUNNING, TRUE), (RESTARTING, FALSE)]


KINDS = st.sampled_from([CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED, "Scaling"])
STATUSES = st.sampled_from(list(ConditionStatus))
STEPS = st.lists(st.tuples(KINDS, STATUSES, st.sampled_from(["", "A", "B"])), max_size=12)


@settings(derandomize=True, max_examples=300)
@given(STEPS)
def test_set_condition_keeps_one_condition_per_type_and_the_latest_last(
    steps: list[tuple[str, ConditionStatus, str]],
) -> None:
    conditions: list[JobCondition] = []
    for index, (kind, status, reason) in enumerate(steps):
        now = T0 + timedelta(seconds=index)
        before = conditions
        conditions = set_condition(conditions, kind, status, reason=reason, now=now)
        types = [c.type for c in conditions]
        assert len(types) == len(set(types))
        current = get_condition(conditions, kind)
        assert current is not None
        assert (current.status, current.reason) == (status, reason)
        if conditions != before:
            assert conditions[-1] == current
        # Setting the same thing again changes nothing.
        assert set_condition(conditions, kind, status, reason=reason, now=now) == conditions


@settings(derandomize=True, max_examples=300)
@given(STEPS)
def test_job_conditions_never_hold_running_and_restarting_true_together(
    steps: list[tuple[str, ConditionStatus, str]],
) -> None:
    conditions: list[JobCondition] = []
    for index, (kind, status, reason) in enumerate(steps):
        conditions = set_job_condition(
            conditions, kind, status, reason=reason, now=T0 + timedelta(seconds=index)
        )
        assert not (is_true(conditions, RUNNING) and is_true(conditions, RESTARTING))
        if is_true(conditions, SUCCEEDED) or is_true(conditions, FAILED):
            assert not is_true(conditions, RUNNING)
