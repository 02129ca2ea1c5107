"""Shared output format of the benchmarks: one figure per line, with its comparison."""

from __future__ import annotations

import platform
import statistics
import sys

from etctl.log import configure

# The figures are the output: only warnings and errors from the code under measurement may
# interleave with them. Configured on import so a server started in a child process is quiet too.
configure(fmt="console", level="warning")


def header(title: str) -> None:
    """Print the benchmark title and the machine it ran on."""
    print(f"== {title}")
    print(f"   python {sys.version.split()[0]} on {platform.machine()} ({platform.system()})")


def figure(name: str, value: float, unit: str, *, compare: str = "") -> None:
    """Print one measured figure, optionally followed by what it is compared against."""
    suffix = f"   [{compare}]" if compare else ""
    print(f"   {name:<48} {value:>14,.1f} {unit}{suffix}")


def spread(values: list[float], digits: int = 1) -> str:
    """``lowest [lower quartile - upper quartile] highest`` of a series (quartiles from 4 on)."""
    ordered = sorted(values)
    low, high = f"{ordered[0]:.{digits}f}", f"{ordered[-1]:.{digits}f}"
    if len(ordered) < 4:
        return f"{low} - {high}"
    first, _, third = statistics.quantiles(ordered, n=4)
    return f"{low} [{first:.{digits}f} - {third:.{digits}f}] {high}"
