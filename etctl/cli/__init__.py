"""The ``etctl`` command: one entry point, one module per subcommand.

* ``etctl run``: the operator (:mod:`etctl.cli._run`);
* ``etctl manifests``: the install manifests for the enabled plugins (:mod:`etctl.cli._manifests`);
* ``etctl crds``: the CRD files of every registered job kind (:mod:`etctl.cli._crds`);
* ``etctl sandbox``: an embedded cluster with the operator, and ``--demo`` of an elastic job
  (:mod:`etctl.cli._sandbox`);
* ``etctl status`` and ``etctl watch``: a job of any registered kind on any cluster, shown once
  or followed until it finishes (:mod:`etctl.cli._status`).

In Python, :func:`run_sandbox` starts the same sandbox as ``etctl sandbox`` (with
:class:`SandboxOptions`), hands a :class:`Sandbox` to your coroutine once the operator's caches
have synced, and stops everything when it returns. They are loaded on first use, so ``etctl run``
never imports the embedded API server.

Exit statuses follow the usual conventions, always with a one-line message and never a traceback:

* 0: success, a SIGTERM drain that finished its work included;
* 1: a failure while running: a cache that cannot sync, a lost lease, or a shutdown whose grace
  period ran out (or that a second signal cut short) while reconciles still ran or Events were
  unsent, which were cancelled or dropped (controller-runtime's manager returns an error then);
* 2: a usage error (an unknown flag, a bad value in a flag or an ``ETCTL_`` variable).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from etctl._version import __version__
from etctl.cli import _crds as crds
from etctl.cli import _manifests as manifests
from etctl.cli import _run as run
from etctl.cli import _sandbox as sandbox
from etctl.cli import _status as status

if TYPE_CHECKING:
    from etctl.cli._embedded import Sandbox, run_sandbox
    from etctl.cli._sandbox_options import SandboxOptions

__all__ = ["Sandbox", "SandboxOptions", "build_parser", "main", "run_sandbox"]

_LAZY = {
    "Sandbox": "etctl.cli._embedded",
    "run_sandbox": "etctl.cli._embedded",
    "SandboxOptions": "etctl.cli._sandbox_options",
}


def __getattr__(name: str) -> Any:
    """Load the sandbox's names on first use (they bring the embedded API server with them)."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib  # noqa: PLC0415

    return getattr(importlib.import_module(module), name)


def build_parser() -> argparse.ArgumentParser:
    """The ``etctl`` parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="etctl",
        description="A Kubernetes operator framework for elastic distributed training.",
    )
    parser.add_argument("--version", action="version", version=f"etctl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run.add_parser(commands)
    manifests.add_parser(commands)
    crds.add_parser(commands)
    sandbox.add_parser(commands)
    status.add_parsers(commands)
    for command in commands.choices.values():
        # Each command reports its own unknown arguments (see main).
        command.set_defaults(command_parser=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``etctl`` with ``argv`` (default: the process arguments); returns the exit status."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse would report them with the top-level usage ("etctl: error: ..."); the
        # command's own usage and prefix ("etctl run: error: ...") say where they went wrong.
        command_parser: argparse.ArgumentParser = args.command_parser
        command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        status: int = args.handler(args)
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":  # pragma: no cover - ``python -m etctl.cli`` goes through __main__
    sys.exit(main())
