"""How many workers a launcher/worker job's objects can hold, within the cluster's size limits.

Such a job keeps its membership in two objects whose size grows with every worker:

* its ConfigMap: each worker is a line of every hostfile (and of a listing discover_hosts.sh);
  the values may total ``max_data_bytes`` (1 MiB, kube-apiserver's ``MaxSecretSize``);
* the job itself: its status lists every worker by name, in as many fields as the kind records
  (targets and members); the whole object may be at most ``max_object_bytes`` (1.5 MiB, etcd's
  default ``--max-request-bytes``).

(In kubexec mode the launcher's Role names each worker once too: fewer bytes per worker than a
ConfigMap, under a larger limit, so the ConfigMap always binds first.)

A kind gives its :class:`MemberCost` (the bytes of its ConfigMap and of its job for a membership,
exact or an upper estimate) and :func:`membership_problem` says why a membership would not fit,
with the worker count, the bytes it needs and the limit, or None; the kind fails a job that could
not start and the scaling machinery fails a scale-out that would cross a limit with it, instead of
retrying a write the cluster refuses forever. :func:`most_fitting` gives the largest count that fits
(a kind's schema bound on its replicas).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from etctl.common import SizeLimits, json_size

__all__ = [
    "STATUS_HEADROOM",
    "MemberCost",
    "Names",
    "job_bytes",
    "membership_problem",
    "most_fitting",
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
    def firsts(cls, names: Sequence[str]) -> Callable[[int], Names]:
        """The first ``n`` of ``names``, for any ``n`` up to ``len(names)``.

        The ``grow`` of :func:`membership_problem` for a listed membership: the byte sums are
        computed once, so each count the search tries costs nothing.
        """
        sums = [0, *accumulate(len(n.encode()) for n in names)]
        return lambda n: cls(n, sums[n])

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


@dataclass(frozen=True, slots=True)
class MemberCost:
    """What a membership costs a kind's objects, in bytes.

    Attributes:
        config: the bytes of the ConfigMap's values for a membership.
        job: an upper estimate of the job's stored size once its status lists a membership.
    """

    config: Callable[[Names], int]
    job: Callable[[Names], int]


def job_bytes(document: Mapping[str, Any], names: Names, *, lists: Sequence[str]) -> int:
    """An upper estimate of a job's stored size once each status field of ``lists`` holds ``names``.

    Args:
        document: the job as JSON (its current status included; ``lists`` are replaced).
        names: the membership.
        lists: the status fields (JSON names) that list every member.
    """
    dumped = dict(document)
    status = dict(dumped.get("status") or {})
    for field in lists:
        status[field] = []
    dumped["status"] = status
    # Each list holds every name quoted, with a comma between two.
    per_list = names.total + 3 * names.count
    return json_size(dumped) + len(lists) * per_list + STATUS_HEADROOM


def most_fitting(fits: Callable[[int], bool], high: int) -> int:
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
    names: Names,
    *,
    cost: MemberCost,
    config_map: str,
    limits: SizeLimits,
    grow: Callable[[int], Names],
) -> str | None:
    """Why a job cannot hold the membership ``names``, or None when it fits.

    Args:
        names: the whole membership.
        cost: what a membership costs the kind's objects.
        config_map: the ConfigMap's name (messages).
        limits: the cluster's size limits.
        grow: the membership of ``n`` workers along the same naming, to say how many fit.
    """
    data = cost.config(names)
    if data > limits.max_data_bytes:
        most = most_fitting(lambda n: cost.config(grow(n)) <= limits.max_data_bytes, names.count)
        return (
            f"{names.count} workers need {data} bytes of hostfiles in ConfigMap "
            f"{config_map}, over the {limits.max_data_bytes} bytes a ConfigMap may hold; "
            f"at most {most} workers fit (shorter job names fit more)"
        )
    size = cost.job(names)
    if size > limits.max_object_bytes:
        most = most_fitting(lambda n: cost.job(grow(n)) <= limits.max_object_bytes, names.count)
        return (
            f"{names.count} workers make the job's status about {size} bytes, over the "
            f"{limits.max_object_bytes} bytes the cluster stores in one object; at most {most} "
            "workers fit"
        )
    return None
