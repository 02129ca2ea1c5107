"""Reading Kubernetes' protobuf request bodies, as far as the embedded server needs to.

kubectl's typed requests (``kubectl create token``) send ``application/vnd.kubernetes.protobuf``
and do not fall back to JSON on a 415. Such a body is the magic ``k8s`` and a NUL byte, then a
``runtime.Unknown``: field 1 its ``TypeMeta`` (1 apiVersion, 2 kind), field 2 the object's own
message. :func:`unwrap` opens the envelope; :func:`fields` walks any message's fields (and
:func:`varints` a packed run of numbers); ``protobody`` decodes a whole object with them. Answers
stay JSON, which these clients accept too.

Invariants: truncated or malformed input raises :class:`ValueError`, never reads past the end;
groups (wire types 3 and 4, unused by Kubernetes) are refused.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["MAGIC", "MEDIA_TYPE", "fields", "unwrap", "varints"]

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            msg = "truncated varint"
            raise ValueError(msg)
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            msg = "varint too long"
            raise ValueError(msg)


def fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of each field: an int for numeric ones, bytes for the rest.

    Raises:
        ValueError: the message is truncated or malformed.
    """
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, at = _varint(data, at)
            yield number, value
        elif wire == _BYTES:
            size, at = _varint(data, at)
            if at + size > len(data):
                msg = f"field {number} runs past the end of the message"
                raise ValueError(msg)
            yield number, data[at : at + size]
            at += size
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            if at + width > len(data):
                msg = f"field {number} runs past the end of the message"
                raise ValueError(msg)
            yield number, int.from_bytes(data[at : at + width], "little")
            at += width
        else:
            msg = f"unsupported wire type {wire} in field {number}"
            raise ValueError(msg)


def varints(data: bytes) -> Iterator[int]:
    """The varints of a packed repeated number field, in order.

    Raises:
        ValueError: the run ends inside a varint.
    """
    at = 0
    while at < len(data):
        value, at = _varint(data, at)
        yield value


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, message)`` of a protobuf-encoded Kubernetes object.

    Raises:
        ValueError: not a Kubernetes protobuf body.
    """
    if not body.startswith(MAGIC):
        msg = "not a Kubernetes protobuf body (no k8s magic)"
        raise ValueError(msg)
    api_version = kind = ""
    raw = b""
    for number, value in fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for inner, text in fields(value):
                if isinstance(text, bytes) and inner in (1, 2):
                    decoded = text.decode()
                    api_version, kind = (decoded, kind) if inner == 1 else (api_version, decoded)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    return api_version, kind, raw
