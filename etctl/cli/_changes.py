"""What changed between two looks at a job, each difference in a few words.

:func:`changes` compares two :class:`~etctl.cli._jobview.Snapshot` values and describes each
difference (a pod went from ``ContainerCreating`` to ``Running``, a scaler moved to its ``Joining``
step, the hostfile gained a worker, an Event was recorded), in a stable order: the job, then pods
by name, scalers by name, files, and Events in the order they happened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from etctl.cli._jobview import (
    EventView,
    FileView,
    JobView,
    PodView,
    ScalerView,
    Snapshot,
    empty,
)
from etctl.cli._timeline import Tone

__all__ = ["Change", "changes"]

_GOOD_PHASES = frozenset({"Running", "Succeeded"})
_BAD_PHASES = frozenset({"Failed"})


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between two looks: what changed and how."""

    subject: str
    what: str
    tone: Tone = Tone.PLAIN


def _phase_tone(phase: str) -> Tone:
    if phase in _GOOD_PHASES:
        return Tone.GOOD
    if phase in _BAD_PHASES:
        return Tone.BAD
    return Tone.PLAIN


def _pod_tone(status: str) -> Tone:
    if status == "Running":
        return Tone.GOOD
    if status in ("Terminating", "Completed"):
        return Tone.WARN
    if status in ("Failed", "Evicted", "Error", "OOMKilled") or "BackOff" in status:
        return Tone.BAD
    return Tone.PLAIN


def _membership(label: str, before: Sequence[str], after: Sequence[str]) -> str:
    added = [f"+{name}" for name in after if name not in before]
    removed = [f"-{name}" for name in before if name not in after]
    return f"{label} {' '.join(added + removed)}"


def _replica_changes(subject: str, before: JobView, after: JobView, arrow: str) -> list[Change]:
    out = []
    for replica in after.replicas:
        old = before.replica(replica.replica_type)
        known = old is not None and None not in (old.desired, replica.desired)
        if known and old is not None and replica.desired != old.desired:
            what = f"{replica.replica_type} replicas {old.desired} {arrow} {replica.desired}"
            out.append(Change(subject, what))
    return out


def _job_changes(
    subject: str, before: JobView | None, after: JobView | None, arrow: str
) -> list[Change]:
    if after is None:
        return [Change(subject, "deleted", Tone.WARN)] if before is not None else []
    if before is None:
        out = [Change(after.subject, "created")]
        before = JobView(kind=after.kind, name=after.name, phase="", replicas=after.replicas)
    else:
        out = []
    subject = after.subject
    if after.phase != before.phase:
        what = (
            f"phase {before.phase} {arrow} {after.phase}"
            if before.phase
            else f"phase {after.phase}"
        )
        outcome = after.outcome
        if outcome is not None and outcome.type == after.phase == "Failed" and outcome.message:
            what += f": {outcome.message}"
        out.append(Change(subject, what, _phase_tone(after.phase)))
    out += _replica_changes(subject, before, after, arrow)
    if set(after.targets) != set(before.targets):
        out.append(Change(subject, _membership("workers", before.targets, after.targets)))
    if set(after.members) != set(before.members):
        out.append(Change(subject, _membership(after.members_in, before.members, after.members)))
    return out


def _pod_changes(before: PodView | None, after: PodView | None, arrow: str) -> list[Change]:
    pod = after or before
    assert pod is not None
    subject = f"pod/{pod.name}"
    if after is None:
        return [Change(subject, "deleted", Tone.WARN)]
    where = f" on {after.node}" if after.node and (before is None or not before.node) else ""
    if before is None:
        return [Change(subject, f"created, {after.status}{where}", _pod_tone(after.status))]
    out = []
    if after.status != before.status:
        what = f"{before.status} {arrow} {after.status}{where}"
        out.append(Change(subject, what, _pod_tone(after.status)))
    if after.restarts > before.restarts:
        out.append(Change(subject, f"restarted ({after.restarts} in all)", Tone.WARN))
    return out


def _scaler_changes(
    before: ScalerView | None, after: ScalerView | None, arrow: str
) -> list[Change]:
    scaler = after or before
    assert scaler is not None
    if after is None:
        return [Change(scaler.subject, "deleted", Tone.WARN)]
    out = [] if before is not None else [Change(after.subject, "created")]
    previous_step = before.step if before is not None else ""
    if after.step != previous_step:
        what = (
            f"step {previous_step} {arrow} {after.step}" if previous_step else f"step {after.step}"
        )
        out.append(Change(after.subject, what))
    if after.chosen and (before is None or not before.chosen):
        verb = "adds" if after.kind == "ScaleOut" else "removes"
        out.append(Change(after.subject, f"{verb} {', '.join(after.chosen)}"))
    if after.outcome is not None and (before is None or before.outcome is None):
        kind, reason, message = after.outcome
        tone = Tone.GOOD if kind == "ScaleSucceeded" else Tone.BAD
        out.append(Change(after.subject, f"{kind} ({reason}): {message}", tone))
    return out


def _lines(content: str | None) -> list[str]:
    return [line for line in (content or "").splitlines() if line.strip()]


def _file_changes(before: FileView | None, after: FileView | None) -> list[Change]:
    view = after or before
    assert view is not None
    old = _lines(before.content if before is not None else None)
    new = _lines(after.content if after is not None else None)
    if old == new:
        return []
    if not new:
        return [Change(view.subject, f"{view.key} removed", Tone.WARN)]
    added = [f"+{line}" for line in new if line not in old]
    removed = [f"-{line}" for line in old if line not in new]
    if not added and not removed:
        return [Change(view.subject, f"{view.key} reordered")]
    return [Change(view.subject, f"{view.key} {' '.join(added + removed)}")]


def _event_changes(before: Mapping[str, EventView], after: Mapping[str, EventView]) -> list[Change]:
    out = []
    for name, event in after.items():
        old = before.get(name)
        if old is not None and old.count >= event.count:
            continue
        repeats = f" (x{event.count})" if event.count > 1 else ""
        tone = Tone.WARN if event.type == "Warning" else Tone.PLAIN
        what = f"{event.type} {event.reason}: {event.message}{repeats}"
        out.append(Change(event.subject, what, tone))
    return out


def changes(
    before: Snapshot | None, after: Snapshot, subject: str, *, arrow: str = "->"
) -> list[Change]:
    """What differs from ``before`` (None: nothing seen yet) to ``after``, in a stable order.

    Args:
        before: the previous look, or None for the first one.
        after: the new look.
        subject: the job's ``<kind>/<name>`` (the subject of its deletion).
        arrow: how a transition is drawn (``->``, or a Unicode arrow on a terminal).
    """
    old = before or empty()
    out = _job_changes(subject, old.job, after.job, arrow)
    for name in sorted(set(old.pods) | set(after.pods)):
        if old.pods.get(name) != after.pods.get(name):
            out += _pod_changes(old.pods.get(name), after.pods.get(name), arrow)
    for key in sorted(set(old.scalers) | set(after.scalers)):
        if old.scalers.get(key) != after.scalers.get(key):
            out += _scaler_changes(old.scalers.get(key), after.scalers.get(key), arrow)
    if after.job is not None:  # a deleted job's files are not read: its deletion says it all
        for key in [*old.files, *(k for k in after.files if k not in old.files)]:
            out += _file_changes(old.files.get(key), after.files.get(key))
    out += _event_changes(old.events, after.events)
    return out
