import pytest

from etctl.cli._values import (
    parse_bind_address,
    parse_bool,
    parse_duration,
    parse_list,
    parse_namespace,
    parse_object_name,
    parse_period,
    parse_positive_int,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("1", True),
        ("YES", True),
        ("on", True),
        ("false", False),
        ("0", False),
        ("Off", False),
    ],
)
def test_bool(text: str, value: bool) -> None:
    assert parse_bool(text) is value


def test_bool_rejects_anything_else() -> None:
    with pytest.raises(ValueError, match="'maybe' is not a boolean"):
        parse_bool("maybe")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("2", 2.0),
        ("0.25", 0.25),
        ("1h", 3600.0),
        ("1.5s", 1.5),
    ],
)
def test_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "15x", "s15", "1m30", "nan", "inf", "-1s", "0s", "0"])
def test_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_a_period_may_be_zero_never_negative() -> None:
    assert [parse_period(t) for t in ("0", "0s", "500ms", "1.5")] == [0.0, 0.0, 0.5, 1.5]
    with pytest.raises(ValueError, match="must not be a negative duration"):
        parse_period("-0.5")
    with pytest.raises(ValueError, match="is not a duration"):
        parse_period("soon")


def test_positive_int() -> None:
    assert parse_positive_int(" 4 ") == 4
    with pytest.raises(ValueError, match="at least 1"):
        parse_positive_int("0")
    with pytest.raises(ValueError, match="not an integer"):
        parse_positive_int("four")


@pytest.mark.parametrize(
    "text", [":8080", "0.0.0.0:8080", "127.0.0.1:0", "localhost:9", "[::1]:8080", "0"]
)
def test_bind_address(text: str) -> None:
    assert parse_bind_address(text) == text


@pytest.mark.parametrize("text", ["8080", ":http", ":70000", "host", "::1:8080", "[::1:8080"])
def test_bind_address_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=r"bind address|brackets"):
        parse_bind_address(text)


def test_namespace_and_object_names() -> None:
    assert parse_namespace("team-a") == "team-a"
    with pytest.raises(ValueError, match="not a namespace"):
        parse_namespace("Team_A")
    assert parse_object_name("etctl.leader.example.com") == "etctl.leader.example.com"
    with pytest.raises(ValueError, match="not an object name"):
        parse_object_name("-bad")


def test_list() -> None:
    assert parse_list(" a, b,,c ") == ["a", "b", "c"]
    assert parse_list("") == []
