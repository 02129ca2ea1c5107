"""The priority of a job key: running jobs, then the jobs furthest along, then the rest."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

from etctl.common._priority import RUNNING_PRIORITY, is_running, progress_first, running_pods
from etctl.runtime import PODS, ObjectView, Request, Resource, objects
from tests.common.simplejob import SIMPLEJOBS


def job(name: str, *conditions: tuple[str, str], **active: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "status": {
            "conditions": [{"type": kind, "status": status} for kind, status in conditions],
            "replicaStatuses": {rtype: {"active": count} for rtype, count in active.items()},
        },
    }


class Jobs:
    """A cache of jobs only (the CacheReader reads the priority makes)."""

    def __init__(self, *found: dict[str, Any], pods: Iterable[ObjectView] = ()) -> None:
        self.found = {objects.name(obj): obj for obj in found}
        self.pods = list(pods)

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> ObjectView | None:
        assert res == SIMPLEJOBS
        assert namespace == "ns"
        return self.found.get(name)

    def list(
        self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None
    ) -> builtins.list[ObjectView]:
        return list(self.found.values())

    def by_index(self, res: Resource, index: str, value: str) -> builtins.list[ObjectView]:
        return []

    def controlled_by(self, res: Resource, owner_uid: str) -> builtins.list[ObjectView]:
        assert res == PODS
        return [p for p in self.pods if (objects.controller_of(p) or {}).get("uid") == owner_uid]


def pod(job: str, index: int, phase: str) -> dict[str, Any]:
    owner = {"kind": "SimpleJob", "name": job, "uid": f"uid-{job}", "controller": True}
    return {
        "metadata": {"name": f"{job}-{index}", "namespace": "ns", "ownerReferences": [owner]},
        "status": {"phase": phase},
    }


def test_running_jobs_first_then_by_running_pods_then_the_rest() -> None:
    cache = Jobs(
        job("running", ("Created", "True"), ("Running", "True"), Worker=4),
        job("almost", ("Created", "True"), Worker=3, Launcher=0),
        job("starting", ("Created", "True"), Worker=1),
        job("new"),
        job("huge", ("Created", "True"), Worker=500),
        job("done", ("Running", "False"), ("Succeeded", "True"), Worker=2),
        job("failed-running", ("Running", "True"), ("Failed", "True"), Worker=2),
        job("restarting", ("Running", "False"), ("Restarting", "True"), Worker=2),
    )
    priority = progress_first(cache, SIMPLEJOBS)

    def of(name: str) -> int:
        return priority(Request("ns", name))

    assert of("running") == RUNNING_PRIORITY
    assert RUNNING_PRIORITY > of("huge") == RUNNING_PRIORITY - 1
    assert of("huge") > of("almost") == 3 > of("starting") == 1 > of("new") == 0
    assert of("done") == of("failed-running") == of("gone") == 0
    assert of("restarting") == 2


def test_pods_that_run_count_before_the_status_counted_them() -> None:
    # The status is counted by the controller this priority orders: in a burst it lags, and a
    # job whose pods all run must not wait with the new jobs for it.
    cache = Jobs(
        job("ran", ("Created", "True"), Worker=0),
        job("starting", ("Created", "True"), Worker=1),
        job("counted", ("Created", "True"), Worker=2),
        job("new"),
        pods=[
            *(pod("ran", i, "Running") for i in range(3)),
            *(pod("starting", i, "Running") for i in range(3)),
            pod("starting", 3, "Pending"),  # still starting: its place is its status's
            pod("counted", 0, "Running"),
            pod("new", 0, "Pending"),
        ],
    )
    priority = progress_first(cache, SIMPLEJOBS)
    names = ("ran", "starting", "counted", "new")
    assert [priority(Request("ns", name)) for name in names] == [3, 1, 2, 0]


def test_reading_a_job_never_trusts_its_shape() -> None:
    odd: dict[str, Any] = {
        "metadata": {"name": "odd"},
        "status": {
            "conditions": ["Running", {"type": "Running"}, None],
            "replicaStatuses": {"Worker": {"active": "4"}, "PS": {"active": True}, "x": []},
        },
    }
    assert not is_running(odd)
    assert running_pods(odd) == 0
    assert running_pods({"status": []}) == 0
