"""Field errors: one invalid field of an object, worded as kube-apiserver words it.

A :class:`FieldError` is apimachinery's ``field.Error``: a machine-readable type (the
``details.causes[].reason`` of a 422 ``Status``), the field path as the server prints it
(``spec.template.spec.containers[0].image``) and the message body (``Required value``,
``Invalid value: -1: must be greater than or equal to 0``). The constructors mirror
``k8s.io/apimachinery/pkg/util/validation/field`` (the wording of Kubernetes 1.31), including how a
bad value is printed: strings quoted as Go's ``%q``, numbers and booleans bare, other values as
Go's ``%#v``.

The embedded API server turns a list of them into ``<Kind>.<group> "<name>" is invalid: ...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from etctl._apimachinery.gofmt import go_quote, go_sharp_v, go_v

__all__ = [
    "OMIT",
    "FieldError",
    "duplicate",
    "forbidden",
    "invalid",
    "not_supported",
    "required",
    "too_long",
    "too_many",
    "type_invalid",
]


class _Omit:
    """The value marker for errors that do not print the bad value."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()
"""Pass as ``bad_value`` when the message must not show a value."""

_TITLES = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}
# These types never print the bad value.
_VALUELESS = frozenset(
    {"FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError"}
)


def _render_value(value: Any) -> str:
    if value is None:
        return go_quote("null")
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool | int | float):
        return go_v(value)
    return go_sharp_v(value)


def _body(error_type: str, bad_value: Any, detail: str) -> str:
    title = _TITLES[error_type]
    if error_type in _VALUELESS or bad_value is OMIT:
        text = title
    else:
        text = f"{title}: {_render_value(bad_value)}"
    return f"{text}: {detail}" if detail else text


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field.

    Attributes:
        type: the cause type (``FieldValueRequired``, ``FieldValueInvalid``, ...).
        field: the field path as kube-apiserver prints it (``spec.list[2].name``).
        message: the message body (``Required value``, ``Invalid value: "x": ...``).
        bad_value: the offending value, if the error carries one.
    """

    type: str
    field: str
    message: str
    bad_value: Any = None

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def as_cause(self) -> dict[str, str]:
        """The ``Status.details.causes`` entry for this error."""
        return {"reason": self.type, "message": self.message, "field": self.field}


def _make(error_type: str, field: str, bad_value: Any, detail: str) -> FieldError:
    shown = None if bad_value is OMIT else bad_value
    return FieldError(error_type, field, _body(error_type, bad_value, detail), shown)


def required(field: str, detail: str = "") -> FieldError:
    """``Required value`` (``field.Required``)."""
    return _make("FieldValueRequired", field, OMIT, detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """``Invalid value: <value>: <detail>`` (``field.Invalid``)."""
    return _make("FieldValueInvalid", field, value, detail)


def type_invalid(field: str, value: Any, detail: str) -> FieldError:
    """``Invalid value: <value>: <detail>``, typed as a type mismatch (``field.TypeInvalid``)."""
    return _make("FieldValueTypeInvalid", field, value, detail)


def not_supported(field: str, value: Any, supported: list[str]) -> FieldError:
    """``Unsupported value: <value>: supported values: "a", "b"`` (``field.NotSupported``)."""
    detail = ""
    if supported:
        detail = "supported values: " + ", ".join(go_quote(v) for v in supported)
    return _make("FieldValueNotSupported", field, value, detail)


def duplicate(field: str, value: Any) -> FieldError:
    """``Duplicate value: <value>`` (``field.Duplicate``)."""
    return _make("FieldValueDuplicate", field, value, "")


def forbidden(field: str, detail: str) -> FieldError:
    """``Forbidden: <detail>`` (``field.Forbidden``)."""
    return _make("FieldValueForbidden", field, OMIT, detail)


def too_long(field: str, value: Any, max_length: int) -> FieldError:
    """``Too long: may not be longer than <n>`` (``field.TooLongMaxLength``)."""
    detail = f"may not be longer than {max_length}" if max_length >= 0 else "value is too long"
    return _make("FieldValueTooLong", field, value, detail)


def too_many(field: str, actual: int, maximum: int) -> FieldError:
    """``Too many: <actual>: must have at most <n> items`` (``field.TooMany``)."""
    detail = f"must have at most {maximum} items" if maximum >= 0 else "has too many items"
    return _make("FieldValueTooMany", field, actual if actual >= 0 else OMIT, detail)
