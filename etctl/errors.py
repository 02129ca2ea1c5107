"""The one error tree of etctl.

Every exception etctl raises on purpose derives from :class:`EtctlError`::

    EtctlError
    ├── ConfigError             bad settings, kubeconfig, CLI values, plugin registration
    ├── UnsafeRequest           a request that cannot be sent safely: refused, nothing sent
    ├── TransportError          the request never got an HTTP answer (refused, reset, timed out)
    │   ├── RequestNotSent      the connection was never established: the server never saw it
    │   └── ResponseTooLarge    the answer exceeded the client's size limit: refused, not retried
    ├── ApiError                the API server answered with a non-2xx ``Status``
    │   ├── BadRequest          400
    │   ├── Unauthorized        401
    │   ├── Forbidden           403
    │   ├── NotFound            404
    │   ├── MethodNotAllowed    405
    │   ├── Conflict            409, reason Conflict (stale resourceVersion)
    │   ├── AlreadyExists       409, reason AlreadyExists (a sibling of Conflict, never a subclass)
    │   ├── Gone                410 (reason Expired or Gone: the resourceVersion is too old)
    │   ├── UnsupportedMediaType 415
    │   ├── Invalid             422 (field errors in ``details.causes``)
    │   ├── TooManyRequests     429 (``retry_after`` from the Retry-After header)
    │   ├── ServerError         5xx
    │   └── ExecFailed          an exec stream ended with a failure, not an exit code
    ├── CacheSyncError          an informer did not sync in time (carries the last list error)
    ├── LeaderElectionLost      this process stopped being the leader
    ├── ShutdownIncomplete      the graceful shutdown ran out: work was cancelled, events dropped
    ├── Fenced                  a leader-only write or exec refused: this process may no longer lead
    └── TerminalError           a reconcile failure that must not be retried

Only :mod:`etctl.runtime._client` converts ``kubernetes_asyncio`` exceptions into this tree; every
other module catches these classes, never HTTP status integers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "CacheSyncError",
    "ConfigError",
    "Conflict",
    "EtctlError",
    "ExecFailed",
    "Fenced",
    "Forbidden",
    "Gone",
    "Invalid",
    "LeaderElectionLost",
    "MethodNotAllowed",
    "NotFound",
    "RequestEntityTooLarge",
    "RequestNotSent",
    "ResponseTooLarge",
    "ServerError",
    "ShutdownIncomplete",
    "TerminalError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "UnsafeRequest",
    "UnsupportedMediaType",
    "api_error_from_status",
]


class EtctlError(Exception):
    """Base class of every error etctl raises on purpose."""


class ConfigError(EtctlError):
    """Settings, kubeconfig, command-line values or a plugin registration are unusable."""


class TransportError(EtctlError):
    """A request got no HTTP answer: connection refused or reset, or a timeout.

    Always transient from the client's point of view: retried with backoff where the verb is safe to
    retry.
    """


class RequestNotSent(TransportError):
    """The connection to the server could not be established: the request was never sent.

    Unlike a plain :class:`TransportError` (the answer was lost, so the server may have acted), this
    one proves the server did nothing: even a write that is not idempotent may be sent again.
    """


class ResponseTooLarge(TransportError):
    """The answer was larger than the client accepts (``ClientOptions.max_response_bytes``).

    The server may have acted on the request. Never retried: the next answer would be as large.
    """


class UnsafeRequest(EtctlError, ValueError):
    """A request that cannot be sent safely, refused before a byte of it went out.

    A control character (CR and LF above all, which would end the request line or a header and
    begin another request), a space or a character outside ASCII in the method or a header; a path
    segment that is empty, ``.`` or ``..`` (a server normalising the path would address another
    object). Names, namespaces and subresources are percent-encoded into the path, so ordinary
    input never raises this.
    """


class ApiError(EtctlError):
    """The API server answered with an error ``Status``.

    Attributes:
        status: the HTTP status code.
        reason: the machine-readable ``Status.reason`` (``NotFound``, ``Conflict``, ...).
        message: the human-readable ``Status.message``.
        details: the ``Status.details`` mapping (name, group, kind, causes), possibly empty.
        retry_after: seconds from a Retry-After header or ``details.retryAfterSeconds``, if any.
    """

    code: ClassVar[int] = 0
    after_lost_answer: bool = False
    """Set by the client when an earlier attempt of the same request lost its answer (a timeout,
    a reset, a 5xx): that attempt may have been applied, so this answer (a Conflict, say) may be
    the request meeting itself. Read the object before concluding anything."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str = "",
        details: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status if status is not None else self.code
        self.reason = reason
        self.message = message
        self.details: Mapping[str, Any] = details or {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        reason = f" {self.reason}" if self.reason else ""
        return f"({self.status}{reason}) {self.message}"

    @property
    def causes(self) -> list[Mapping[str, Any]]:
        """The field-level causes of the error (``details.causes``), for Invalid mostly."""
        causes = self.details.get("causes") or []
        return [c for c in causes if isinstance(c, Mapping)]


class BadRequest(ApiError):
    """400: the request is malformed (bad selector, bad patch, wrong content type for the verb)."""

    code = 400


class Unauthorized(ApiError):
    """401: the credentials were rejected."""

    code = 401


class Forbidden(ApiError):
    """403: RBAC does not allow the verb, or the namespace is terminating."""

    code = 403


class NotFound(ApiError):
    """404: the object, its namespace or the resource type does not exist."""

    code = 404


class MethodNotAllowed(ApiError):
    """405: the verb is not supported on this resource."""

    code = 405


class Conflict(ApiError):
    """409 Conflict: the write carried a stale ``resourceVersion`` or failed a precondition."""

    code = 409


class AlreadyExists(ApiError):
    """409 AlreadyExists: an object of that name exists already."""

    code = 409


class Gone(ApiError):
    """410: the requested ``resourceVersion`` is older than the server keeps; relist."""

    code = 410


class RequestEntityTooLarge(ApiError):
    """413: the request body is longer than the server reads (3 MiB on a real cluster)."""

    code = 413


class UnsupportedMediaType(ApiError):
    """415: the patch type is not supported for this resource (strategic merge on a CR)."""

    code = 415


class Invalid(ApiError):
    """422: the object failed validation; ``causes`` names each field and what is wrong with it."""

    code = 422


class TooManyRequests(ApiError):
    """429: throttled by the server; ``retry_after`` says when to try again."""

    code = 429


class ServerError(ApiError):
    """5xx: the server failed; transient."""

    code = 500


class ExecFailed(ApiError):
    """An exec whose stream ended with a failure ``Status`` instead of the command's exit code.

    The upgrade went through, so unlike an exec refused with an HTTP error (any other
    :class:`ApiError` from ``exec``) the command may have started: the runtime reports a command it
    could not start and one it lost track of alike. ``status``, ``reason`` and ``message`` are the
    Status's.
    """


class CacheSyncError(EtctlError):
    """An informer's cache did not sync before its deadline.

    The message names the resource and the last error the reflector saw (for example a 403 from
    RBAC), so an operator that cannot list what it watches fails loudly instead of idling.
    """


class LeaderElectionLost(EtctlError):
    """This process lost the leader lease; every leader-only task has been stopped."""


class ShutdownIncomplete(EtctlError):
    """A graceful shutdown did not finish what was running.

    Its grace period ran out (or a second signal cut it short) while reconciles or runnables still
    ran, which were cancelled, or while Events were still unsent, which were dropped. Everything
    has stopped; the message says what was lost. controller-runtime's manager returns an error in
    this case too, and a binary exits non-zero.
    """


class Fenced(EtctlError):
    """A leader-only write or exec was refused before it was sent: leadership may have passed.

    Raised by the client for work started under a leader's fence once the elector's renew deadline
    has passed (see :mod:`etctl.runtime._fence`). Nothing reached the server; the process is about
    to stop its leader-only work, so this is never retried.
    """


class TerminalError(EtctlError):
    """A reconcile error that retrying cannot fix.

    Raised from a reconciler, it is logged and counted but the request is not requeued; a later
    change to a watched object will trigger a fresh reconcile.
    """


_BY_REASON: dict[str, type[ApiError]] = {
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Gone,
    "Gone": Gone,
    "Invalid": Invalid,
    "NotFound": NotFound,
    "Forbidden": Forbidden,
    "Unauthorized": Unauthorized,
    "TooManyRequests": TooManyRequests,
    "UnsupportedMediaType": UnsupportedMediaType,
    "MethodNotAllowed": MethodNotAllowed,
    "BadRequest": BadRequest,
    "RequestEntityTooLarge": RequestEntityTooLarge,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
}


def api_error_from_status(
    status: int,
    body: Mapping[str, Any] | None,
    *,
    retry_after: float | None = None,
) -> ApiError:
    """Build the right :class:`ApiError` subclass from an HTTP status and a ``Status`` body.

    The reason in the body wins over the code (a 409 may be ``AlreadyExists`` or ``Conflict``);
    an unknown 5xx becomes :class:`ServerError`, any other unknown code a plain :class:`ApiError`.
    """
    body = body or {}
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or f"HTTP {status}")
    details_raw = body.get("details")
    details: Mapping[str, Any] = details_raw if isinstance(details_raw, Mapping) else {}
    cls = _BY_REASON.get(reason)
    if cls is None or (cls.code and cls.code != status):
        cls = _BY_CODE.get(status) or (ServerError if status >= 500 else ApiError)
    if retry_after is None:
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, int | float) and seconds > 0:
            retry_after = float(seconds)
    return cls(message, status=status, reason=reason, details=details, retry_after=retry_after)
