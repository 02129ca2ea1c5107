"""One run of ``etctl sandbox``: signals, the usage lines or the demo, and the exit status.

:func:`run` does what the command's flags ask: it starts the sandbox cluster
(:func:`etctl.cli._embedded.run_sandbox`) with SIGINT and SIGTERM handlers that stop it cleanly,
then either prints the usage lines and serves until a signal, or plays a demo (of a TrainingJob,
:func:`etctl.cli._demo.run_demo`, of an MPIJob, :func:`etctl.cli._demo_mpijob.run_mpijob_demo`,
or of a PyTorchJob, :func:`etctl.cli._demo_pytorchjob.run_pytorchjob_demo`)
on a :class:`~etctl.cli._timeline.Timeline` of standard output.
Failures become exit statuses with a one-line message on standard error, never a traceback (see
:mod:`etctl.cli._sandbox` for the table). A first signal stops the sandbox gracefully; a second one
is not caught, and stops the process at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TextIO

from etctl.cli import _demo, _demo_mpijob, _demo_pytorchjob
from etctl.cli._embedded import Sandbox, run_sandbox
from etctl.cli._sandbox_args import demo_options, sandbox_options
from etctl.cli._sandbox_options import DemoOptions, SandboxOptions
from etctl.cli._timeline import Timeline
from etctl.errors import ConfigError, EtctlError
from etctl.log import configure, get_logger

__all__ = ["run", "usage_lines"]

log = get_logger(__name__)

_Main = Callable[[Sandbox, asyncio.Event], Awaitable[int]]
"""What runs once the sandbox is ready: the demo, or waiting for the stop event."""


def run(args: argparse.Namespace) -> int:
    """Run ``etctl sandbox`` with parsed ``args``; returns the exit status."""
    configure(fmt=args.log_format, level=args.log_level or ("warning" if args.demo else "info"))
    options = demo_options(args)
    timeline = Timeline(sys.stdout, steps=_DEMOS[options.kind].steps)
    main = _demo_main(timeline, options) if args.demo else _serve_main(sys.stdout)
    try:
        status, received = asyncio.run(_run(sandbox_options(args), main))
        if args.demo:
            return _demo_status(timeline, status, received)
        print("etctl sandbox stopped", flush=True)  # noqa: T201
        return 0
    except BrokenPipeError:
        # Whoever read standard output has gone (``| head``): stop quietly, as a pipeline expects.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE.value
    except ConfigError as exc:
        return _error(str(exc), 2)
    except OSError as exc:
        return _error(f"cannot serve: {exc}", 1)
    except EtctlError as exc:
        return _error(f"the operator failed: {exc}", 1)


def usage_lines(sandbox: Sandbox) -> list[tuple[str, str]]:
    """What ``etctl sandbox`` prints once ready, as ``(label, value)`` lines."""
    options = sandbox.options
    gpus = f", {options.node_gpus} nvidia.com/gpu" if options.node_gpus else ""
    # Kinds several entries share (ScaleIn and ScaleOut) are named once.
    kinds = ", ".join(dict.fromkeys(r.kind for entry in sandbox.jobs for r in entry.resources))
    return [
        ("API server", sandbox.url),
        ("kubeconfig", str(sandbox.kubeconfig)),
        (
            "nodes",
            f"{', '.join(sandbox.node_names)} ({options.node_cpu} CPU, "
            f"{options.node_memory} memory{gpus} each)",
        ),
        ("operator", f"{', '.join(entry.name for entry in sandbox.jobs)} ({kinds})"),
        ("metrics", sandbox.metrics_url or "off"),
        ("probes", f"{sandbox.probes_url}/readyz" if sandbox.probes_url else "off"),
    ]


def _print_usage(sandbox: Sandbox, out: TextIO) -> None:
    timeline = Timeline(out, steps=0)
    timeline.title(
        "etctl sandbox is running: an embedded API server, simulated nodes and the operator"
    )
    for label, value in usage_lines(sandbox):
        timeline.field(label + ":", value)
    kubectl = f"kubectl --kubeconfig {sandbox.kubeconfig}"
    timeline.text("")
    timeline.text("Try it (the examples are in the etctl repository):")
    for line in (
        f"export KUBECONFIG={sandbox.kubeconfig}",
        "kubectl apply -f examples/trainingjob/training-job.yaml",
        "kubectl get trainingjobs,pods",
        "kubectl apply -f examples/trainingjob/scale-out.yaml",
        "kubectl exec elastic-training-launcher -- cat /etc/edl/hostfile",
        f"{kubectl} get trainingjobs   # without the export",
    ):
        timeline.text(f"  {line}")
    timeline.text("")
    timeline.text("Press Ctrl-C to stop.")


async def _serve(sandbox: Sandbox, out: TextIO, stop: asyncio.Event) -> int:
    _print_usage(sandbox, out)
    await stop.wait()
    return 0


@dataclass(frozen=True, slots=True)
class _Demo:
    """One demo: its number of steps, its title and what plays it."""

    steps: int
    title: str
    play: Callable[..., Awaitable[int]]


_DEMOS = {
    "trainingjob": _Demo(
        _demo.DEMO_STEPS,
        "etctl sandbox --demo: an elastic TrainingJob, scaled out, in and healed",
        _demo.run_demo,
    ),
    "mpijob": _Demo(
        _demo_mpijob.DEMO_STEPS,
        "etctl sandbox --demo mpijob: an elastic MPIJob, scaled, healed, suspended and resumed",
        _demo_mpijob.run_mpijob_demo,
    ),
    "pytorch": _Demo(
        _demo_pytorchjob.DEMO_STEPS,
        "etctl sandbox --demo pytorch: an elastic PyTorchJob, scaled out, healed and scaled in",
        _demo_pytorchjob.run_pytorchjob_demo,
    ),
}


def _demo_banner(sandbox: Sandbox, timeline: Timeline, title: str) -> None:
    timeline.title(title)
    for label, value in usage_lines(sandbox):
        timeline.field(label, value)


async def _play(sandbox: Sandbox, timeline: Timeline, options: DemoOptions) -> int:
    demo = _DEMOS[options.kind]
    _demo_banner(sandbox, timeline, demo.title)
    return await demo.play(sandbox, timeline, options=options)


async def _run(options: SandboxOptions, main: _Main) -> tuple[int | None, signal.Signals | None]:
    """Run the sandbox with signal handlers; returns main's status (None if a signal came first)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    received: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        log.info("signal received: stopping the sandbox", signal=sig.name)
        received.append(sig)
        stop.set()
        # A second signal is not caught any more: it stops the process at once.
        loop.remove_signal_handler(sig)

    handled = (signal.SIGINT, signal.SIGTERM)
    for sig in handled:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        status = await run_sandbox(options, lambda sandbox: main(sandbox, stop), stop=stop)
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    return status, (received[0] if received else None)


def _error(message: str, status: int) -> int:
    print(f"etctl sandbox: error: {message}", file=sys.stderr)  # noqa: T201
    return status


def _demo_main(timeline: Timeline, options: DemoOptions) -> _Main:
    def main(sandbox: Sandbox, _stop: asyncio.Event) -> Awaitable[int]:
        return _play(sandbox, timeline, options)

    return main


def _serve_main(out: TextIO) -> _Main:
    def main(sandbox: Sandbox, stop: asyncio.Event) -> Awaitable[int]:
        return _serve(sandbox, out, stop)

    return main


def _demo_status(timeline: Timeline, status: int | None, received: signal.Signals | None) -> int:
    """Close the demo's timeline; the exit status (128 + the signal's number if interrupted)."""
    timeline.text("")
    if status is None:
        timeline.failed("interrupted: the sandbox was stopped before the demo finished")
        return 128 + (received or signal.SIGINT).value
    if status == 0:
        timeline.finish(f"Demo finished, sandbox stopped: {timeline.elapsed():.1f}s in all")
    else:
        timeline.failed("the demo did not complete; the sandbox was stopped")
    return status
