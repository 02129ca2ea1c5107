"""Go-style durations in back-off messages."""

from __future__ import annotations

import pytest

from etctl.testing._kubelet.starts import exit_reason, go_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (10, "10s"), (80, "1m20s"), (300, "5m0s"), (3725, "1h2m5s")],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_exit_reason() -> None:
    assert (exit_reason(0), exit_reason(2)) == ("Completed", "Error")
