"""Shared output format of the benchmarks: one figure per line, with its comparison."""

from __future__ import annotations

import platform
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
