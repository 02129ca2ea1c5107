"""How many workers a TrainingJob's objects can hold (the check is the shared layer's).

A TrainingJob lists every worker in its ConfigMap ``<job>-config`` (a line of the Horovod hostfile
and one of the DeepSpeed hostfile each, beside the fixed ``discover_hosts.sh`` and ``kubexec.sh``)
and in its status (``targetWorkers`` and ``currentWorkers``). :func:`membership_problem` says why
a membership would not fit (:func:`etctl.jobs.launcher.membership_problem`); the operator fails a
job that could not start (``TrainingJobInvalid``) and a scale-out that would cross a limit
(``MembershipTooLarge``) with it. Sizes are exact for the ConfigMap and an upper estimate for the
job.

:data:`MAX_WORKERS` is the most workers *any* TrainingJob can have: the ConfigMap of the shortest
possible names (a one-character job, one slot) at 1 MiB. It is the CRD schema's ``maximum`` on
``replicas`` and ``maxReplicas``, so a count no job could ever hold is refused when it is written.

This module reads a job only as the pydantic model it is, so the API module can take
:data:`MAX_WORKERS` from it.
"""

from __future__ import annotations

from collections.abc import Callable

from etctl.common import MAX_DATA_BYTES, KubeObjectModel, SizeLimits
from etctl.jobs import launcher as shared
from etctl.jobs.launcher import STATUS_HEADROOM, MemberCost, Names, kubexec_script
from etctl.jobs.trainingjob._layout import discover_hosts_script
from etctl.jobs.trainingjob._names import config_name, worker_prefix

__all__ = [
    "MAX_WORKERS",
    "STATUS_HEADROOM",
    "Names",
    "config_data_bytes",
    "job_bytes",
    "membership_problem",
]

MEMBER_LISTS = ("targetWorkers", "currentWorkers")
"""The status fields that list every worker."""


def config_data_bytes(names: Names, slots: int, container: str) -> int:
    """The bytes of the ConfigMap's values for ``names`` (exact: what validation counts)."""
    per_worker = len(f":{slots}\n") + len(f" slots={slots}\n")
    fixed = len(discover_hosts_script().encode()) + len(kubexec_script(container).encode())
    return 2 * names.total + per_worker * names.count + fixed


def job_bytes(job: KubeObjectModel, names: Names) -> int:
    """An upper estimate of the job's stored size once both worker lists hold ``names``."""
    dumped = job.model_dump(mode="json", by_alias=True, exclude_none=True)
    return shared.job_bytes(dumped, names, lists=MEMBER_LISTS)


def membership_problem(
    job: KubeObjectModel,
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
    cost = MemberCost(
        config=lambda n: config_data_bytes(n, slots, container),
        job=lambda n: job_bytes(job, n),
    )
    return shared.membership_problem(
        names,
        cost=cost,
        config_map=config_name(name),
        limits=limits,
        grow=grow or (lambda n: Names.sequential(worker_prefix(name), n)),
    )


def _max_workers() -> int:
    shortest = worker_prefix("a")
    return shared.most_fitting(
        lambda n: config_data_bytes(Names.sequential(shortest, n), 1, "") <= MAX_DATA_BYTES,
        MAX_DATA_BYTES,
    )


MAX_WORKERS = _max_workers()
"""The most workers any TrainingJob's ConfigMap can list (one-character job name, one slot)."""
