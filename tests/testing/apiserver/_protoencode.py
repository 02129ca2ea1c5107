"""A tiny protobuf encoder for the tests' request bodies, independent of the server's decoder.

Kubernetes' protobuf bodies are the ``k8s`` magic and a NUL byte, then a ``runtime.Unknown``
(:func:`envelope`); the object's message is built from :func:`f` fields joined by :func:`m`.
"""

from __future__ import annotations

from etctl.testing._apiserver import protowire

__all__ = ["entry", "envelope", "f", "m", "varint"]


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative numbers as 64-bit two's complement, as Go writes them
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def f(number: int, value: int | bool | str | bytes) -> bytes:
    """One field: a varint for numbers, length-delimited for text and messages."""
    if isinstance(value, int):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def m(*fields: bytes) -> bytes:
    return b"".join(fields)


def entry(number: int, key: str, value: str | bytes) -> bytes:
    """One ``map<string, X>`` entry: key 1, value 2."""
    return f(number, m(f(1, key), f(2, value)))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """``k8s\\0`` and a runtime.Unknown: 1 TypeMeta (1 apiVersion, 2 kind), 2 raw."""
    return protowire.MAGIC + f(1, m(f(1, api_version), f(2, kind))) + f(2, raw)
