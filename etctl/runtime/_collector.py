"""Pausing Python's cycle collector while one synchronous step builds a large acyclic tree.

Decoding a list page (500 pods: some 200,000 dicts and lists in one ``orjson.loads``) or compacting
a whole list allocates far past the collector's thresholds, and every collection triggered in
between walks the young objects and, every so often, the whole heap, the growing cache included,
for garbage that cannot exist there: decoded JSON has no reference cycles. A cold sync of 10,000
pods spent about two thirds of its CPU time in those collections.

:func:`paused_collection` turns automatic collection off for the length of a ``with`` block and
back on after, if it was on. The block must not ``await``: nothing else runs in this thread
meanwhile, so nothing else's garbage piles up. Objects the block creates are collected as usual
afterwards; explicit ``gc.collect()`` calls still work.
"""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["paused_collection"]


class paused_collection:  # noqa: N801 - used like a function: ``with paused_collection():``
    """A ``with`` block during which the cycle collector does not run on its own."""

    __slots__ = ("_resume",)

    def __init__(self) -> None:
        self._resume = False

    def __enter__(self) -> None:
        self._resume = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        if self._resume:
            gc.enable()
