"""MPIJob example manifests, and Horovod's host discovery as its launcher runs it, for the tests.

Tests run MPIJobs on :func:`tests._cluster.cluster` with ``MPIJobPlugin()`` and
``kubelet=sandboxed_nodes(tmp_path)``: the kubelet really runs init containers and execs in
per-pod sandboxes, so a test runs the launcher's ``discover_hosts.sh`` with an exec, as Horovod
does.
"""

from __future__ import annotations

from typing import Any

from tests._cluster import Cluster
from tests.schema_support import EXAMPLES, load_yaml

__all__ = ["DISCOVER_HOSTS", "NS", "discover", "discovers", "example", "horovod_hosts"]

NS = "default"

DISCOVER_HOSTS = "/etc/mpi/discover_hosts.sh"


def example(name: str) -> dict[str, Any]:
    """An example manifest of ``examples/mpijob/``."""
    return load_yaml(EXAMPLES / "mpijob" / name)


def horovod_hosts(stdout: str, default_slots: int = 1) -> dict[str, int]:
    """Host discovery output parsed as Horovod's ``HostDiscoveryScript`` parses it.

    ``set(stdout.strip().split('\\n'))``; each line ``host:slots`` (``line.split(':')`` must give
    exactly two parts, or Horovod raises) or a bare ``host`` with the default slots.
    """
    hosts: dict[str, int] = {}
    if not stdout.strip():
        return hosts
    for line in set(stdout.strip().split("\n")):
        if ":" in line:
            host, slots = line.split(":")
            hosts[host] = int(slots)
        else:
            hosts[line] = default_slots
    return hosts


async def discover(env: Cluster, job: str) -> dict[str, int]:
    """Run the launcher's discover_hosts.sh as Horovod does and parse it as Horovod does."""
    return horovod_hosts(await env.run(f"{job}-launcher", "sh", DISCOVER_HOSTS))


async def discovers(env: Cluster, job: str, hosts: dict[str, int]) -> bool:
    """True once the launcher's discover_hosts.sh prints exactly ``hosts``."""
    return await discover(env, job) == hosts
