"""The one parser of quantities: exact amounts, the server's messages, canonical text, sums."""

from __future__ import annotations

from fractions import Fraction

import pytest

from etctl._apimachinery.quantity import (
    ERR_FORMAT,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    ResourceList,
    amount,
    canonical,
    parse,
)


@pytest.mark.parametrize(
    ("text", "value", "form"),
    [
        ("500m", Fraction(1, 2), "DecimalSI"),
        ("2", Fraction(2), "DecimalSI"),
        ("1.5", Fraction(3, 2), "DecimalSI"),
        (".5k", Fraction(500), "DecimalSI"),
        ("1Ki", Fraction(1024), "BinarySI"),
        ("2Gi", Fraction(2 * 2**30), "BinarySI"),
        ("1M", Fraction(10**6), "DecimalSI"),
        ("1e3", Fraction(1000), "DecimalExponent"),
        ("100n", Fraction(1, 10**7), "DecimalSI"),
        (3, Fraction(3), "DecimalSI"),
        (0.25, Fraction(1, 4), "DecimalSI"),
    ],
)
def test_parse(text: str | int | float, value: Fraction, form: str) -> None:
    assert parse(text) == Quantity(value, form)  # type: ignore[arg-type]
    assert amount(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT),
        ("abc", ERR_FORMAT),
        (True, ERR_FORMAT),
        ("1.2.3", ERR_NUMERIC),
        ("1ki", ERR_SUFFIX),
        ("5Q", ERR_FORMAT),
        # An exact fraction of 10**999999999 would take the process's memory.
        ("1e999999999", ERR_SUFFIX),
    ],
)
def test_parse_gives_the_servers_messages(text: object, message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse(text)
    assert str(caught.value) == message


def test_amount_says_what_a_quantity_looks_like() -> None:
    with pytest.raises(QuantityError, match=r"^'lots' is not a quantity \(for example 4, 500m"):
        amount("lots")


@pytest.mark.parametrize(
    ("text", "shown"),
    [("0.5", "500m"), ("1000m", "1"), ("1024Mi", "1Gi"), ("1e3", "1e3"), ("2000", "2k")],
)
def test_canonical_text(text: str, shown: str) -> None:
    assert canonical(parse(text)) == shown


def test_sums_keep_binary_only_when_every_term_is_binary() -> None:
    total = ResourceList({"cpu": "100m", "memory": "1Gi"})
    total.add({"cpu": "100m", "memory": "512Mi"})
    total.add({"cpu": "100m", "nvidia.com/gpu": 1})
    assert total.to_dict() == {"cpu": "300m", "memory": "1536Mi", "nvidia.com/gpu": "1"}
    total.add({"memory": "1000"})
    assert total.to_dict()["memory"] == str(1536 * 1024**2 + 1000)
    assert ResourceList({"cpu": "1.5", "n": "2000"}).to_dict() == {"cpu": "1500m", "n": "2k"}


def test_resource_lists_compare_by_value() -> None:
    assert ResourceList({"cpu": "1000m"}) == ResourceList({"cpu": 1})
    assert ResourceList({"cpu": "1"}) != ResourceList({"cpu": "2"})
    assert not ResourceList()
