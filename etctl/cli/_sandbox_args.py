"""The flags of ``etctl sandbox``: declared once, parsed at parse time, turned into options.

Every value is checked by argparse itself (a bad one is argparse's usual exit 2, with the flag
named and what was expected), so :func:`sandbox_options` only assembles what already parsed. The
operator's own settings are not flags here: the sandbox runs it as ``etctl run`` would with its
defaults, every plugin enabled and leader election off, on loopback addresses.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from etctl._apimachinery.quantity import amount as quantity_amount
from etctl.cli._sandbox_options import DEMO_KINDS, DemoOptions, SandboxOptions
from etctl.cli._values import (
    parse_bind_address,
    parse_duration,
    parse_port,
    parse_positive_int,
)

__all__ = [
    "add_sandbox_arguments",
    "demo_options",
    "parse_delay",
    "parse_port",
    "parse_resource_quantity",
    "sandbox_options",
]

T = TypeVar("T")


def parse_count(text: str) -> int:
    """An integer of at least 0."""
    value = text.strip()
    if not value.isdigit():
        msg = f"{text!r} is not a whole number (0 or more)"
        raise ValueError(msg)
    return int(value)


_ZERO = re.compile(r"(0+(\.0*)?|\.0+)(ms|s|m|h)?")


def parse_delay(text: str) -> float:
    """A duration that may be zero: ``0``, ``0s``, ``500ms``, ``1s``, ``1m30s``."""
    value = text.strip()
    if _ZERO.fullmatch(value):
        return 0.0
    if value.startswith("-"):
        msg = f"{text!r} must not be negative"
        raise ValueError(msg)
    return parse_duration(value)


def parse_resource_quantity(text: str) -> str:
    """A positive resource quantity (``8``, ``7500m``, ``32Gi``), returned as written."""
    value = text.strip()
    amount = quantity_amount(value)
    if amount <= 0:
        msg = f"{text!r} must be more than zero"
        raise ValueError(msg)
    return value


def _checked(parse: Callable[[str], T]) -> Callable[[str], T]:
    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__.removeprefix("parse_")
    return convert


def add_sandbox_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``etctl sandbox`` on ``parser``."""
    defaults = SandboxOptions()
    demo = DemoOptions()
    parser.add_argument(
        "--demo",
        nargs="?",
        const=demo.kind,
        default=None,
        choices=DEMO_KINDS,
        metavar="KIND",
        help=(
            "play the demo of an elastic job, then stop and exit: trainingjob (the default), "
            "mpijob or pytorch"
        ),
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="PATH",
        help="write the kubeconfig here (default: a file in a temporary directory, printed)",
    )
    parser.add_argument(
        "--port",
        type=_checked(parse_port),
        default=defaults.port,
        metavar="PORT",
        help="the API server's port on 127.0.0.1 (default: a free one)",
    )
    nodes = parser.add_argument_group("simulated nodes")
    nodes.add_argument(
        "--nodes",
        type=_checked(parse_positive_int),
        default=defaults.nodes,
        metavar="N",
        help=f"how many nodes (default: {defaults.nodes})",
    )
    nodes.add_argument(
        "--node-cpu",
        type=_checked(parse_resource_quantity),
        default=defaults.node_cpu,
        metavar="QUANTITY",
        help=f"allocatable CPU per node (default: {defaults.node_cpu})",
    )
    nodes.add_argument(
        "--node-memory",
        type=_checked(parse_resource_quantity),
        default=defaults.node_memory,
        metavar="QUANTITY",
        help=f"allocatable memory per node (default: {defaults.node_memory})",
    )
    nodes.add_argument(
        "--node-gpus",
        type=_checked(parse_count),
        default=defaults.node_gpus,
        metavar="N",
        help=f"allocatable nvidia.com/gpu per node (default: {defaults.node_gpus})",
    )
    nodes.add_argument(
        "--node-pods",
        type=_checked(parse_positive_int),
        default=defaults.node_pods,
        metavar="N",
        help=f"pods per node (default: {defaults.node_pods})",
    )
    nodes.add_argument(
        "--pod-start-delay",
        type=_checked(parse_delay),
        default=defaults.pod_start_delay,
        metavar="DURATION",
        help=(
            "how long each container takes to start, as an image pull would; 0 starts them at "
            f"once (default: {defaults.pod_start_delay:g}s)"
        ),
    )
    operator = parser.add_argument_group("operator")
    operator.add_argument(
        "--metrics-bind-address",
        type=_checked(parse_bind_address),
        default=defaults.metrics_bind_address,
        metavar="ADDR",
        help="address of /metrics; 0 disables it (default: a free loopback port)",
    )
    operator.add_argument(
        "--health-probe-bind-address",
        type=_checked(parse_bind_address),
        default=defaults.health_probe_bind_address,
        metavar="ADDR",
        help="address of /healthz and /readyz; 0 disables them (default: a free loopback port)",
    )
    operator.add_argument(
        "--webhooks",
        action=argparse.BooleanOptionalAction,
        default=defaults.webhooks,
        help="run the operator's admission webhooks, so kubectl apply refuses a bad job as on a "
        "cluster (default: on)",
    )
    operator.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default=None,
        help="the operator's log level, on standard error (default: info; warning with --demo)",
    )
    operator.add_argument(
        "--log-format",
        choices=("console", "json", "auto"),
        default="auto",
        help="console, json, or auto: console on a terminal, json otherwise (default: auto)",
    )
    parser.add_argument(
        "--step-timeout",
        type=_checked(parse_duration),
        default=demo.step_timeout,
        metavar="DURATION",
        help=f"--demo: how long each step may take (default: {demo.step_timeout:g}s)",
    )


def sandbox_options(args: argparse.Namespace) -> SandboxOptions:
    """The sandbox's options from parsed flags."""
    return SandboxOptions(
        port=args.port,
        nodes=args.nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        node_gpus=args.node_gpus,
        node_pods=args.node_pods,
        pod_start_delay=args.pod_start_delay,
        kubeconfig=args.kubeconfig,
        metrics_bind_address=args.metrics_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        webhooks=args.webhooks,
    )


def demo_options(args: argparse.Namespace) -> DemoOptions:
    """The demo's options from parsed flags."""
    return DemoOptions(step_timeout=args.step_timeout, kind=args.demo or DemoOptions().kind)
