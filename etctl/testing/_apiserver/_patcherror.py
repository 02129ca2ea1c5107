"""The error every patch kind raises: the HTTP status, reason and message kube-apiserver sends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

__all__ = ["MISSING", "PatchError", "bad_request", "unclassified"]


class PatchError(ValueError):
    """A patch that kube-apiserver would refuse.

    Attributes:
        status: the HTTP status (400, 413, 422 or 500).
        reason: the ``Status.reason`` (``BadRequest``, ``Invalid``, ``RequestEntityTooLarge``,
            or ``""`` for an unclassified 500).
        message: the ``Status.message``, worded as the real server's.
        detail: the underlying explanation where the real message hides it (JSON patch).
        causes: ``Status.details.causes`` entries, if the real server sends any.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        reason: str,
        detail: str = "",
        causes: Sequence[Mapping[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.detail = detail or message
        self.causes = list(causes)


def bad_request(message: str) -> PatchError:
    """A 400 BadRequest: the patch document itself is malformed."""
    return PatchError(message, status=400, reason="BadRequest")


def unclassified(message: str) -> PatchError:
    """A 500 with an empty (Unknown) reason: what an unwrapped strategicpatch error becomes."""
    return PatchError(message, status=500, reason="")


class _Missing:
    """The type of :data:`MISSING`."""


MISSING: Final = _Missing()
"""Marks an absent value, as distinct from JSON null."""
