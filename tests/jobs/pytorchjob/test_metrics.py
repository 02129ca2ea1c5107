"""elasticPolicy.metrics: what Kubernetes' HPA validation would refuse, refused on the job."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.jobs.pytorchjob import MetricSpec
from etctl.jobs.pytorchjob._metrics import metric_problems


def check(*metrics: dict[str, Any]) -> list[str]:
    return metric_problems([MetricSpec.model_validate(m) for m in metrics], path="m")


def target(**fields: Any) -> dict[str, Any]:
    return fields


def test_every_kind_of_metric_with_what_it_needs_passes() -> None:
    name = {"name": "q"}
    assert check(
        {"type": "Resource", "resource": {"name": "cpu", "target": target(type="Utilization",
                                                                          averageUtilization=80)}},
        {"type": "ContainerResource", "containerResource": {
            "name": "memory", "container": "pytorch",
            "target": target(type="AverageValue", averageValue="1Gi")}},
        {"type": "Pods", "pods": {"metric": name, "target": target(type="AverageValue",
                                                                    averageValue="10")}},
        {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "web"},
                                      "metric": name, "target": target(type="Value", value=5)}},
        {"type": "External", "external": {"metric": name, "target": target(type="Value",
                                                                            value="100")}},
    ) == []  # fmt: skip


@pytest.mark.parametrize(
    ("metric", "problem"),
    [
        ({"type": "Resource"}, "m[0].resource: must populate information for the given metric"),
        (
            {"type": "Resource", "resource": {"name": "cpu", "target": target(type="Value")}},
            "m[0].resource.target.averageUtilization: must set either a target raw value or a",
        ),
        (
            {"type": "Resource", "resource": {"name": "cpu", "target": target(
                type="Utilization", averageUtilization=0)}},
            "m[0].resource.target.averageUtilization: must be greater than 0",
        ),
        (
            {"type": "External", "external": {"metric": {"name": "q"}, "target": target(
                type="Value", value=1, averageValue=2)}},
            "m[0].external.target.value: may not set both",
        ),
        (
            {"type": "Object", "object": {"describedObject": {"kind": "K", "name": "n"},
                                          "metric": {"name": "a/b"},
                                          "target": target(type="Value", value=1)}},
            "m[0].object.metric.name: 'a/b' may not be '.' or '..' nor contain '/' or '%'",
        ),
        (
            {"type": "Pods", "pods": {"metric": {"name": "q"}, "target": target(
                type="AverageValue", averageValue="-1")}},
            "m[0].pods.target.averageValue: must be positive",
        ),
        (
            {"type": "Pods", "pods": {"metric": {"name": "q"},
                                      "target": target(type="AverageValue", averageValue=1)},
             "resource": {"name": "cpu", "target": target(type="Utilization",
                                                          averageUtilization=5)}},
            "m[0].resource: must populate the given metric source only (Pods)",
        ),
    ],
)  # fmt: skip
def test_what_the_api_server_would_refuse(metric: dict[str, Any], problem: str) -> None:
    found = check(metric)
    assert any(p.startswith(problem) for p in found), found
