"""How many workers an MPIJob's objects can hold, within the cluster's size limits.

An MPIJob lists every worker twice in its ConfigMap ``<job>-config`` (a ``hostfile`` line per
target, a ``discover_hosts.sh`` line per Running and Ready member: at most every target) and
twice in its status (``targetWorkers``, ``currentWorkers``). :func:`config_bytes` is the exact
size of the ConfigMap's values for a membership, given the host suffix the job's workers get
(``.<job>.<namespace>.svc[.<domain>]`` in ssh mode, nothing in kubexec mode), the slots and the
hostfile's format; the launcher/worker layer's :func:`~etctl.jobs.launcher.membership_problem`
turns it into a message when it does not fit.

:data:`MAX_WORKERS` is the most workers *any* MPIJob can list: the ConfigMap of the shortest
possible names (a one-character job in a one-character namespace, one slot, ``host:slots`` lines)
at 1 MiB. It is the CRD schema's ``maximum`` of ``Worker.replicas`` and
``elasticPolicy.maxReplicas``, so a count no job could hold is refused when it is written (on
create, update and ``/scale``).
"""

from __future__ import annotations

from etctl.common import MAX_DATA_BYTES
from etctl.jobs.launcher import Names, most_fitting

__all__ = ["ECHO", "MAX_WORKERS", "SHEBANG", "config_bytes"]

SHEBANG = "#!/bin/sh\n"
ECHO = "echo "


def config_bytes(names: Names, *, host_suffix: str, slots: int, colon: bool, fixed: int = 0) -> int:
    """The bytes of the ConfigMap's values when every one of ``names`` is listed.

    Args:
        names: the membership.
        host_suffix: what a worker's host adds to its pod name.
        slots: slots per worker.
        colon: the hostfile's lines are ``host:slots`` (else ``host slots=N``).
        fixed: bytes that do not depend on the membership (kubexec.sh, a launcher's lines).
    """
    suffix = len(host_suffix.encode())
    hostfile_line = suffix + len(f":{slots}\n" if colon else f" slots={slots}\n")
    discover_line = len(ECHO) + suffix + len(f":{slots}\n")
    return 2 * names.total + names.count * (hostfile_line + discover_line) + len(SHEBANG) + fixed


def _max_workers() -> int:
    def fits(count: int) -> bool:
        names = Names.sequential("a-worker-", count)
        size = config_bytes(names, host_suffix=".a.a.svc", slots=1, colon=True)
        return size <= MAX_DATA_BYTES

    return most_fitting(fits, MAX_DATA_BYTES)


MAX_WORKERS = _max_workers()
"""The most workers any MPIJob's ConfigMap can list (see the module docstring)."""
