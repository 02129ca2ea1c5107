"""An elastic job's members: names, the plan pods are created from, those in use, replacements.

The members live in the job's status, in fields its plugin names (:class:`~etctl.common.Members`:
et-operator's ``targetWorkers``, ``currentWorkers`` and ``lastWorkerIndex`` for TrainingJob), and
only the scaling controller writes them:

* the **targets**: the pods the job should have. The job controller creates and deletes pods from
  this persisted list only, so every name is decided (and written) before a pod of that name
  exists, and an operator that crashes in between finds the decision, not a guess.
* the **current** members, those in use (a launcher's hostfile): targets whose pod runs, minus the
  members a scaler is removing (draining) or has not admitted yet (a scale-out's new members join
  all at once, when every one of them runs), in index order.
* the **last index**: the highest index ever used. New members (scale-out, replacements) get the
  next ones, so a name is not used twice: Horovod blacklists a host whose worker failed, and a new
  pod under that name would never be used.

Members are named ``<prefix><index>`` (``<job>-worker-<i>``), and a name has a length limit of 63
characters, for a reason each kind gives (``ElasticMembers.name_rule``: a TrainingJob worker's
Service is named like it, an MPIJob worker's hostname is its name; both are DNS labels). A
replacement takes the next index while its name fits; when it would not, it takes the lowest index
that left the job (not a target, no pod of it left, not chosen by a scaler), so that a running job
is never failed by a name it chose: a reused name may be one Horovod blacklisted (the new worker
may then get no work), which costs less than the job. When every name that fits is taken, the
member is not replaced until one frees up. A scale-out, which can be refused, never reuses a name:
it fails with ``NameTooLong``, and ``/scale`` asks only for the names that fit
(:func:`highest_fitting`). Everything here is pure.

Replacement rule: a member whose pod failed (under the kind's restart policy), or vanished or is
being deleted by someone else, is replaced by a worker under a new name. A target that never
became a member (it never ran while listed) and vanished is simply created again under its name:
no launcher ever knew it, so nothing blacklisted it. The plan the job controller creates pods from
(:func:`planned`) therefore leaves out missing members, so it never brings one back under its old
name while its replacement is being decided.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "NAME_MAX_LENGTH",
    "Replacement",
    "high_water",
    "highest_fitting",
    "initial_targets",
    "member_index",
    "member_name",
    "members",
    "new_names",
    "planned",
    "replace",
    "sort_members",
]

_INDEX = re.compile(r"(0|[1-9][0-9]*)")

NAME_MAX_LENGTH = 63
"""The longest member name: a DNS label (see the module docstring)."""


def member_index(prefix: str, name: str) -> int | None:
    """The index in ``<prefix><index>``, or None when ``name`` is not such a name."""
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix) :]
    return int(digits) if _INDEX.fullmatch(digits) else None


def member_name(prefix: str, index: int) -> str:
    """``<prefix><index>``."""
    return f"{prefix}{index}"


def sort_members(prefix: str, names: Iterable[str]) -> list[str]:
    """``names`` without duplicates, by index; names without one last, by name."""
    unique = set(names)
    indexed = sorted((i, n) for n in unique if (i := member_index(prefix, n)) is not None)
    others = sorted(n for n in unique if member_index(prefix, n) is None)
    return [n for _, n in indexed] + others


def high_water(prefix: str, last_index: int | None, *groups: Iterable[str]) -> int:
    """The highest index used so far: ``last_index`` and every index in ``groups`` (-1: none).

    Taking the maximum with the names at hand keeps the mark right even when a crash left a
    decision written in one object (a scaler's ``addPods``) and not yet in the job's status.
    """
    highest = last_index if last_index is not None else -1
    for group in groups:
        for name in group:
            index = member_index(prefix, name)
            if index is not None and index > highest:
                highest = index
    return highest


def highest_fitting(prefix: str, max_length: int = NAME_MAX_LENGTH) -> int:
    """The highest index whose name ``<prefix><index>`` has at most ``max_length`` characters.

    -1 when not even index 0 fits. New names after ``last_index`` fit as long as their index
    stays at or below it, so ``highest_fitting(prefix) - last_index`` more of them fit.
    """
    digits = max_length - len(prefix)
    return 10**digits - 1 if digits > 0 else -1


def new_names(prefix: str, last_index: int, count: int) -> list[str]:
    """``count`` names after ``last_index``."""
    return [member_name(prefix, last_index + offset) for offset in range(1, count + 1)]


def initial_targets(prefix: str, count: int) -> list[str]:
    """The targets of a new job: indices ``0..count-1``."""
    return [member_name(prefix, index) for index in range(max(count, 0))]


def members(
    prefix: str,
    targets: Sequence[str],
    running: Collection[str],
    *,
    leaving: Collection[str] = (),
    joining: Collection[str] = (),
) -> list[str]:
    """The hostfile: targets whose pod runs, minus ``leaving`` and ``joining``, by index."""
    return sort_members(
        prefix,
        (n for n in targets if n in running and n not in leaving and n not in joining),
    )


def planned(
    targets: Sequence[str], current: Collection[str], present: Collection[str]
) -> list[str]:
    """The targets the job controller may create pods for: missing members are left out.

    Args:
        targets: the job's targets.
        current: the job's current members.
        present: names of the job's pods that exist, being deleted or not.
    """
    return [name for name in targets if name in present or name not in current]


@dataclass(frozen=True, slots=True)
class Replacement:
    """One member replaced: the old name leaves the targets, the new one takes its place.

    ``reused`` says the new name was used before (no unused one fits the length limit).
    """

    old: str
    new: str
    reused: bool = False


def _reusable(
    prefix: str, last_index: int, max_length: int, unavailable: Collection[str]
) -> list[str]:
    """Used names that fit ``max_length`` and are free, lowest index first."""
    found = []
    for index in range(last_index + 1):
        name = member_name(prefix, index)
        if len(name) > max_length:
            break  # longer indices are longer names
        if name not in unavailable:
            found.append(name)
    return found


def replace(
    prefix: str,
    targets: Sequence[str],
    last_index: int,
    names: Iterable[str],
    *,
    max_length: int | None = None,
    taken: Collection[str] = (),
) -> tuple[list[str], int, list[Replacement]]:
    """Replace ``names`` (those among ``targets``) by new workers, in index order.

    Args:
        prefix: members are ``<prefix><index>``.
        targets: the job's targets.
        last_index: the highest index ever used.
        names: the members to replace.
        max_length: the longest name allowed (None: no limit). A replacement whose next index
            would make a longer name reuses the lowest free name that fits (see the module
            docstring), or is not made when none is free.
        taken: names that are not free although not targets (pods of them still exist, a
            scaler chose them).

    Returns:
        The new targets (each new name where its old one was), the new high-water mark and the
        replacements made.
    """
    doomed = [n for n in sort_members(prefix, names) if n in targets]
    swaps: list[Replacement] = []
    last = last_index
    unavailable = {*targets, *taken}
    spare: list[str] | None = None
    for old in doomed:
        fresh = member_name(prefix, last + 1)
        if max_length is None or len(fresh) <= max_length:
            swaps.append(Replacement(old, fresh))
            last += 1
            continue
        if spare is None:
            spare = _reusable(prefix, last, max_length, unavailable)
        if spare:
            swaps.append(Replacement(old, spare.pop(0), reused=True))
    by_old = {swap.old: swap.new for swap in swaps}
    new_targets = [by_old.get(name, name) for name in targets]
    return new_targets, last, swaps
