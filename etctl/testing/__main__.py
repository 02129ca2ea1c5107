"""``python -m etctl.testing``: serve the embedded API server until interrupted.

Writes a kubeconfig for it and prints the URL once the server listens, so scripts can wait for
that line before running ``kubectl``. The simulated kubelet and scheduler run by default (three
nodes; ``--nodes`` and the ``--node-*`` flags shape them, ``--no-kubelet`` turns them off), so
pods are scheduled, run, and answer ``kubectl logs`` and ``kubectl exec``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from etctl.log import configure
from etctl.testing._apiserver.server import ApiServer
from etctl.testing._kubelet import KubeletConfig

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m etctl.testing",
        description="Serve an in-process Kubernetes API server on 127.0.0.1 until interrupted.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    parser.add_argument(
        "--kubeconfig", type=Path, default=None, help="write a kubeconfig for the server here"
    )
    parser.add_argument(
        "--crds",
        type=Path,
        action="append",
        default=[],
        help="a CRD file or directory to serve (repeatable)",
    )
    parser.add_argument("--log-level", default="warning", help="log level (default: warning)")
    kubelet = parser.add_argument_group("simulated kubelet")
    kubelet.add_argument(
        "--no-kubelet", action="store_true", help="store pods but never schedule or run them"
    )
    kubelet.add_argument("--nodes", type=int, default=3, help="how many nodes (default: 3)")
    kubelet.add_argument("--node-cpu", default="8", help="allocatable CPU per node (default: 8)")
    kubelet.add_argument(
        "--node-memory", default="32Gi", help="allocatable memory per node (default: 32Gi)"
    )
    kubelet.add_argument("--node-pods", type=int, default=110, help="pods per node (default: 110)")
    kubelet.add_argument(
        "--node-gpus", type=int, default=0, help="nvidia.com/gpu per node (default: 0)"
    )
    kubelet.add_argument(
        "--scheduler-name",
        action="append",
        default=[],
        help="schedule only pods with this schedulerName (repeatable; default: every pod)",
    )
    return parser


def _kubelet_config(args: argparse.Namespace) -> KubeletConfig | None:
    if args.no_kubelet:
        return None
    return KubeletConfig.uniform(
        args.nodes,
        cpu=args.node_cpu,
        memory=args.node_memory,
        pods=args.node_pods,
        gpus=args.node_gpus,
        scheduler_names=frozenset(args.scheduler_name) if args.scheduler_name else None,
    )


async def _serve(
    port: int, kubeconfig: Path | None, crds: list[Path], kubelet: KubeletConfig | None
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with ApiServer(port=port, crds=crds, kubelet=kubelet) as server:
        if kubeconfig is not None:
            server.write_kubeconfig(kubeconfig)
        print(server.url, flush=True)  # noqa: T201 - the CLI's one line of output
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Run the server; returns the process exit status."""
    args = _parser().parse_args(argv)
    configure(level=args.log_level)
    try:
        kubelet = _kubelet_config(args)
    except ValueError as exc:
        print(f"bad kubelet options: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    try:
        asyncio.run(_serve(args.port, args.kubeconfig, args.crds, kubelet))
    except OSError as exc:
        print(f"cannot serve: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
