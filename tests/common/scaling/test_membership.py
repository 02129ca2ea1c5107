import pytest

from etctl.common._scaling.membership import (
    Replacement,
    high_water,
    highest_fitting,
    initial_targets,
    member_index,
    member_name,
    members,
    new_names,
    planned,
    replace,
    sort_members,
)

P = "j-worker-"


@pytest.mark.parametrize(
    ("name", "index"),
    [
        ("j-worker-0", 0),
        ("j-worker-12", 12),
        ("j-worker-012", None),
        ("j-worker-", None),
        ("j-worker-1a", None),
        ("other-worker-1", None),
        ("j-worker--1", None),
    ],
)
def test_member_index(name: str, index: int | None) -> None:
    assert member_index(P, name) == index


def test_names_sort_by_index_not_text() -> None:
    assert sort_members(P, ["j-worker-10", "j-worker-9", "odd", "j-worker-9"]) == [
        "j-worker-9",
        "j-worker-10",
        "odd",
    ]
    assert member_name(P, 3) == "j-worker-3"


def test_high_water_takes_every_name_into_account() -> None:
    assert high_water(P, None) == -1
    assert high_water(P, 4, ["j-worker-1"]) == 4
    # A decision written in a scaler but not yet in the job's status still counts.
    assert high_water(P, 4, ["j-worker-1"], ["j-worker-6", "stranger-9"]) == 6


def test_new_and_initial_names() -> None:
    assert new_names(P, 4, 2) == ["j-worker-5", "j-worker-6"]
    assert new_names(P, -1, 0) == []
    assert initial_targets(P, 3) == ["j-worker-0", "j-worker-1", "j-worker-2"]


def test_members_are_running_targets_minus_leaving_and_joining() -> None:
    targets = ["j-worker-10", "j-worker-2", "j-worker-3", "j-worker-4"]
    running = {"j-worker-10", "j-worker-2", "j-worker-4", "elsewhere-1"}
    assert members(P, targets, running) == ["j-worker-2", "j-worker-4", "j-worker-10"]
    assert members(P, targets, running, leaving={"j-worker-4"}, joining={"j-worker-10"}) == [
        "j-worker-2"
    ]


def test_plan_leaves_out_members_that_vanished() -> None:
    targets = ["j-worker-0", "j-worker-1", "j-worker-2"]
    # worker-1 was a member and its pod is gone: it must be replaced, never recreated;
    # worker-2 never joined: it may be created (again) under its name.
    assert planned(targets, current={"j-worker-0", "j-worker-1"}, present={"j-worker-0"}) == [
        "j-worker-0",
        "j-worker-2",
    ]


def test_replace_keeps_positions_and_uses_fresh_names() -> None:
    targets = ["j-worker-0", "j-worker-1", "j-worker-2"]
    new_targets, last, swaps = replace(P, targets, 5, {"j-worker-2", "j-worker-0", "unknown"})
    assert new_targets == ["j-worker-6", "j-worker-1", "j-worker-7"]
    assert last == 7
    assert swaps == [
        Replacement("j-worker-0", "j-worker-6"),
        Replacement("j-worker-2", "j-worker-7"),
    ]
    assert replace(P, targets, 5, set()) == (targets, 5, [])


def test_a_replacement_whose_next_name_is_too_long_reuses_the_lowest_free_name() -> None:
    long = "j" * 54 + "-worker-"  # room for one digit in 63 characters
    targets = [f"{long}0", f"{long}9"]
    # worker-1's pod is still being deleted, worker-2 is a scaler's choice: neither is free.
    new_targets, last, swaps = replace(
        long, targets, 9, {f"{long}9"}, max_length=63, taken={f"{long}1", f"{long}2", f"{long}9"}
    )
    assert new_targets == [f"{long}0", f"{long}3"]
    assert last == 9  # no new index was used
    assert swaps == [Replacement(f"{long}9", f"{long}3", reused=True)]
    # Fresh names first while they fit.
    assert replace(long, [f"{long}0"], 4, {f"{long}0"}, max_length=63) == (
        [f"{long}5"],
        5,
        [Replacement(f"{long}0", f"{long}5")],
    )


def test_without_a_free_name_that_fits_nothing_is_replaced() -> None:
    long = "j" * 54 + "-worker-"
    targets = [f"{long}{i}" for i in range(10)]
    assert replace(long, targets, 9, {f"{long}4"}, max_length=63) == (targets, 9, [])


@pytest.mark.parametrize(
    ("prefix", "highest"),
    [("a" * 54 + "-worker-", 9), ("a" * 53 + "-worker-", 99), ("job-worker-", 10**52 - 1)],
)
def test_the_highest_index_whose_name_fits_63_characters(prefix: str, highest: int) -> None:
    assert highest_fitting(prefix) == highest
    assert len(member_name(prefix, highest)) == 63
    assert len(member_name(prefix, highest + 1)) == 64


def test_no_index_fits_a_prefix_of_63_characters() -> None:
    assert highest_fitting("a" * 63) == -1
