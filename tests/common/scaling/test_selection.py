from datetime import UTC, datetime

import pytest

from etctl.common._scaling.selection import (
    QueuedScaler,
    bounds_problem,
    clamp,
    fifo,
    foreign_names,
    pick_victims,
)

P = "j-worker-"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_fifo_is_oldest_first_then_by_name_and_kind() -> None:
    late = QueuedScaler("ScaleOut", "a", T0.replace(minute=5))
    early_b = QueuedScaler("ScaleOut", "b", T0)
    early_a_in = QueuedScaler("ScaleIn", "a", T0)
    early_a_out = QueuedScaler("ScaleOut", "a", T0)
    unknown = QueuedScaler("ScaleIn", "z", None)
    assert fifo([late, early_b, early_a_out, early_a_in, unknown]) == [
        unknown,
        early_a_in,
        early_a_out,
        early_b,
        late,
    ]


def test_fifo_ties_of_one_second_follow_the_queued_resource_version() -> None:
    # Created in the same second: the smaller version was written first, whatever the names.
    second = QueuedScaler("ScaleOut", "a", T0, "120")
    first = QueuedScaler("ScaleIn", "b", T0, "99")
    opaque = QueuedScaler("ScaleOut", "c", T0, "not-a-number")  # not comparable: after, by name
    older = QueuedScaler("ScaleOut", "z", T0.replace(second=0), "500")
    later = QueuedScaler("ScaleOut", "y", T0.replace(second=1), "1")
    assert fifo([later, opaque, second, first, older]) == [first, second, older, opaque, later]


def test_victims_failed_then_not_running_then_highest_running() -> None:
    targets = [f"j-worker-{i}" for i in range(6)]
    phases = {
        "j-worker-0": "Running",
        "j-worker-1": "Failed",
        "j-worker-2": "Running",
        "j-worker-3": "Pending",
        "j-worker-5": "Running",
        # j-worker-4 has no pod at all
    }
    assert pick_victims(P, targets, phases, 1) == ["j-worker-1"]
    assert pick_victims(P, targets, phases, 3) == ["j-worker-1", "j-worker-4", "j-worker-3"]
    assert pick_victims(P, targets, phases, 5) == [
        "j-worker-1",
        "j-worker-4",
        "j-worker-3",
        "j-worker-5",
        "j-worker-2",
    ]


def test_victims_by_index_not_by_text() -> None:
    targets = ["j-worker-9", "j-worker-10", "j-worker-2"]
    phases = dict.fromkeys(targets, "Running")
    assert pick_victims(P, targets, phases, 1) == ["j-worker-10"]


def test_foreign_names() -> None:
    assert foreign_names(["a", "b"], ["b", "c", "other-job-worker-0"]) == [
        "c",
        "other-job-worker-0",
    ]


@pytest.mark.parametrize(
    ("size", "change", "low", "high", "expected"),
    [
        (3, 1, 1, None, None),
        (3, 1, 1, 4, None),
        (
            3,
            2,
            1,
            4,
            "adding 2 workers to the 3 of TrainingJob j would make 5, above its maxReplicas 4",
        ),
        (3, -2, 1, None, None),
        (
            3,
            -2,
            2,
            None,
            "removing 2 of the 3 workers of TrainingJob j would leave 1, below its minReplicas 2",
        ),
        (
            3,
            -3,
            1,
            None,
            "removing 3 of the 3 workers of TrainingJob j would leave 0, below its minReplicas 1",
        ),
    ],
)
def test_bounds(size: int, change: int, low: int, high: int | None, expected: str | None) -> None:
    problem = bounds_problem(
        size=size, change=change, low=low, high=high, kind="TrainingJob", job="j"
    )
    assert problem == expected


def test_clamp() -> None:
    assert clamp(0, 1, None) == 1
    assert clamp(10, 1, 4) == 4
    assert clamp(3, 1, 4) == 3
