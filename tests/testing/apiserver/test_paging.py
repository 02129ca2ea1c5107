"""Continue tokens."""

from __future__ import annotations

import base64

import pytest

from etctl.errors import BadRequest
from etctl.testing._apiserver.paging import INCONSISTENT, decode_continue, encode_continue


def test_round_trip() -> None:
    token = encode_continue(42, "ns/a\x00")
    assert "=" not in token
    assert decode_continue(token) == (42, "ns/a\x00")
    assert decode_continue(encode_continue(INCONSISTENT, "b")) == (-1, "b")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"v":"meta.k8s.io/v2","rv":1,"start":"a"}',
        b'{"v":"meta.k8s.io/v1","rv":0,"start":"a"}',
        b'{"v":"meta.k8s.io/v1","rv":1,"start":""}',
        b'{"v":"meta.k8s.io/v1","rv":1,"start":"/etc"}',
        b"[]",
        b"not json",
    ],
)
def test_invalid_tokens_are_bad_requests(raw: bytes) -> None:
    token = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    with pytest.raises(BadRequest, match="invalid continue token: continue key is not valid"):
        decode_continue(token)
