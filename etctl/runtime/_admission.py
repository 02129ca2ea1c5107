"""``AdmissionReview`` v1: what the API server asks an admission webhook, and what it answers.

:class:`AdmissionRequest` is the request half, parsed by pydantic at the boundary: the operation,
the kind and resource as the API server matched them, the user, and the objects as plain dicts
(``object`` for CREATE and UPDATE, ``old_object`` for UPDATE and DELETE). :class:`AdmissionResponse`
is the answer a handler gives, built with its constructors:

* :meth:`AdmissionResponse.allow` (with warnings, which ``kubectl`` prints),
* :meth:`AdmissionResponse.deny` (403 Forbidden with a message, controller-runtime's ``Denied``),
* :meth:`AdmissionResponse.from_error` (the ``Status`` of an :class:`~etctl.errors.ApiError`: a
  422 with field causes from :func:`~etctl.runtime.invalid`, say, which kube-apiserver passes on
  to the client unchanged),
* :meth:`AdmissionResponse.errored` (the webhook could not judge: a 400 or 500),
* :meth:`AdmissionResponse.patched` (allowed, with the JSON patch of a defaulting webhook).

:func:`review_response` wraps an answer into the ``AdmissionReview`` the API server expects:
the request's ``uid``, the review's own ``apiVersion``, the patch base64-encoded with
``patchType: JSONPatch``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from etctl.errors import ApiError

__all__ = [
    "ADMISSION_REVIEW_VERSIONS",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "GroupVersionKind",
    "GroupVersionResource",
    "Operation",
    "UserInfo",
    "review_response",
]

ADMISSION_REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
"""The ``AdmissionReview`` versions answered (v1beta1 has the same shape), v1 preferred."""

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
"""What the request does to the object."""


class _ReviewModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="ignore",
        frozen=True,
    )


class GroupVersionKind(_ReviewModel):
    """A kind of one API group version (``group`` empty for the core group)."""

    group: str = ""
    version: str
    kind: str


class GroupVersionResource(_ReviewModel):
    """A resource of one API group version (``group`` empty for the core group)."""

    group: str = ""
    version: str
    resource: str


class UserInfo(_ReviewModel):
    """Who made the request."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = Field(default_factory=dict)


class AdmissionRequest(_ReviewModel):
    """The request half of an ``AdmissionReview``.

    ``kind`` and ``resource`` are those the webhook's rules matched (the object is in that
    version); ``request_kind`` and ``request_resource`` are what the client used, which differ when
    the API server converted the request for an ``Equivalent`` match.
    """

    uid: str = Field(min_length=1)
    kind: GroupVersionKind
    resource: GroupVersionResource
    sub_resource: str = ""
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: Operation
    user_info: UserInfo = Field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] | None = None


class AdmissionReview(_ReviewModel):
    """An ``AdmissionReview`` as the API server sends it."""

    api_version: Literal["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]
    kind: Literal["AdmissionReview"]
    request: AdmissionRequest


def _status(code: int, message: str = "", reason: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"metadata": {}, "code": code}
    if code >= 400:
        status["status"] = "Failure"
    if message:
        status["message"] = message
    if reason:
        status["reason"] = reason
    return status


@dataclass(frozen=True, slots=True)
class AdmissionResponse:
    """A webhook's answer to one request (the ``response`` half of the review).

    Attributes:
        allowed: whether the request may proceed.
        status: the ``metav1.Status`` explaining a refusal (its ``code``, ``reason``, ``message``
            and ``details`` reach the client).
        patch: JSON patch operations to apply to the object (mutating webhooks only).
        warnings: warnings for the client (``kubectl`` prints each as ``Warning: ...``).
    """

    allowed: bool
    status: Mapping[str, Any] = field(default_factory=lambda: _status(200))
    patch: tuple[Mapping[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def allow(cls, *warnings: str) -> AdmissionResponse:
        """Allowed, with warnings for the client."""
        return cls(True, warnings=tuple(warnings))

    @classmethod
    def patched(cls, patch: Iterable[Mapping[str, Any]], *warnings: str) -> AdmissionResponse:
        """Allowed once the JSON patch ``patch`` is applied."""
        return cls(True, patch=tuple(patch), warnings=tuple(warnings))

    @classmethod
    def deny(
        cls, message: str, *warnings: str, code: int = 403, reason: str = "Forbidden"
    ) -> AdmissionResponse:
        """Refused with ``message`` (403 Forbidden by default, as controller-runtime's Denied)."""
        return cls(False, _status(code, message, reason), warnings=tuple(warnings))

    @classmethod
    def from_error(cls, error: ApiError, *warnings: str) -> AdmissionResponse:
        """Refused with the ``Status`` of ``error``: its code, reason, message and details."""
        status = _status(error.status, error.message, error.reason)
        if error.details:
            status["details"] = dict(error.details)
        return cls(False, status, warnings=tuple(warnings))

    @classmethod
    def errored(cls, code: int, message: str) -> AdmissionResponse:
        """The webhook could not judge the request (bad input: 400; its own failure: 500)."""
        return cls(False, _status(code, message))

    def with_warnings(self, warnings: Sequence[str]) -> AdmissionResponse:
        """This answer with ``warnings`` added."""
        if not warnings:
            return self
        return AdmissionResponse(self.allowed, self.status, self.patch, (*self.warnings, *warnings))


def review_response(
    response: AdmissionResponse, *, uid: str, api_version: str = ADMISSION_REVIEW_VERSIONS[0]
) -> dict[str, Any]:
    """The ``AdmissionReview`` carrying ``response`` for the request ``uid``."""
    body: dict[str, Any] = {"uid": uid, "allowed": response.allowed, "status": response.status}
    if response.patch:
        body["patchType"] = "JSONPatch"
        body["patch"] = base64.b64encode(orjson.dumps(list(response.patch))).decode()
    if response.warnings:
        body["warnings"] = list(response.warnings)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": body}
