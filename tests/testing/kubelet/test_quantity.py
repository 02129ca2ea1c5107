"""Quantities and pod requests."""

from __future__ import annotations

from fractions import Fraction

import pytest

from etctl.testing._kubelet.quantity import (
    format_cpu,
    format_quantity,
    parse_quantity,
    pod_requests,
    resource_list,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("1.5", Fraction(3, 2)),
        ("1Ki", Fraction(1024)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1M", Fraction(10**6)),
        ("1e3", Fraction(1000)),
        ("100n", Fraction(1, 10**7)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1Xi", "abc", "1.2.3", True])
def test_parse_rejects_garbage(text: object) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)


def test_format() -> None:
    assert format_quantity(Fraction(1, 2)) == "500m"
    assert format_quantity(Fraction(2 * 2**30)) == "2Gi"
    assert format_quantity(Fraction(1000)) == "1000"
    assert format_quantity(Fraction(0)) == "0"
    assert format_cpu(Fraction(3, 2)) == "1500"


def test_resource_lists_skip_bad_values() -> None:
    assert resource_list({"cpu": "1", "memory": "lots"}) == {"cpu": Fraction(1)}


def test_pod_requests_take_the_larger_of_containers_and_init_containers() -> None:
    def container(cpu: str, memory: str) -> dict[str, object]:
        return {"resources": {"requests": {"cpu": cpu}, "limits": {"memory": memory}}}

    spec = {
        "containers": [container("500m", "1Gi"), container("1", "1Gi")],
        "initContainers": [container("2", "512Mi")],
        "overhead": {"cpu": "100m"},
    }
    assert pod_requests(spec) == {"cpu": Fraction(21, 10), "memory": Fraction(2 * 2**30)}
