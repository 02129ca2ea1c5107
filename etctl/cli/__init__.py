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
have synced, and stops everything when it returns; ``registry=`` chooses the job kinds it runs
(a :class:`Registry`; :func:`discover` builds one from the ``etctl.jobs`` entry points). They are
loaded on first use, so ``etctl run`` never imports the embedded API server.

Exit statuses follow the usual conventions, always with a one-line message and never a traceback:

* 0: success, a SIGTERM drain that finished its work included;
* 1: a failure while running: a cache that cannot sync, a lost lease, or a shutdown whose grace
  period ran out (or that a second signal cut short) while reconciles still ran or Events were
  unsent, which were cancelled or dropped (controller-runtime's manager returns an error then);
* 2: a usage error (an unknown flag, a bad value in a flag or an ``ETCTL_`` variable).

Only the command being run is imported: ``etctl --help`` (and a usage error) comes from the table
of commands below, without loading the runtime, the job plugins or their dependencies.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from etctl._version import __version__

if TYPE_CHECKING:
    from etctl.cli._embedded import Sandbox, run_sandbox
    from etctl.cli._registry import Registry, discover
    from etctl.cli._sandbox_options import SandboxOptions

__all__ = [
    "Registry",
    "Sandbox",
    "SandboxOptions",
    "build_parser",
    "discover",
    "main",
    "run_sandbox",
]

_LAZY = {
    "Registry": "etctl.cli._registry",
    "discover": "etctl.cli._registry",
    "Sandbox": "etctl.cli._embedded",
    "run_sandbox": "etctl.cli._embedded",
    "SandboxOptions": "etctl.cli._sandbox_options",
}


def __getattr__(name: str) -> Any:
    """Load the sandbox's and the registry's names on first use (the sandbox brings its server)."""
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True, slots=True)
class _Command:
    """A subcommand: its name, the module that declares and runs it, its line in ``--help``.

    The module is imported only when the command is declared in full (it is the one being run, or
    :func:`build_parser` was asked for every command): ``etctl --help`` imports none of them, so it
    prints without loading the runtime, pydantic or the job plugins.

    Attributes:
        name: the subcommand.
        module: the module whose ``declare`` function adds it with all its arguments.
        summary: its line in ``etctl --help``.
        declare_with: the name of that function, called as ``f(commands, summary)``.
    """

    name: str
    module: str
    summary: str
    declare_with: str = "add_parser"

    def declare(self, commands: Any) -> argparse.ArgumentParser:
        """Add the command with all its arguments."""
        declare = getattr(importlib.import_module(self.module), self.declare_with)
        parser: argparse.ArgumentParser = declare(commands, self.summary)
        return parser

    def mention(self, commands: Any) -> argparse.ArgumentParser:
        """Add the command by name and summary only (enough for ``etctl --help``)."""
        parser: argparse.ArgumentParser = commands.add_parser(self.name, help=self.summary)
        return parser


_COMMANDS = (
    _Command("run", "etctl.cli._run", "run the operator"),
    _Command("manifests", "etctl.cli._manifests", "render the operator's install manifests"),
    _Command("crds", "etctl.cli._crds", "write or check the CRDs of the registered job kinds"),
    _Command(
        "sandbox",
        "etctl.cli._sandbox",
        "run an embedded cluster with the operator (--demo: show an elastic job)",
    ),
    _Command(
        "status",
        "etctl.cli._status",
        "show a job: its phase, replicas, pods, membership, files and events",
        "add_status_parser",
    ),
    _Command(
        "watch",
        "etctl.cli._status",
        "show a job, then every change until it finishes",
        "add_watch_parser",
    ),
)


def _parser(declared: str | None) -> argparse.ArgumentParser:
    """The ``etctl`` parser with ``declared`` (every command when ``None``) declared in full."""
    parser = argparse.ArgumentParser(
        prog="etctl",
        description="A Kubernetes operator framework for elastic distributed training.",
    )
    parser.add_argument("--version", action="version", version=f"etctl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        if declared is None or command.name == declared:
            command.declare(commands)
        else:
            command.mention(commands)
    for command_parser in commands.choices.values():
        # Each command reports its own unknown arguments (see main).
        command_parser.set_defaults(command_parser=command_parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The ``etctl`` parser with every subcommand."""
    return _parser(None)


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (its first positional argument), if it names one."""
    names = {command.name for command in _COMMANDS}
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in names else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``etctl`` with ``argv`` (default: the process arguments); returns the exit status."""
    args_list = sys.argv[1:] if argv is None else list(argv)
    # Only the command being run is declared in full (its module imported); without one, the
    # parser prints the help, the version or the usage error from the summaries alone.
    parser = _parser(_command_in(args_list) or "")
    args, unknown = parser.parse_known_args(args_list)
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
