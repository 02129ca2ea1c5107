"""Object size limits: how big the objects an operator writes may be on a real cluster.

kube-apiserver refuses ConfigMap and Secret data over ``MaxSecretSize`` (1 MiB, a constant of the
API server) and etcd refuses to store an object over its ``--max-request-bytes`` (1.5 MiB by
default). An operator that renders a child or a status past either gets the same error on every
retry, so it checks the sizes it would write first and reports them instead.
:class:`SizeLimits` names both, with a real cluster's values; a test against a server with
lowered limits gives the operator the same ones.

Invariant: both limits are positive numbers of bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_DATA_BYTES", "MAX_OBJECT_BYTES", "SizeLimits", "json_size"]

MAX_DATA_BYTES = 1024 * 1024
"""kube-apiserver's ``MaxSecretSize``: the most data a ConfigMap or Secret may hold."""

MAX_OBJECT_BYTES = 1536 * 1024
"""etcd's default ``--max-request-bytes``: the largest object it stores."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SizeLimits:
    """The size limits of the cluster an operator writes to.

    Attributes:
        max_data_bytes: the most bytes a ConfigMap's values may total.
        max_object_bytes: the largest object (as JSON) the cluster stores.
    """

    max_data_bytes: int = MAX_DATA_BYTES
    max_object_bytes: int = MAX_OBJECT_BYTES

    def __post_init__(self) -> None:
        for name in ("max_data_bytes", "max_object_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"{name} must be a positive number of bytes, not {value!r}"
                raise ValueError(msg)


def json_size(value: Any) -> int:
    """The length in bytes of ``value`` as compact JSON (as the API server stores it)."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
