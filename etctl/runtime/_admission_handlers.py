"""Admission handlers: validators and defaulters, and the HTTP endpoint that serves them.

On controller-runtime's model (``admission.CustomValidator``, ``admission.CustomDefaulter``):

* A :class:`Validator` judges an object on CREATE, an update against the old object on UPDATE,
  and the object being deleted on DELETE. It returns warnings and raises to refuse: an
  :class:`~etctl.errors.ApiError` (the 422 of :func:`~etctl.runtime.invalid`, a ``Forbidden``)
  is answered with its own status; any other :class:`~etctl.errors.EtctlError` is a 403 with its
  message. CONNECT is allowed.
* A :class:`Defaulter` returns the object with its defaults set (it may change the copy it is
  given in place and return it); the handler answers with the JSON patch from the object the API
  server sent to the returned one (:func:`~etctl.runtime._jsonpatch.diff`), or with no patch when
  nothing changed. DELETE and CONNECT are allowed untouched. It raises to refuse, as a validator.
* Any other exception is a bug in the handler: it is logged with its traceback, counted in
  ``controller_runtime_webhook_panics_total`` and answered 500 (controller-runtime recovers
  panics the same way), so the API server applies the webhook's ``failurePolicy``.

:class:`AdmissionEndpoint` is the HTTP side: it decodes the ``AdmissionReview`` (an empty,
non-JSON or malformed body, or one that is not a v1 or v1beta1 review, gets HTTP 400 with the
reason in the body and a log line; the server refuses an oversized one with 413 before it is
read), runs the handler, and answers the review in the version it came in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import orjson
from pydantic import ValidationError

from etctl.errors import ApiError, EtctlError
from etctl.log import get_logger
from etctl.runtime import _metrics as metrics
from etctl.runtime._admission import (
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    review_response,
)
from etctl.runtime._http_server import Request, Response
from etctl.runtime._jsonpatch import diff
from etctl.runtime._objects import KubeObject

__all__ = [
    "AdmissionEndpoint",
    "AdmissionHandler",
    "Defaulter",
    "Validator",
    "defaulting_handler",
    "json_response",
    "unparsed",
    "validating_handler",
]

log = get_logger(__name__)

_SORTED = orjson.OPT_SORT_KEYS


class AdmissionHandler(Protocol):
    """Answers one admission request (controller-runtime's ``admission.Handler``)."""

    async def __call__(self, request: AdmissionRequest) -> AdmissionResponse:
        """The answer to ``request``."""
        ...


class Validator(Protocol):
    """Judges the objects of one resource; returns warnings, raises to refuse."""

    async def validate_create(self, obj: KubeObject, request: AdmissionRequest) -> Sequence[str]:
        """Warnings about a new object; raise to refuse it."""
        ...

    async def validate_update(
        self, old: KubeObject, new: KubeObject, request: AdmissionRequest
    ) -> Sequence[str]:
        """Warnings about an update from ``old`` to ``new``; raise to refuse it."""
        ...

    async def validate_delete(self, obj: KubeObject, request: AdmissionRequest) -> Sequence[str]:
        """Warnings about deleting ``obj``; raise to refuse it."""
        ...


class Defaulter(Protocol):
    """Sets the defaults of one resource's objects."""

    async def default(self, obj: KubeObject, request: AdmissionRequest) -> KubeObject:
        """``obj`` (a copy: change it freely) with its defaults set; raise to refuse it."""
        ...


def _refusal(what: str, request: AdmissionRequest, error: Exception) -> AdmissionResponse:
    """The answer to the exception a validator or defaulter raised (see the module docs)."""
    if isinstance(error, ApiError):
        return AdmissionResponse.from_error(error)
    if isinstance(error, EtctlError):
        return AdmissionResponse.deny(str(error))
    metrics.WEBHOOK_PANICS.inc()
    log.error(
        "an admission handler failed",
        handler=what,
        kind=request.kind.kind,
        namespace=request.namespace,
        name=request.name,
        operation=request.operation,
        exc_info=error,
    )
    return AdmissionResponse.errored(500, f"internal error in the {what} [recovered]")


def validating_handler(validator: Validator) -> AdmissionHandler:
    """The admission handler that runs ``validator``."""

    async def handle(request: AdmissionRequest) -> AdmissionResponse:
        obj, old = request.object, request.old_object
        try:
            if request.operation == "CREATE":
                if obj is None:
                    return AdmissionResponse.errored(400, "a CREATE review carries no object")
                warnings = await validator.validate_create(obj, request)
            elif request.operation == "UPDATE":
                if obj is None or old is None:
                    return AdmissionResponse.errored(
                        400, "an UPDATE review needs both the object and the old object"
                    )
                warnings = await validator.validate_update(old, obj, request)
            elif request.operation == "DELETE":
                if old is None:
                    return AdmissionResponse.errored(400, "a DELETE review carries no old object")
                warnings = await validator.validate_delete(old, request)
            else:
                return AdmissionResponse.allow()
        except Exception as error:  # noqa: BLE001 - every failure is an answer, never a crash
            return _refusal("validator", request, error)
        return AdmissionResponse.allow(*warnings)

    return handle


def defaulting_handler(defaulter: Defaulter) -> AdmissionHandler:
    """The admission handler that runs ``defaulter`` and answers with the patch it implies."""

    async def handle(request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return AdmissionResponse.allow()
        if request.object is None:
            return AdmissionResponse.errored(400, f"a {request.operation} review carries no object")
        original = request.object
        try:
            # Typed loosely: a defaulter that changed its copy in place may forget to return it.
            defaulted: object = await defaulter.default(
                orjson.loads(orjson.dumps(original)), request
            )
        except Exception as error:  # noqa: BLE001 - every failure is an answer, never a crash
            return _refusal("defaulter", request, error)
        if not isinstance(defaulted, dict):
            log.error("a defaulter returned no object", returned=type(defaulted).__name__)
            return AdmissionResponse.errored(500, "the defaulter returned no object")
        if orjson.dumps(defaulted, option=_SORTED) == orjson.dumps(original, option=_SORTED):
            return AdmissionResponse.allow()  # the usual case, told at C speed: nothing to patch
        patch = diff(original, defaulted)
        return AdmissionResponse.patched(patch) if patch else AdmissionResponse.allow()

    return handle


def unparsed(what: str, error: ValidationError) -> str:
    """Why a review's body is not ``what``, from its first parse error."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"not {what}: {where}: {first['msg']}" if where else str(first["msg"])


def json_response(status: int, document: object) -> Response:
    """A JSON answer of the webhook server."""
    return Response(status, orjson.dumps(document), content_type="application/json")


def _malformed(path: str, reason: str) -> Response:
    log.warning("refused a malformed admission review", path=path, reason=reason)
    answer = AdmissionResponse.errored(400, reason)
    return json_response(400, review_response(answer, uid=""))


class AdmissionEndpoint:
    """Serves one admission handler over HTTP (a webhook path of the webhook server).

    Args:
        handler: answers each decoded request.
    """

    def __init__(self, handler: AdmissionHandler) -> None:
        self.handler = handler

    async def __call__(self, http: Request) -> Response:
        """Decode the review, run the handler, encode its answer (see the module docs)."""
        media = http.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            return _malformed(http.path, f"content type {media!r}, expected application/json")
        if not http.body:
            return _malformed(http.path, "the request body is empty")
        try:
            review = AdmissionReview.model_validate_json(http.body)
        except ValidationError as error:
            return _malformed(http.path, unparsed("an AdmissionReview", error))
        answer = await self.handler(review.request)
        return json_response(
            200, review_response(answer, uid=review.request.uid, api_version=review.api_version)
        )
