from __future__ import annotations

from typing import Any

import pytest

from etctl._apimachinery.fielderror import (
    OMIT,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (required("spec.image"), "spec.image: Required value"),
        (required("spec.x", "must be set"), "spec.x: Required value: must be set"),
        (invalid("spec.n", -1, "must be positive"), "spec.n: Invalid value: -1: must be positive"),
        (invalid("spec.s", 'a"b', "bad"), 'spec.s: Invalid value: "a\\"b": bad'),
        (invalid("spec.f", 1.5, "bad"), "spec.f: Invalid value: 1.5: bad"),
        (invalid("spec.b", True, "bad"), "spec.b: Invalid value: true: bad"),
        (invalid("spec.z", None, "bad"), 'spec.z: Invalid value: "null": bad'),
        (
            invalid("spec.l", ["a", 1], "bad"),
            'spec.l: Invalid value: []interface {}{"a", 1}: bad',
        ),
        (invalid("spec.o", OMIT, "bad"), "spec.o: Invalid value: bad"),
        (
            type_invalid("spec.t", "string", "must be of type integer"),
            'spec.t: Invalid value: "string": must be of type integer',
        ),
        (
            not_supported("spec.mode", "x", ["a", "b"]),
            'spec.mode: Unsupported value: "x": supported values: "a", "b"',
        ),
        (
            duplicate("spec.l[1]", {"k": "v"}),
            'spec.l[1]: Duplicate value: map[string]interface {}{"k":"v"}',
        ),
        (forbidden("spec.f", "not allowed"), "spec.f: Forbidden: not allowed"),
        (too_long("spec.s", "abcd", 3), "spec.s: Too long: may not be longer than 3"),
        (too_long("spec.s", "abcd", -1), "spec.s: Too long: value is too long"),
        (too_many("spec.l", 3, 2), "spec.l: Too many: 3: must have at most 2 items"),
        (too_many("spec.l", -1, -1), "spec.l: Too many: has too many items"),
    ],
)
def test_field_errors_render_as_apimachinery(error: FieldError, text: str) -> None:
    assert str(error) == text


def test_cause_shape() -> None:
    error: Any = invalid("spec.n", 3, "too big")
    assert error.as_cause() == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 3: too big",
        "field": "spec.n",
    }
    assert error.bad_value == 3
    assert required("x").bad_value is None
