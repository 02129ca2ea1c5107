"""``etctl status``'s layout: kubectl's ages, empty sections, and the most recent events."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from etctl.cli._describe import MAX_EVENTS, age, describe_job
from etctl.cli._jobview import EventView, JobView, Snapshot

NOW = datetime(2026, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ago", "expected"),
    [
        (timedelta(seconds=5), "5s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=3, seconds=12), "3m12s"),
        (timedelta(minutes=5), "5m"),
        (timedelta(minutes=75), "75m"),
        (timedelta(hours=5, minutes=3), "5h3m"),
        (timedelta(hours=20), "20h"),
        (timedelta(days=3, hours=4), "3d4h"),
        (timedelta(days=30), "30d"),
    ],
)
def test_ages_are_worded_as_kubectl_words_them(ago: timedelta, expected: str) -> None:
    stamp = (NOW - ago).isoformat().replace("+00:00", "Z")
    assert age(stamp, NOW) == expected


def test_an_unreadable_time_is_unknown() -> None:
    assert age("", NOW) == "<unknown>"
    assert age("yesterday", NOW) == "<unknown>"


def test_empty_sections_say_none_and_only_recent_events_are_shown() -> None:
    job = JobView(kind="TFJob", name="tf", phase="", created="2026-01-09T23:59:00Z")
    events = {
        f"e{i}": EventView(
            name=f"e{i}",
            type="Normal",
            reason=f"R{i}",
            message="m",
            subject="tfjob/tf",
            count=2 if i == 0 else 1,
            last="2026-01-09T23:59:30Z",
        )
        for i in range(MAX_EVENTS + 2)
    }
    seen = Snapshot(job=job, pods={}, scalers={}, events=events)
    lines = describe_job(seen, namespace="ns", api_version="kubeflow.org/v1", now=NOW)
    assert lines[:5] == [
        "Name:         tf",
        "Namespace:    ns",
        "Kind:         TFJob (kubeflow.org/v1)",
        "Phase:        <none yet>",
        "Age:          60s",
    ]
    assert lines[5:10] == ["Conditions:", "  <none>", "Replicas:", "  <none>", "Pods:"]
    start = lines.index("Events (2 earlier not shown; kubectl get events lists them):")
    shown = lines[start + 2 :]
    assert len(shown) == MAX_EVENTS
    assert shown[0].split()[2] == "R2"
    assert shown[-1].split()[2] == f"R{MAX_EVENTS + 1}"
    with pytest.raises(ValueError, match="needs a job"):
        describe_job(Snapshot(job=None, pods={}, scalers={}), namespace="n", api_version="v")
