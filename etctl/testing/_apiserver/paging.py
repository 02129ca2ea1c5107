"""Continue tokens of paged lists, in the real server's format.

A token is unpadded URL-safe base64 of ``{"v":"meta.k8s.io/v1","rv":<rv>,"start":"<key>"}``:
the resourceVersion of the snapshot the first page was read at and the storage key to resume
from (the last returned key followed by a NUL, so it sorts right after it). ``rv`` -1 marks an
*inconsistent* token: the rest of the list is read from the latest state.
"""

from __future__ import annotations

import base64
import binascii
import json

from etctl.testing._apiserver.status import bad_request

__all__ = ["INCONSISTENT", "decode_continue", "encode_continue"]

INCONSISTENT = -1
"""The ``rv`` of a token that continues from the latest state rather than a snapshot."""

_VERSION = "meta.k8s.io/v1"


def encode_continue(rv: int, start: str) -> str:
    """A token resuming at key ``start`` of the snapshot at ``rv``."""
    raw = json.dumps({"v": _VERSION, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """``(rv, start key)`` of a token.

    Raises:
        etctl.errors.BadRequest: the token is not one this server issued.
    """
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise bad_request(f"invalid continue token: continue key is not valid: {exc}") from exc
    if not isinstance(data, dict) or data.get("v") != _VERSION:
        raise bad_request(
            "invalid continue token: continue key is not valid: server does not recognize this "
            "encoded key"
        )
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0 or rv < INCONSISTENT or not isinstance(start, str):
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)"
        )
    if not start or start.startswith("/") or "/../" in f"/{start}/":
        raise bad_request(
            "invalid continue token: continue key is not valid: key is empty or invalid"
        )
    return rv, start
