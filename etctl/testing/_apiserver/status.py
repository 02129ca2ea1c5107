"""The API server's errors, worded and shaped as kube-apiserver words and shapes them.

Every failure inside the embedded API server is an :class:`etctl.errors.ApiError` (the same classes
etctl's client raises), built by one of the constructors here so that the HTTP status, the
``reason``, the ``details`` and the ``message`` match what ``k8s.io/apimachinery/pkg/api/errors``
produces for the same cause. :func:`status_body` turns one into the ``Status`` object sent on the
wire.

Conventions kept from apimachinery:

* ``details.kind`` is the *resource* (``pods``) for NotFound, AlreadyExists, Conflict and Forbidden
  and the *kind* (``Pod``) for Invalid;
* a group-resource prints as ``pods`` in the core group and ``foos.example.com`` elsewhere, a
  group-kind as ``Pod`` or ``Foo.example.com``;
* an Invalid message lists its causes as ``field: message``, one bare or several in ``[a, b]``,
  with duplicates dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from etctl.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    TooManyRequests,
    UnsupportedMediaType,
)

__all__ = [
    "Cause",
    "FieldErrorLike",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "expired_continue",
    "forbidden",
    "generate_name_conflict",
    "group_kind",
    "group_resource",
    "internal_error",
    "invalid",
    "method_not_allowed",
    "method_not_supported",
    "not_acceptable",
    "not_found",
    "page_not_found",
    "resource_not_found",
    "stale_conflict",
    "status_body",
    "success_status",
    "timeout",
    "too_large_resource_version",
    "too_many_requests",
    "unsupported_media_type",
]


class FieldErrorLike(Protocol):
    """Anything that names a field error: a schema validator's errors satisfy it."""

    @property
    def type(self) -> str:
        """The cause type (``FieldValueRequired``, ``FieldValueInvalid``...)."""
        ...

    @property
    def field(self) -> str:
        """The dotted path of the field (``spec.replicas``)."""
        ...

    @property
    def message(self) -> str:
        """The error body without the field (``Required value``)."""
        ...


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``details.causes`` entry: a field-level reason for an error.

    Attributes:
        type: the machine-readable cause (``FieldValueInvalid``); sent as ``reason``.
        field: the dotted field path, or ``""`` when the cause is not about one field.
        message: the human-readable error body, without the field.
    """

    type: str
    field: str
    message: str

    @classmethod
    def of(cls, error: FieldErrorLike) -> Cause:
        """Copy any field error into a Cause."""
        return cls(type=error.type, field=error.field, message=error.message)

    def as_dict(self) -> dict[str, str]:
        """The JSON form of the cause."""
        out = {"reason": self.type, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def group_resource(group: str, plural: str) -> str:
    """``pods`` or ``foos.example.com``, as ``schema.GroupResource.String()`` prints it."""
    return f"{plural}.{group}" if group else plural


def group_kind(group: str, kind: str) -> str:
    """``Pod`` or ``Foo.example.com``, as ``schema.GroupKind.String()`` prints it."""
    return f"{kind}.{group}" if group else kind


def _details(group: str = "", kind: str = "", name: str = "", **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    details.update({k: v for k, v in extra.items() if v})
    return details


def _quote(text: str) -> str:
    """Go's ``%q`` for the plain names that appear in messages."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def not_found(group: str, plural: str, name: str) -> NotFound:
    """404: ``pods "x" not found``."""
    message = f"{group_resource(group, plural)} {_quote(name)} not found"
    return NotFound(message, reason="NotFound", details=_details(group, plural, name))


class _GenericNotFound(NotFound):
    """A generic 404, whose ``details`` the real server sends as an empty object."""

    empty_details = True


class _GenericMethodNotAllowed(MethodNotAllowed):
    """A generic 405, whose ``details`` the real server sends as an empty object."""

    empty_details = True


class PageNotFound(_GenericNotFound):
    """A 404 no API handler answers: Go's ``http.NotFound``, plain text, no ``Status``."""

    plain_text = True


def page_not_found() -> NotFound:
    """404 for a path under a group (or version) the server does not serve at all.

    The request falls through every API handler to Go's default mux, which answers
    ``404 page not found`` as ``text/plain``: a client must not expect a ``Status`` there.
    """
    return PageNotFound("404 page not found", reason="NotFound")


def resource_not_found() -> NotFound:
    """404 for a path that names no resource (the server's generic wording)."""
    return _GenericNotFound("the server could not find the requested resource", reason="NotFound")


def already_exists(group: str, plural: str, name: str) -> AlreadyExists:
    """409 AlreadyExists: ``pods "x" already exists``."""
    message = f"{group_resource(group, plural)} {_quote(name)} already exists"
    return AlreadyExists(message, reason="AlreadyExists", details=_details(group, plural, name))


def generate_name_conflict(group: str, plural: str, name: str) -> AlreadyExists:
    """409 AlreadyExists after every generated name was taken."""
    message = (
        f"{group_resource(group, plural)} {_quote(name)} already exists, the server was not able "
        "to generate a unique name for the object"
    )
    details = _details(group, plural, name, retryAfterSeconds=1)
    return AlreadyExists(message, reason="AlreadyExists", details=details, retry_after=1.0)


def conflict(group: str, plural: str, name: str, detail: str) -> Conflict:
    """409 Conflict: ``Operation cannot be fulfilled on pods "x": <detail>``."""
    message = f"Operation cannot be fulfilled on {group_resource(group, plural)} {_quote(name)}: "
    return Conflict(message + detail, reason="Conflict", details=_details(group, plural, name))


