"""Capturing etctl's log events in a test, from a level of the test's choosing."""

from __future__ import annotations

import logging
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from structlog.testing import capture_logs


@contextmanager
def captured_logs(level: int = logging.INFO) -> Iterator[list[MutableMapping[str, Any]]]:
    """``structlog.testing.capture_logs()``, with etctl's events let through from ``level`` up.

    etctl's loggers drop events below their standard-library level before any processor runs,
    and that level is the root logger's (WARNING) unless a program configured logging: the root
    level is lowered for the block.
    """
    root = logging.getLogger()  # noqa: TID251 - the level etctl's loggers inherit, restored after
    was = root.level
    root.setLevel(level)
    try:
        with capture_logs() as logs:
            yield logs
    finally:
        root.setLevel(was)
