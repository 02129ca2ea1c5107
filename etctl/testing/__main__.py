"""``python -m etctl.testing``: serve the embedded API server until interrupted.

Writes a kubeconfig for it and prints the URL once the server listens, so scripts can wait for
that line before running ``kubectl``. The simulated kubelet and scheduler run by default (three
nodes; ``--nodes`` and the ``--node-*`` flags shape them, ``--no-kubelet`` turns them off), so
pods are scheduled, run, and answer ``kubectl logs`` and ``kubectl exec``.

With ``--auth`` it authenticates tokens and enforces RBAC, as a cluster does (the kubeconfig it
writes is the administrator's), and serves the TokenRequest API for ServiceAccount tokens. It then
serves HTTPS (``--tls``, unless ``--no-tls``), with a certificate made at start that the kubeconfig
carries: kubectl sends a token only over TLS.
With ``--request-log FILE`` every request the server receives is appended to FILE as one JSON
line (its method, path and user agent, as it arrives), so a run of the test suite against it
(``ETCTL_TEST_KUBECONFIG``) can be checked from the server's side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

from etctl.log import configure
from etctl.testing._apiserver.authorization import AuthConfig
from etctl.testing._apiserver.propagation import WatchLatency
from etctl.testing._apiserver.requestlog import RequestRecord
from etctl.testing._apiserver.server import ApiServer
from etctl.testing._kubelet import KubeletConfig
from etctl.testing._tokenrequest import serve_token_requests

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
    parser.add_argument(
        "--request-log",
        type=Path,
        default=None,
        help="append every request to this file, one JSON object per line",
    )
    parser.add_argument(
        "--auth",
        action="store_true",
        help="authenticate tokens and enforce RBAC (the kubeconfig is the administrator's); "
        "ServiceAccount tokens come from the TokenRequest API (kubectl create token); "
        "implies --tls",
    )
    parser.add_argument(
        "--tls",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve HTTPS with a certificate made at start, which the kubeconfig carries "
        "(default: with --auth, as kubectl sends tokens only over TLS)",
    )
    realistic = WatchLatency.realistic()
    parser.add_argument(
        "--watch-delay",
        type=float,
        default=realistic.delay,
        help="seconds from a commit until its watch event goes out, as from a real server's "
        f"watch cache (default: {realistic.delay:g}; 0 with --watch-interval 0: during the commit)",
    )
    parser.add_argument(
        "--watch-interval",
        type=float,
        default=realistic.interval,
        help="seconds between the watch cache's dispatch rounds, the events due meanwhile going "
        f"out together (default: {realistic.interval:g})",
    )
    parser.add_argument(
        "--kubernetes-version",
        default="1.32",
        help="the release to model, 1.24 to 1.32 (default: 1.32): what /version says and how "
        "the server behaves where releases differ",
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


def _log_to(out: TextIO) -> Callable[[RequestRecord], None]:
    def write(record: RequestRecord) -> None:
        # Handed over as the request arrives: what the request says, not yet how it was answered.
        fields = {"method": record.method, "path": record.path, "user_agent": record.user_agent}
        out.write(json.dumps(fields, separators=(",", ":")) + "\n")
        out.flush()  # the file is read while the server runs

    return write


async def _serve(args: argparse.Namespace, kubelet: KubeletConfig | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    with ExitStack() as files:
        auth = AuthConfig() if args.auth else None
        tls = args.auth if args.tls is None else args.tls
        latency = WatchLatency(delay=args.watch_delay, interval=args.watch_interval)
        async with ApiServer(
            port=args.port,
            crds=args.crds,
            kubelet=kubelet,
            auth=auth,
            tls=tls,
            watch_latency=latency,
            kubernetes_version=args.kubernetes_version,
        ) as server:
            if auth is not None:
                serve_token_requests(server)
            if args.request_log is not None:
                out = files.enter_context(args.request_log.open("a", encoding="utf-8"))
                server.requests.subscribe(_log_to(out))
            if args.kubeconfig is not None:
                server.write_kubeconfig(args.kubeconfig)
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
        asyncio.run(_serve(args, kubelet))
    except OSError as exc:
        print(f"cannot serve: {exc}", file=sys.stderr)  # noqa: T201
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
