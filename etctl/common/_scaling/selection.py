"""Choices a scaler needs made: which scaler runs next, which workers go, which sizes are allowed.

* **Order** (:func:`fifo`): pending scalers run one at a time, oldest first. et-operator ran the
  *newest* one, so a stream of requests could starve an old one forever. ``creationTimestamp``
  has whole seconds only, so scalers created in the same second are ordered by
  ``status.queuedResourceVersion``: the scaler's ``resourceVersion`` as the operator first read
  it, before any write of its own. On an etcd-backed API server every write takes a larger
  version than the last, so that is the order of creation (unless a scaler was changed before it
  was adopted, which moves it back to that change). Versions are opaque by the API's contract:
  they are compared only when both are integers, and the uid, random, says nothing of order;
  without comparable versions the tie is broken by name, then kind.
* **Victims** of a ScaleIn by count (:func:`pick_victims`): failed workers first, then workers not
  running yet (pending, or without a pod), then running ones from the highest index down; within
  each group the highest index goes first. Removing a worker that does no work costs nothing.
* **Names** a ScaleIn lists must all be workers of the job now (:func:`foreign_names`): another
  job's pod, an unknown name or a worker already gone rejects the scaler, and the message names
  them.
* **Bounds** (:func:`bounds_problem`): a scaler that would leave fewer than ``minReplicas`` or
  more than ``maxReplicas`` workers fails, and the message names the bound; a desired size
  written through ``/scale`` is clamped into the bounds instead (:func:`clamp`).

Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from etctl.common._scaling.membership import member_index

__all__ = [
    "QueuedScaler",
    "bounds_problem",
    "clamp",
    "fifo",
    "foreign_names",
    "pick_victims",
]


@dataclass(frozen=True, slots=True)
class QueuedScaler:
    """What the order of scalers depends on."""

    kind: str
    name: str
    created: datetime | None
    version: str | None = None
    """``status.queuedResourceVersion``: breaks ties of ``created``."""


def fifo(scalers: Iterable[QueuedScaler]) -> list[QueuedScaler]:
    """``scalers`` oldest first (see the module docstring; no creation time sorts first)."""
    floor = datetime.min
    never = float("inf")

    def key(scaler: QueuedScaler) -> tuple[datetime, float, str, str]:
        created = scaler.created.replace(tzinfo=None) if scaler.created else floor
        version = scaler.version
        order = float(int(version)) if version and version.isdigit() else never
        return created, order, scaler.name, scaler.kind

    return sorted(scalers, key=key)


def _group(phase: str) -> int:
    if phase == "Failed":
        return 0
    if phase == "Running":
        return 2
    return 1


def pick_victims(
    prefix: str, targets: Sequence[str], phases: Mapping[str, str], count: int
) -> list[str]:
    """The ``count`` workers a ScaleIn by count removes (see the module docstring).

    Args:
        prefix: the member name prefix.
        targets: the job's workers.
        phases: pod phase by worker name; a worker without a pod is missing from it.
        count: how many to remove.
    """

    def key(name: str) -> tuple[int, int, str]:
        index = member_index(prefix, name)
        return _group(phases.get(name, "")), -(index if index is not None else -1), name

    return sorted(targets, key=key)[: max(count, 0)]


def foreign_names(targets: Sequence[str], names: Iterable[str]) -> list[str]:
    """The ``names`` that are not among ``targets``, in the order given."""
    wanted = set(targets)
    return [name for name in names if name not in wanted]


def bounds_problem(
    *, size: int, change: int, low: int, high: int | None, kind: str, job: str
) -> str | None:
    """Why resizing a job of ``size`` workers by ``change`` crosses a bound, or None."""
    after = size + change
    if change < 0 and after < low:
        return (
            f"removing {-change} of the {size} workers of {kind} {job} would leave {after}, "
            f"below its minReplicas {low}"
        )
    if change > 0 and high is not None and after > high:
        return (
            f"adding {change} workers to the {size} of {kind} {job} would make {after}, "
            f"above its maxReplicas {high}"
        )
    return None


def clamp(replicas: int, low: int, high: int | None) -> int:
    """``replicas`` moved into ``[low, high]``."""
    if high is not None:
        replicas = min(replicas, high)
    return max(replicas, low)
