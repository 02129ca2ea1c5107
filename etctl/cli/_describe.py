"""A job's state as text, the way ``kubectl describe`` lays it out: ``etctl status``'s output.

:func:`describe_job` renders a :class:`~etctl.cli._jobview.Snapshot` as labelled fields and
sections: the job's kind, phase and age, its conditions, its replica types (desired by the spec,
counted by the status), its elastic membership, its pods, its scalers, the files its kind
publishes (each with where its pods read it, and its content), and the latest :data:`MAX_EVENTS`
Events about all of these. A section with nothing in it says ``<none>``, as kubectl does.

Ages are worded as kubectl words them (``45s``, ``3m12s``, ``2d5h``) from the ``now`` given, so
the output is a function of the snapshot and that instant.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from etctl.cli._jobview import Snapshot

__all__ = ["MAX_EVENTS", "age", "describe_job"]

_FIELD_WIDTH = 12
_INDENT = "  "
MAX_EVENTS = 30
"""The most recent Events shown; a job of hundreds of pods has thousands (kubectl get events)."""


def _parse(stamp: str) -> datetime | None:
    if not stamp:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _pair(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}{small}{small_unit}" if small else f"{big}{big_unit}"


def age(stamp: str, now: datetime) -> str:
    """How long ago ``stamp`` (RFC 3339) was, as kubectl's AGE column words it; ``<unknown>``."""
    then = _parse(stamp)
    if then is None:
        return "<unknown>"
    seconds = max(int((now - then).total_seconds()), 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        text = f"{seconds}s"
    elif minutes < 10:
        text = _pair(minutes, "m", seconds % 60, "s")
    elif hours < 3:
        text = f"{minutes}m"
    elif hours < 8:
        text = _pair(hours, "h", minutes % 60, "m")
    elif days < 2:
        text = f"{hours}h"
    elif days < 8:
        text = _pair(days, "d", hours % 24, "h")
    else:
        text = f"{days}d"
    return text


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """An aligned table, indented; the last column is not padded."""
    if not rows:
        return [f"{_INDENT}<none>"]
    widths = [len(h) for h in headers]
    for row in rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [cell.ljust(widths[i]) for i, cell in enumerate(cells[:-1])]
        return (_INDENT + "   ".join([*padded, cells[-1]])).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def _field(label: str, value: str) -> str:
    return f"{(label + ':').ljust(_FIELD_WIDTH)}  {value}"


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "<none>"


def describe_job(
    seen: Snapshot, *, namespace: str, api_version: str, now: datetime | None = None
) -> list[str]:
    """The lines ``etctl status`` prints for a job (``seen.job`` must not be None).

    Args:
        seen: the look at the job.
        namespace: its namespace.
        api_version: its ``apiVersion`` (``kubeflow.org/v1``).
        now: the instant ages are measured from (default: the current time).
    """
    job = seen.job
    if job is None:
        msg = "describe_job needs a job"
        raise ValueError(msg)
    now = now or datetime.now(UTC)
    lines = [
        _field("Name", job.name),
        _field("Namespace", namespace),
        _field("Kind", f"{job.kind} ({api_version})"),
        _field("Phase", job.phase or "<none yet>"),
        _field("Age", age(job.created, now)),
    ]
    outcome = job.outcome
    if outcome is not None and outcome.message:
        lines.append(_field("Message", outcome.message))
    lines.append("Conditions:")
    lines += _table(
        ["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"],
        [[c.type, c.status, c.reason, age(c.since, now), c.message] for c in job.conditions],
    )
    lines.append("Replicas:")
    lines += _table(
        ["TYPE", "DESIRED", "ACTIVE", "SUCCEEDED", "FAILED"],
        [
            [
                r.replica_type,
                "?" if r.desired is None else str(r.desired),
                str(r.active),
                str(r.succeeded),
                str(r.failed),
            ]
            for r in job.replicas
        ],
    )
    if job.targets or job.members:
        lines.append("Membership:")
        lines.append(f"{_INDENT}{_field('Targets', _names(job.targets))}")
        lines.append(f"{_INDENT}{_field('Hostfile', _names(job.members))}")
    lines.append("Pods:")
    lines += _table(
        ["NAME", "TYPE", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"],
        [
            [
                p.name,
                p.replica_type or "-",
                p.ready,
                p.status,
                str(p.restarts),
                age(p.created, now),
                p.ip or "<none>",
                p.node or "<none>",
            ]
            for p in seen.pods.values()
        ],
    )
    if seen.scalers:
        lines.append("Scalers:")
        lines += _table(
            ["NAME", "STEP", "WORKERS", "RESULT"],
            [
                [
                    s.subject,
                    s.step or "<waiting>",
                    ", ".join(s.chosen) or "-",
                    f"{s.outcome[0]} ({s.outcome[1]})" if s.outcome else "-",
                ]
                for s in seen.scalers.values()
            ],
        )
    for published in seen.files.values():
        reader = f"{published.reader}:" if published.reader else "every pod at "
        lines.append(
            f"File {published.key} ({published.subject}, read by {reader}{published.path}):"
        )
        if published.content is None:
            lines.append(f"{_INDENT}<not written yet>")
        else:
            shown = published.content.splitlines() or ["<empty>"]
            lines += [f"{_INDENT}{line}" for line in shown]
    events = list(seen.events.values())
    recent = events[-MAX_EVENTS:]
    hidden = len(events) - len(recent)
    lines.append(
        f"Events ({hidden} earlier not shown; kubectl get events lists them):"
        if hidden
        else "Events:"
    )
    lines += _table(
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        [
            [
                age(e.last, now),
                e.type,
                e.reason,
                e.subject,
                f"{e.message} (x{e.count})" if e.count > 1 else e.message,
            ]
            for e in recent
        ],
    )
    return lines
