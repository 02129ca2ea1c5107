"""Resource quantities: exact parsing, sums, canonical form, comparison by value."""

from __future__ import annotations

from fractions import Fraction

import pytest

from etctl.common._quantities import QuantityError, ResourceList, format_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "value", "binary"),
    [
        ("500m", Fraction(1, 2), False),
        ("2Gi", Fraction(2 * 1024**3), True),
        ("1e3", Fraction(1000), False),
        ("1.5", Fraction(3, 2), False),
        (".5k", Fraction(500), False),
        (4, Fraction(4), False),
    ],
)
def test_parse(text: str | int, value: Fraction, binary: bool) -> None:
    assert parse_quantity(text) == (value, binary)


@pytest.mark.parametrize("bad", ["", "1.2.3", "5Q", "m", "1e99", True])
def test_parse_rejects(bad: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_format() -> None:
    assert format_quantity(Fraction(3, 10)) == "300m"
    assert format_quantity(Fraction(15, 10000)) == "1500u"
    assert format_quantity(Fraction(2000)) == "2k"
    assert format_quantity(Fraction(1234)) == "1234"
    assert format_quantity(Fraction(0)) == "0"
    assert format_quantity(Fraction(2048 * 1024**2), binary=True) == "2Gi"
    assert format_quantity(Fraction(1536 * 1024**2), binary=True) == "1536Mi"


def test_sums_keep_binary_only_when_every_term_is_binary() -> None:
    total = ResourceList({"cpu": "100m", "memory": "1Gi"})
    total.add({"cpu": "100m", "memory": "512Mi"})
    total.add({"cpu": "100m", "nvidia.com/gpu": 1})
    assert total.to_dict() == {"cpu": "300m", "memory": "1536Mi", "nvidia.com/gpu": "1"}
    total.add({"memory": "1000"})
    assert total.to_dict()["memory"] == str(1536 * 1024**2 + 1000)


def test_resource_lists_compare_by_value() -> None:
    assert ResourceList({"cpu": "1000m"}) == ResourceList({"cpu": 1})
    assert ResourceList({"cpu": "1"}) != ResourceList({"cpu": "2"})
    assert not ResourceList()
