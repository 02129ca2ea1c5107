"""Equality of decoded JSON values as Go's ``reflect.DeepEqual`` sees them after decoding.

kube-apiserver decodes a JSON number into an ``int64`` when it is written as an integer and into a
``float64`` otherwise, and ``reflect.DeepEqual`` tells those types (and booleans) apart; Python's
``==`` does not (``True == 1 == 1.0``). :func:`identical` is the comparison that decides whether a
value is *unchanged* by a write, for CRD validation ratcheting and ownership tracking, and
:data:`NO_OLD` stands for the old value of one that has none.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NO_OLD", "identical"]

NO_OLD: Any = object()
"""A value with no old value correlated with it (validated, or compared, as on create)."""


def identical(left: Any, right: Any) -> bool:
    """Whether two decoded JSON values are equal with the same JSON type at every node.

    ``True`` is not ``1`` and ``1`` is not ``1.0``; objects are equal whatever their key order.
    The same object is identical to itself without being walked, and ``==`` (which runs in C and
    is implied by identity of values) rules out most differences before the type walk.
    """
    if left is right:
        return True
    return type(left) is type(right) and left == right and _typed_equal(left, right)


def _typed_equal(left: Any, right: Any) -> bool:
    """:func:`identical` for two values already known to be ``==``."""
    if left is right:
        return True
    kind = type(left)
    if kind is not type(right):
        return False
    if kind is dict:
        return all(_typed_equal(value, right[key]) for key, value in left.items())
    if kind is list:
        return all(map(_typed_equal, left, right))
    return True
