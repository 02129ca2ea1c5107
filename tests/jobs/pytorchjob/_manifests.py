"""PyTorchJob example manifests and what each member of a job sees, for the end-to-end tests.

Tests run PyTorchJobs on :func:`tests._cluster.cluster` with ``PyTorchJobPlugin()`` and
``kubelet=sandboxed_nodes(tmp_path)``: the kubelet runs init containers, execs and a cluster DNS,
so a test asks a member itself what its environment says and what a name resolves to.
"""

from __future__ import annotations

from typing import Any

from tests._cluster import Cluster
from tests.schema_support import EXAMPLES, load_yaml

__all__ = ["ECHO", "NS", "echo", "environment", "example", "resolves", "worker"]

NS = "default"
ECHO = "elastic-example-echo"
"""The name of training-operator's elastic echo example."""


def example(name: str) -> dict[str, Any]:
    """An example manifest of ``examples/pytorchjob/``."""
    return load_yaml(EXAMPLES / "pytorchjob" / name)


def echo(**policy: Any) -> dict[str, Any]:
    """training-operator's elastic echo example, its elasticPolicy updated with ``policy``."""
    document = example("elastic-echo.yaml")
    document["spec"]["elasticPolicy"].update(policy)
    return document


def worker(job: str, index: int) -> str:
    """``<job>-worker-<index>``."""
    return f"{job}-worker-{index}"


async def environment(env: Cluster, pod: str) -> dict[str, str]:
    """The ``PET_*``, ``MASTER_*``, ``WORLD_SIZE`` and ``RANK`` variables a member's shell sees."""
    out = await env.run(pod, "env")
    found = {}
    for line in out.splitlines():
        name, sep, value = line.partition("=")
        if sep and (name.startswith(("PET_", "MASTER_")) or name in ("WORLD_SIZE", "RANK")):
            found[name] = value
    return found


async def resolves(env: Cluster, pod: str, host: str) -> str:
    """The address ``host`` resolves to from inside ``pod`` (``getent hosts``), or ``""``."""
    result = await env.client.exec(env.ns, pod, ["getent", "hosts", host], timeout=10)
    if result.exit_code != 0:
        return ""
    return result.stdout.decode().split()[0] if result.stdout.strip() else ""
