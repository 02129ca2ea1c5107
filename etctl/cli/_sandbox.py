"""``etctl sandbox``: a whole cluster with the operator in one process; ``--demo`` shows it at work.

``etctl sandbox`` runs the embedded API server, the simulated kubelet on a few nodes and the
operator (:mod:`etctl.cli._embedded`), writes a kubeconfig, prints how to use it with kubectl, and
serves until SIGINT or SIGTERM; then it stops the operator gracefully, then the server, and exits
0. Nothing needs to be installed besides etctl, and no cluster is touched.

``etctl sandbox --demo`` runs the same sandbox, plays the demo of an elastic TrainingJob on it
(:mod:`etctl.cli._demo`), tears everything down and exits: 0 when every step happened, 1 when one
did not within ``--step-timeout`` (with the reason), 128 + the signal's number when interrupted.

Output: what a person reads goes to standard output (the usage lines, or the demo's timeline,
coloured and animated only on a terminal); the operator's log goes to standard error (``info`` by
default, ``warning`` during the demo so that it does not interleave with the timeline). Exit
status 2 is a usage error (a bad flag value), with a one-line message and never a traceback; 1 is a
sandbox that could not run (a port in use, an operator that failed); 141 (128 + SIGPIPE) means
standard output was closed by its reader (``etctl sandbox --demo | head``), after a clean stop.
"""

from __future__ import annotations

import argparse
from typing import Any

from etctl.cli._sandbox_args import add_sandbox_arguments

__all__ = ["add_parser", "command"]

_EPILOG = """\
Without --demo, the sandbox serves until SIGINT or SIGTERM, then stops cleanly and exits 0
(a second signal stops it at once). With --demo, it exits 0 once the demo is done, 1 if a step
did not happen in time, 128 + the signal's number if interrupted. Exit status 2 is a bad flag.
"""


def add_parser(commands: Any, summary: str) -> argparse.ArgumentParser:
    """Declare ``etctl sandbox`` on the subcommands of the ``etctl`` parser.

    ``summary`` is its line in ``etctl --help``.
    """
    parser: argparse.ArgumentParser = commands.add_parser(
        "sandbox",
        help=summary,
        description=(
            "Run an embedded Kubernetes API server, a simulated kubelet and the operator in one "
            "process, with a kubeconfig for kubectl; --demo plays an elastic TrainingJob on it."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_sandbox_arguments(parser)
    parser.set_defaults(handler=command)
    return parser


def command(args: argparse.Namespace) -> int:
    """Run ``etctl sandbox``; returns the exit status."""
    # Imported here, not at the top: every ``etctl`` command (``etctl run`` in an operator's pod
    # included) declares this subcommand, and only this one needs the embedded API server.
    from etctl.cli import _sandbox_session as sandbox_session  # noqa: PLC0415

    return sandbox_session.run(args)
