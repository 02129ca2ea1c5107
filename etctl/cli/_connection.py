"""How a command that reads a cluster connects to it, with kubectl's options and defaults.

``--kubeconfig``, ``--context`` and ``-n/--namespace`` mean what they mean to kubectl:

* the cluster: the named kubeconfig file (a ``:``-separated list merges as kubectl merges it);
  else, inside a pod with no ``--context``, the pod's service account; else ``$KUBECONFIG`` or
  ``~/.kube/config``;
* the namespace: ``-n``; else the kubeconfig context's namespace; else, in a pod, the pod's own
  namespace; else ``default``.

Invariants: the namespace follows the same choice as the cluster (a kubeconfig's context is never
read for a connection made from the service account); every request has the
``--request-timeout``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from etctl._version import __version__
from etctl.cli._values import parse_namespace
from etctl.runtime import (
    SERVICE_ACCOUNT_NAMESPACE,
    Client,
    ClientOptions,
    context_namespace,
    in_cluster_available,
)

__all__ = ["Connection", "add_connection_options", "connect"]

_DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class Connection:
    """An open client and the namespace a command works in."""

    client: Client
    namespace: str


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """Declare ``--kubeconfig``, ``--context``, ``-n/--namespace`` and ``--request-timeout``."""
    parser.add_argument(
        "--kubeconfig",
        default="",
        metavar="PATH",
        help="kubeconfig file (default: in a pod its service account, else $KUBECONFIG or "
        "~/.kube/config)",
    )
    parser.add_argument(
        "--context", default="", metavar="NAME", help="kubeconfig context (default: the current)"
    )
    parser.add_argument(
        "-n",
        "--namespace",
        type=parse_namespace,
        default=None,
        metavar="NS",
        help="the job's namespace (default: the context's, else the pod's, else default)",
    )
    parser.add_argument(
        "--request-timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long one request may take (default 30)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        msg = f"expected a positive number of seconds, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _pod_namespace() -> str:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


async def connect(args: argparse.Namespace, *, user_agent: str = "") -> Connection:
    """A client and namespace from the options of :func:`add_connection_options`.

    Raises:
        ConfigError: no usable kubeconfig, context or service account.
    """
    options = ClientOptions(
        request_timeout=args.request_timeout,
        user_agent=user_agent or f"etctl/{__version__}",
    )
    kubeconfig: str | None = args.kubeconfig or None
    context = args.context or None
    if kubeconfig is None and context is None and in_cluster_available():
        client = await Client.in_cluster(options=options)
        default = _pod_namespace()
    else:
        client = await Client.from_kubeconfig(kubeconfig, context, options=options)
        default = context_namespace(kubeconfig, context)
    return Connection(client, args.namespace or default or _DEFAULT_NAMESPACE)
