"""Go's ``time.Duration.String``, for the messages the embedded cluster writes as Go would.

The protobuf reader turns a ``metav1.Duration`` into its JSON text and the simulated kubelet's
events name back-offs and pull times; both print durations byte for byte as Go does.
"""

from __future__ import annotations

__all__ = ["go_duration"]


def go_duration(nanos: int) -> str:
    """Go's ``time.Duration.String``: ``1h2m3.5s``, ``1.5ms``, ``0s``."""
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size or unit == "ns":
                return sign + _fraction(nanos, size) + unit if nanos else "0s"
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _fraction(value: int, size: int) -> str:
    whole, part = divmod(value, size)
    if not part:
        return str(whole)
    digits = f"{part:0{len(str(size)) - 1}d}".rstrip("0")
    return f"{whole}.{digits}"
