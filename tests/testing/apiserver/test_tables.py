"""Tables: built-in printers' columns and cells, custom columns, ages on the server clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from etctl.errors import BadRequest
from etctl.testing._apiserver.builtin import builtin_resources
from etctl.testing._apiserver.printers import human_duration
from etctl.testing._apiserver.registry import ResourceInfo
from etctl.testing._apiserver.services import ClusterIPAllocator
from etctl.testing._apiserver.tables import render_table

NOW = datetime(2026, 1, 1, 1, 0, 0, tzinfo=UTC)
BUILTINS = {(i.group, i.plural): i for i in builtin_resources(ClusterIPAllocator())}


def _info(plural: str, group: str = "") -> ResourceInfo:
    return BUILTINS[(group, plural)]


def _row(plural: str, obj: dict[str, Any], group: str = "") -> list[Any]:
    table = render_table(_info(plural, group), "v1", [obj], now=NOW)
    cells: list[Any] = table["rows"][0]["cells"]
    return cells


def _pod(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z", **meta},
        "spec": {"containers": [{"name": "c"}], "nodeName": "n1"},
        "status": status,
    }


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 300, "3h5m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 7200, "3d2h"),
        (40 * 86400, "40d"),
        (3 * 365 * 86400 + 86400, "3y1d"),
        (-5, "<invalid>"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_running_pod_row() -> None:
    status = {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "containerStatuses": [
            {"name": "c", "ready": True, "restartCount": 2, "state": {"running": {}}}
        ],
    }
    assert _row("pods", _pod(status)) == [
        "p",
        "1/1",
        "Running",
        "2",
        "60m",
        "10.0.0.5",
        "n1",
        "<none>",
        "<none>",
    ]


@pytest.mark.parametrize(
    ("state", "shown"),
    [
        ({"waiting": {"reason": "CrashLoopBackOff"}}, "CrashLoopBackOff"),
        ({"terminated": {"reason": "Completed", "exitCode": 0}}, "Completed"),
        ({"terminated": {"exitCode": 3}}, "ExitCode:3"),
        ({"terminated": {"exitCode": 137, "signal": 9}}, "Signal:9"),
    ],
)
def test_pod_status_comes_from_container_states(state: dict[str, Any], shown: str) -> None:
    status = {"phase": "Running", "containerStatuses": [{"name": "c", "state": state}]}
    assert _row("pods", _pod(status))[2] == shown


def test_pod_status_shows_init_progress_and_termination() -> None:
    init = _pod({"phase": "Pending", "initContainerStatuses": [{"state": {"running": {}}}]})
    init["spec"]["initContainers"] = [{"name": "i"}]
    assert _row("pods", init)[2] == "Init:0/1"
    deleting = _pod({"phase": "Running"}, deletionTimestamp="2026-01-01T00:59:00Z")
    assert _row("pods", deleting)[2] == "Terminating"


def test_node_service_and_event_rows() -> None:
    node = {
        "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.32.0"},
        },
    }
    assert _row("nodes", node)[:5] == [
        "n1",
        "Ready,SchedulingDisabled",
        "worker",
        "<unknown>",
        "v1.32.0",
    ]
    svc = {
        "metadata": {"name": "s"},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.9",
            "ports": [{"port": 80, "protocol": "TCP"}],
            "selector": {"app": "x"},
        },
    }
    assert _row("services", svc)[:5] == ["s", "ClusterIP", "10.96.0.9", "<none>", "80/TCP"]
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Started",
        "type": "Normal",
        "message": "started ",
        "lastTimestamp": "2026-01-01T00:59:00Z",
    }
    assert _row("events", event)[:4] == ["60s", "Normal", "Started", "pod/p"]
    assert _row("events", event)[6] == "started"


def _workload(spec: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    containers = [{"name": "a", "image": "i:1"}, {"name": "b", "image": "j"}]
    template = {"spec": {"containers": containers}}
    selector = {
        "matchLabels": {"tier": "web", "app": "x"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"},
        ],
    }
    return {
        "metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {**spec, "selector": selector, "template": template},
        "status": status,
    }


def test_deployment_and_replicaset_rows_as_kubectl_prints_them() -> None:
    wide = ["a,b", "i:1,j", "app=x,tier=web,env in (a,b),!canary"]
    status = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    deployment = render_table(
        _info("deployments", "apps"), "v1", [_workload({"replicas": 3}, status)], now=NOW
    )
    assert [c["name"] for c in deployment["columnDefinitions"]] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector",
    ]  # fmt: skip
    assert deployment["rows"][0]["cells"] == ["w", "2/3", 3, 2, "60m", *wide]
    replicaset = render_table(
        _info("replicasets", "apps"), "v1", [_workload({"replicas": 3}, status)], now=NOW
    )
    assert [c["name"] for c in replicaset["columnDefinitions"]][:5] == [
        "Name", "Desired", "Current", "Ready", "Age",
    ]  # fmt: skip
    assert replicaset["rows"][0]["cells"] == ["w", 3, 3, 2, "60m", *wide]
    # A new workload whose controller has written no status yet.
    assert _row("deployments", _workload({"replicas": 1}, {}), "apps")[1:4] == ["0/1", 0, 0]


def test_kinds_without_a_printer_show_name_and_created_at() -> None:
    table = render_table(
        _info("roles", "rbac.authorization.k8s.io"),
        "v1",
        [{"metadata": {"name": "r", "creationTimestamp": "2026-01-01T00:00:00Z"}}],
        now=NOW,
    )
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["r", "2026-01-01T00:00:00Z"]


def test_include_object_and_headers() -> None:
    obj = {"metadata": {"name": "c"}, "data": {"a": "1"}}
    full = render_table(_info("configmaps"), "v1", [obj], now=NOW, include_object="Object")
    assert full["rows"][0]["object"] is obj
    none = render_table(
        _info("configmaps"), "v1", [obj], now=NOW, include_object="None", headers=False
    )
    assert "object" not in none["rows"][0]
    assert "columnDefinitions" not in none
    with pytest.raises(BadRequest, match='unrecognized includeObject value: "Everything"'):
        render_table(_info("configmaps"), "v1", [obj], now=NOW, include_object="Everything")
