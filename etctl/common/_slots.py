"""Pod slots: which pods a replica type should have, and how the observed pods fill them.

A *slot* (:class:`~etctl.common.ReplicaRef`) is one pod a replica type wants: its type,
index and name. Without a :class:`~etctl.common.PlansReplicas` plugin the slots of a replica
type with ``replicas: n`` are indices ``0..n-1`` named ``<job>-<type lower>-<index>`` (kubeflow's
``GenGeneralName``); an elastic plugin plans its own (a membership, not a range).

:func:`fill` matches the observed pods of one replica type to its slots **by name**, the identity
the controller gives every pod it creates. The result partitions the pods and the slots:

* ``live``: slots whose pod exists and is not being deleted;
* ``terminating``: slots whose pod is being deleted; such a slot is neither live nor free, because
  its name is still taken (a pod is recreated under the same name only once the old one is gone);
* ``missing``: slots with no pod at all;
* ``outside``: live pods that no slot wants (an index at or above ``replicas`` after a scale down,
  a member an elastic plan dropped); the controller deletes them.

Completed slots are remembered by index (:func:`format_indexes`, the ``completedIndexes`` form of
batch/v1 Job), so a slot whose pod succeeded and was then removed is known to be done.

Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from etctl.common._plugin import ReplicaRef
from etctl.runtime import ObjectView, objects

__all__ = [
    "ReplicaPods",
    "default_plan",
    "fill",
    "format_indexes",
    "parse_indexes",
    "slot_name",
]


def slot_name(job_name: str, replica_type: str, index: int) -> str:
    """``<job>-<replica type lower>-<index>``: the pod and service name of a slot."""
    return f"{job_name}-{replica_type.lower()}-{index}"


def default_plan(job_name: str, replica_type: str, replicas: int) -> tuple[ReplicaRef, ...]:
    """Slots ``0..replicas-1`` of a replica type (none for a negative count)."""
    return tuple(
        ReplicaRef(replica_type, index, slot_name(job_name, replica_type, index))
        for index in range(max(replicas, 0))
    )


@dataclass(frozen=True, slots=True)
class ReplicaPods:
    """How the observed pods of one replica type fill its slots (see the module docstring).

    Attributes:
        plan: the slots wanted, in plan order.
        live: the pod of each live slot, by slot name.
        terminating: names of slots whose pod is being deleted.
        missing: slots without a pod, in plan order.
        outside: live pods no slot wants.
    """

    plan: tuple[ReplicaRef, ...]
    live: dict[str, ObjectView]
    terminating: frozenset[str]
    missing: tuple[ReplicaRef, ...]
    outside: tuple[ObjectView, ...]

    def live_refs(self) -> list[tuple[ReplicaRef, ObjectView]]:
        """The live slots with their pods, in plan order."""
        return [(ref, self.live[ref.name]) for ref in self.plan if ref.name in self.live]


def fill(plan: Sequence[ReplicaRef], pods: Iterable[ObjectView]) -> ReplicaPods:
    """Match ``pods`` (all of one replica type, terminating ones included) to the ``plan``."""
    wanted = {ref.name for ref in plan}
    live: dict[str, ObjectView] = {}
    terminating: set[str] = set()
    outside: list[ObjectView] = []
    for pod in pods:
        name = objects.name(pod)
        if objects.is_terminating(pod):
            if name in wanted:
                terminating.add(name)
        elif name in wanted:
            live[name] = pod
        else:
            outside.append(pod)
    missing = tuple(ref for ref in plan if ref.name not in live and ref.name not in terminating)
    outside.sort(key=objects.name)
    return ReplicaPods(
        plan=tuple(plan),
        live=live,
        terminating=frozenset(terminating),
        missing=missing,
        outside=tuple(outside),
    )


def format_indexes(indexes: Iterable[int]) -> str:
    """Indexes as batch/v1 Job's ``completedIndexes``: sorted, runs collapsed (``0-2,5``)."""
    ordered = sorted(set(indexes))
    runs: list[str] = []
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        first, last = ordered[start], ordered[end]
        runs.append(str(first) if first == last else f"{first}-{last}")
        start = end + 1
    return ",".join(runs)


def parse_indexes(text: str | None) -> set[int]:
    """The indexes of a :func:`format_indexes` string; malformed parts are ignored."""
    found: set[int] = set()
    for part in (text or "").split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            continue
        low, high = int(first), int(last) if last else int(first)
        found.update(range(low, min(high, low + 100_000) + 1))
    return found
