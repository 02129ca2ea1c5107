"""``etctl crds [--check] [DIR]``: write the CRDs of every registered job kind, or check them.

The resources come from the job plugin registry (the ``etctl.jobs`` entry-point group), so a
third-party job package gets its CRDs generated, and checked in its CI, the same way as etctl's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from etctl.cli._crdfiles import check_manifests, write_manifests
from etctl.cli._registry import ENTRY_POINT_GROUP, discover

__all__ = ["add_parser", "command"]


def add_parser(commands: Any, summary: str) -> argparse.ArgumentParser:
    """Declare ``etctl crds`` on the subcommands of the ``etctl`` parser.

    ``summary`` is its line in ``etctl --help``.
    """
    parser: argparse.ArgumentParser = commands.add_parser(
        "crds",
        help=summary,
        description="Write one YAML file per CRD of every registered job kind, or check them.",
    )
    parser.add_argument("out_dir", nargs="?", default=Path("manifests/base/crds"), type=Path)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the files differ from the generator"
    )
    parser.set_defaults(handler=command)
    return parser


def command(args: argparse.Namespace) -> int:
    """Run ``etctl crds``; returns the exit status."""
    resources = discover().custom_resources()
    if not resources:
        print(f"no custom resources registered under {ENTRY_POINT_GROUP}", file=sys.stderr)  # noqa: T201
        return 1
    if args.check:
        problems = check_manifests(args.out_dir, resources)
        for problem in problems:
            print(problem, file=sys.stderr)  # noqa: T201
        if problems:
            print(f"run: etctl crds {args.out_dir}", file=sys.stderr)  # noqa: T201
        return 1 if problems else 0
    for path in write_manifests(args.out_dir, resources):
        print(path)  # noqa: T201
    return 0
