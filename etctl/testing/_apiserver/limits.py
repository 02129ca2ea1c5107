"""Object size limits: what kube-apiserver and etcd refuse for being too big.

A real cluster bounds the size of what it accepts at three places, and :class:`Limits` names each
one, with a real cluster's defaults:

* the request body: kube-apiserver reads at most ``MaxRequestBodyBytes`` (3 MiB) of a create,
  update, patch or delete body and answers anything longer with 413 ``RequestEntityTooLarge``
  (``Request entity too large: limit is 3145728``);
* the data of a ConfigMap or a Secret: validation sums the bytes of the values (ConfigMap
  ``data`` plus ``binaryData``, Secret ``data`` once decoded) and refuses more than
  ``MaxSecretSize`` (1 MiB) with 422 Invalid (``Too long: must have at most 1048576 bytes``);
* the stored object: etcd refuses a request above ``--max-request-bytes`` (1.5 MiB by default) and
  kube-apiserver passes its error on as a 500 without a reason
  (``etcdserver: request is too large``).

The stored size is measured here as the object's compact JSON plus its storage key. Custom
resources are stored as JSON by a real server too; built-in kinds are stored as protobuf, which is
somewhat smaller, so for them the check is conservative.

Invariant: every limit is a positive number of bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from etctl.errors import ApiError, RequestEntityTooLarge, ServerError

__all__ = [
    "BODY_LIMIT",
    "DEFAULT_LIMITS",
    "MAX_DATA_BYTES",
    "MAX_OBJECT_BYTES",
    "MAX_REQUEST_BODY_BYTES",
    "Limits",
    "request_entity_too_large",
    "storage_request_too_large",
]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""kube-apiserver's ``MaxRequestBodyBytes``: the longest write body it reads."""

MAX_DATA_BYTES = 1024 * 1024
"""``MaxSecretSize``: the most data a ConfigMap or a Secret may hold."""

MAX_OBJECT_BYTES = 1536 * 1024
"""etcd's default ``--max-request-bytes``: the largest object a put may carry."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The size limits of one server (a real cluster's by default).

    Attributes:
        max_request_body_bytes: the longest request body read; longer ones get 413.
        max_data_bytes: the most data a ConfigMap or Secret may hold; more is 422 Invalid.
        max_object_bytes: the largest object storage accepts; larger ones get etcd's 500.
    """

    max_request_body_bytes: int = MAX_REQUEST_BODY_BYTES
    max_data_bytes: int = MAX_DATA_BYTES
    max_object_bytes: int = MAX_OBJECT_BYTES

    def __post_init__(self) -> None:
        for name in ("max_request_body_bytes", "max_data_bytes", "max_object_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive number of bytes, not {value!r}"
                raise ValueError(msg)


DEFAULT_LIMITS = Limits()
"""A real cluster's limits."""

BODY_LIMIT = web.AppKey("max_request_body_bytes", int)
"""Where the HTTP application keeps its request body limit."""


def request_entity_too_large(limit: int) -> RequestEntityTooLarge:
    """413 RequestEntityTooLarge for a body longer than ``limit`` bytes."""
    return RequestEntityTooLarge(
        f"Request entity too large: limit is {limit}", reason="RequestEntityTooLarge"
    )


def storage_request_too_large() -> ApiError:
    """What kube-apiserver answers when etcd refuses a put as too large.

    The apiserver does not translate etcd's error into a ``Status`` of its own: the client gets a
    500 whose message is etcd's and whose reason is empty (``StatusReasonUnknown``).
    """
    return ServerError("etcdserver: request is too large", status=500)