def stale_conflict(group: str, plural: str, name: str) -> Conflict:
    """409 Conflict for a write that carried an out-of-date ``resourceVersion``."""
    return conflict(
        group,
        plural,
        name,
        "the object has been modified; please apply your changes to the latest version and "
        "try again",
    )


def _aggregate(causes: list[Cause]) -> str:
    seen: list[str] = []
    for cause in causes:
        text = str(cause)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def invalid(group: str, kind: str, name: str, causes: Iterable[Cause | FieldErrorLike]) -> Invalid:
    """422 Invalid: ``Pod "x" is invalid: spec.containers: Required value``.

    Args:
        group: the API group of the kind.
        kind: the kind (``Pod``); a few real paths pass the resource here instead.
        name: the object's name (may be empty).
        causes: the field errors.
    """
    items = [c if isinstance(c, Cause) else Cause.of(c) for c in causes]
    head = f"{group_kind(group, kind)} {_quote(name)} is invalid"
    message = f"{head}: {_aggregate(items)}" if items else head
    details = _details(group, kind, name)
    details["causes"] = [c.as_dict() for c in items]
    return Invalid(message, reason="Invalid", details=details)


def bad_request(message: str) -> BadRequest:
    """400 BadRequest with the given message."""
    return BadRequest(message, reason="BadRequest")


class _ExpiredWithContinue(Gone):
    """410 Expired that carries a token to continue inconsistently (``metadata.continue``)."""

    def __init__(self, message: str, continue_token: str) -> None:
        super().__init__(message, reason="Expired")
        self.continue_token = continue_token


def expired(message: str) -> Gone:
    """410 Expired (``NewResourceExpired``)."""
    return Gone(message, reason="Expired")


def expired_continue(continue_token: str) -> Gone:
    """410 Expired for a continue token whose snapshot is gone, offering an inconsistent one."""
    return _ExpiredWithContinue(
        "The provided continue parameter is too old to display a consistent list result. You "
        "can start a new list without the continue parameter, or use the continue token in this "
        "response to retrieve the remainder of the results. Continuing with the provided token "
        "results in an inconsistent list - objects that were created, modified, or deleted "
        "between the time the first chunk was returned and now may show up in the list.",
        continue_token,
    )


def forbidden(
    group: str, plural: str, name: str, detail: str, causes: Iterable[Cause] = ()
) -> Forbidden:
    """403 Forbidden: ``pods "x" is forbidden: <detail>``."""
    resource = group_resource(group, plural)
    message = (
        f"{resource} {_quote(name)} is forbidden: {detail}"
        if name
        else (f"{resource} is forbidden: {detail}")
    )
    details = _details(group, plural, name)
    cause_list = [c.as_dict() for c in causes]
    if cause_list:
        details["causes"] = cause_list
    return Forbidden(message, reason="Forbidden", details=details)


def method_not_supported(
    group: str, plural: str, action: str, message: str | None = None
) -> MethodNotAllowed:
    """405: ``<action> is not supported on resources of kind "pods"`` (or ``message``)."""
    if message is None:
        message = (
            f"{action} is not supported on resources of kind "
            f"{_quote(group_resource(group, plural))}"
        )
    return MethodNotAllowed(message, reason="MethodNotAllowed", details=_details(group, plural))


def method_not_allowed() -> MethodNotAllowed:
    """405 for a verb the path does not serve (the server's generic wording)."""
    return _GenericMethodNotAllowed(
        "the server does not allow this method on the requested resource",
        reason="MethodNotAllowed",
    )


def unsupported_media_type(accepted: Iterable[str]) -> UnsupportedMediaType:
    """415 for a body in a media type the verb does not accept."""
    message = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    return UnsupportedMediaType(message, reason="UnsupportedMediaType")


def not_acceptable(message: str) -> ApiError:
    """406 NotAcceptable: the server cannot produce a representation the client accepts."""
    return ApiError(message, status=406, reason="NotAcceptable")


def internal_error(message: str) -> ServerError:
    """500 InternalError: ``Internal error occurred: <message>``."""
    return ServerError(
        f"Internal error occurred: {message}",
        status=500,
        reason="InternalError",
        details={"causes": [{"message": message}]},
    )


def timeout(message: str, retry_after: int = 0) -> ServerError:
    """504 Timeout: ``Timeout: <message>``."""
    details = {"retryAfterSeconds": retry_after} if retry_after else {}
    return ServerError(f"Timeout: {message}", status=504, reason="Timeout", details=details)


def too_large_resource_version(requested: int, current: int) -> ServerError:
    """504 for a read at a resourceVersion the server has not reached yet."""
    return ServerError(
        f"Timeout: Too large resource version: {requested}, current: {current}",
        status=504,
        reason="Timeout",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def too_many_requests(message: str, retry_after: int = 1) -> TooManyRequests:
    """429 TooManyRequests with a retry delay."""
    return TooManyRequests(
        message,
        reason="TooManyRequests",
        details={"retryAfterSeconds": retry_after},
        retry_after=float(retry_after),
    )


def status_body(error: ApiError) -> dict[str, Any]:
    """The ``Status`` object for an error, as the API server serialises it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
    }
    token = getattr(error, "continue_token", None)
    if token:
        body["metadata"] = {"continue": token}
    if error.message:
        body["message"] = error.message
    if error.reason:
        body["reason"] = error.reason
    if error.details or getattr(error, "empty_details", False):
        body["details"] = dict(error.details)
    body["code"] = error.status
    return body


def success_status(*, group: str, plural: str, name: str, uid: str = "") -> dict[str, Any]:
    """The ``Status`` a delete returns when the resource does not return the deleted object."""
    details: Mapping[str, Any] = _details(group, plural, name, uid=uid)
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": dict(details),
    }
