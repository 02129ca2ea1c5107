"""How many workers a TrainingJob's objects can hold, within the cluster's size limits.

A TrainingJob keeps its membership in two objects whose size grows with every worker:

* the ConfigMap ``<job>-config``: each worker is a line of the Horovod hostfile
  (``<pod>:<slots>``) and one of the DeepSpeed hostfile (``<pod> slots=<slots>``), beside the
  fixed ``discover_hosts.sh`` and ``kubexec.sh``; its values may total ``max_data_bytes``
  (1 MiB, kube-apiserver's ``MaxSecretSize``);
* the job itself: ``status.targetWorkers`` and ``status.currentWorkers`` list every worker by
  name; the whole object may be at most ``max_object_bytes`` (1.5 MiB, etcd's default
  ``--max-request-bytes``).

(In kubexec mode the launcher's Role names each worker once too: fewer bytes per worker than the
ConfigMap, under a larger limit, so the ConfigMap always binds first.)

:func:`membership_problem` says why a membership would not fit, with the worker count, the bytes it
needs and the limit, or None; the operator fails a job that could not start
(``TrainingJobInvalid``) and a scale-out that would cross a limit (``MembershipTooLarge``) with it,
instead of retrying a write the cluster refuses forever. Sizes are exact for the ConfigMap and an
upper estimate for the job (its JSON as parsed, plus :data:`STATUS_HEADROOM` for the conditions,
replica statuses and managed fields that change after the check).

:data:`MAX_WORKERS` is the most workers *any* TrainingJob can have: the ConfigMap of the shortest
possible names (a one-character job, one slot) at 1 MiB. It is the CRD schema's ``maximum`` on
``replicas`` and ``maxReplicas``, so a count no job could ever hold is refused when it is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from etctl.common import MAX_DATA_BYTES, SizeLimits, json_size
from etctl.jobs.trainingjob._hostfile import discover_hosts_script, kubexec_script
from etctl.jobs.trainingjob._names import config_name, worker_prefix

if TYPE_CHECKING:
    from etctl.jobs.trainingjob._api import TrainingJob

__all__ = [
    "MAX_WORKERS",
    "STATUS_HEADROOM",
    "Names",
    "config_data_bytes",
    "job_bytes",
    "membership_problem",
]

STATUS_HEADROOM = 4096
"""Bytes the job may grow by after the check (conditions, replica statuses, managed fields)."""


@dataclass(frozen=True, slots=True)
class Names:
    """A membership as its size depends on it: how many names and their total bytes.

    Attributes:
        count: the number of workers.
        total: the bytes of all their names together.
    """

    count: int
    total: int

    @classmethod
    def of(cls, names: Sequence[str]) -> Names:
        """The given names."""
        return cls(len(names), sum(len(n.encode()) for n in names))

    @classmethod
    def sequential(cls, prefix: str, count: int) -> Names:
        """``<prefix>0`` to ``<prefix><count-1>``, without building them."""
        total = len(prefix.encode()) * count
        digits, low = 1, 0
        while low < count:
            high = min(count, 10**digits)
            total += digits * (high - low)
            digits, low = digits + 1, high
        return cls(count, total)


def config_data_bytes(names: Names, slots: int, container: str) -> int:
    """The bytes of the ConfigMap's values for ``names`` (exact: what validation counts)."""
    per_worker = len(f":{slots}\n") + len(f" slots={slots}\n")
    fixed = len(discover_hosts_script().encode()) + len(kubexec_script(container).encode())
    return 2 * names.total + per_worker * names.count + fixed


def job_bytes(job: TrainingJob, names: Names) -> int:
    """An upper estimate of the job's stored size once both worker lists hold ``names``."""
    dumped = job.model_dump(mode="json", by_alias=True, exclude_none=True)
    status = dumped.setdefault("status", {})
    status["targetWorkers"] = []
    status["currentWorkers"] = []
    # Each list holds every name quoted, with a comma between two.
    per_list = names.total + 3 * names.count
    return json_size(dumped) + 2 * per_list + STATUS_HEADROOM


def _most(fits: Callable[[int], bool], high: int) -> int:
    """The largest ``n`` in ``[0, high]`` for which ``fits(n)`` holds (it holds up to a point)."""
    low = 0
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def membership_problem(
    job: TrainingJob,
    names: Names,
    *,
    slots: int,
    container: str,
    limits: SizeLimits,
    grow: Callable[[int], Names] | None = None,
) -> str | None:
    """Why ``job`` cannot hold the membership ``names``, or None when it fits.

    Args:
        job: the job.
        names: the whole membership.
        slots: slots per worker.
        container: the worker container (kubexec.sh names it).
        limits: the cluster's size limits.
        grow: the membership of ``n`` workers along the same naming, to say how many fit
            (default: ``<job>-worker-0`` onwards).
    """
    name = job.metadata.name
    of = grow or (lambda n: Names.sequential(worker_prefix(name), n))
    data = config_data_bytes(names, slots, container)
    if data > limits.max_data_bytes:
        most = _most(
            lambda n: config_data_bytes(of(n), slots, container) <= limits.max_data_bytes,
            names.count,
        )
        return (
            f"{names.count} workers need {data} bytes of hostfiles in ConfigMap "
            f"{config_name(name)}, over the {limits.max_data_bytes} bytes a ConfigMap may hold; "
            f"at most {most} workers fit (shorter job names fit more)"
        )
    size = job_bytes(job, names)
    if size > limits.max_object_bytes:
        most = _most(lambda n: job_bytes(job, of(n)) <= limits.max_object_bytes, names.count)
        return (
            f"{names.count} workers make the job's status about {size} bytes, over the "
            f"{limits.max_object_bytes} bytes the cluster stores in one object; at most {most} "
            "workers fit"
        )
    return None


def _max_workers() -> int:
    shortest = worker_prefix("a")
    return _most(
        lambda n: config_data_bytes(Names.sequential(shortest, n), 1, "") <= MAX_DATA_BYTES,
        MAX_DATA_BYTES,
    )


MAX_WORKERS = _max_workers()
"""The most workers any TrainingJob's ConfigMap can list (one-character job name, one slot)."""
