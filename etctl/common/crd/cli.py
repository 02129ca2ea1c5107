"""The CRD generator's command line: write the CRD files, or check that they are current."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from etctl.common.crd.files import check_manifests, discover_resources, write_manifests
from etctl.common.crd.resource import ENTRY_POINT_GROUP

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the CRDs, or check that the committed ones are current."""
    parser = argparse.ArgumentParser(
        prog="python -m etctl.common.crd", description="Generate CRD manifests."
    )
    parser.add_argument("out_dir", nargs="?", default="manifests/crds", type=Path)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the files differ from the generator"
    )
    args = parser.parse_args(argv)
    resources = discover_resources()
    if not resources:
        print(f"no custom resources registered under {ENTRY_POINT_GROUP}", file=sys.stderr)  # noqa: T201
        return 1
    if args.check:
        problems = check_manifests(args.out_dir, resources)
        for problem in problems:
            print(problem, file=sys.stderr)  # noqa: T201
        if problems:
            print("run: python -m etctl.common.crd " + str(args.out_dir), file=sys.stderr)  # noqa: T201
        return 1 if problems else 0
    for path in write_manifests(args.out_dir, resources):
        print(path)  # noqa: T201
    return 0
