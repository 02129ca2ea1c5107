"""Conformance: HorizontalPodAutoscalers (``autoscaling/v2``): defaults, validation, table."""

from __future__ import annotations

import copy
from typing import Any

from tests.testing.apiserver._client import TABLE, Api

HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"


def hpa(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "job"},
        "maxReplicas": 4,
    }
    body.update(spec)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "job"}, "spec": body}  # fmt: skip


def cpu(**target: Any) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


async def causes(api: Api, body: dict[str, Any]) -> list[tuple[str, str]]:
    reply = await api.post(HPAS, body)
    assert reply.status == 422, reply.body
    return [(c["field"], c["message"]) for c in reply.body["details"]["causes"]]


async def test_discovery_serves_autoscaling_v2_with_its_short_name(api: Api) -> None:
    group = (await api.get("/apis/autoscaling/v2")).body
    entry = next(r for r in group["resources"] if r["name"] == "horizontalpodautoscalers")
    assert entry["kind"] == "HorizontalPodAutoscaler"
    assert entry["namespaced"] is True
    assert entry["shortNames"] == ["hpa"]
    assert "horizontalpodautoscalers/status" in {r["name"] for r in group["resources"]}


async def test_defaults_are_the_registry_defaults(api: Api) -> None:
    created = await api.create(HPAS, hpa())
    assert created["spec"]["minReplicas"] == 1
    assert created["spec"]["metrics"] == [cpu(type="Utilization", averageUtilization=80)]
    assert created["status"] == {"desiredReplicas": 0}
    assert "behavior" not in created["spec"]


async def test_a_behavior_gets_every_unset_rule(api: Api) -> None:
    body = hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    created = await api.create(HPAS, body)
    assert created["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }


async def test_replica_bounds_are_checked_as_kube_apiserver_checks_them(api: Api) -> None:
    assert await causes(api, hpa(minReplicas=5)) == [
        ("spec.maxReplicas", "Invalid value: 4: must be greater than or equal to `minReplicas`")
    ]
    assert await causes(api, hpa(minReplicas=0, maxReplicas=0)) == [
        ("spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
        ("spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
    ]


async def test_the_scale_target_needs_a_kind_and_a_name(api: Api) -> None:
    assert await causes(api, hpa(scaleTargetRef={"kind": "PyTorchJob"})) == [
        ("spec.scaleTargetRef.name", "Required value")
    ]


async def test_each_metric_sets_its_own_source_with_the_fields_it_needs(api: Api) -> None:
    both = cpu(type="Utilization", averageUtilization=50, averageValue="500m")
    assert await causes(api, hpa(metrics=[both])) == [
        (
            "spec.metrics[0].resource.target.averageValue",
            "Forbidden: may not set both a target raw value and a target utilization",
        )
    ]
    pods = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value"}}}
    assert await causes(api, hpa(metrics=[pods])) == [
        (
            "spec.metrics[0].pods.target.averageValue",
            "Required value: must specify a positive target averageValue",
        )
    ]
    wrong = {**cpu(type="Utilization", averageUtilization=50), "type": "Pods"}
    assert await causes(api, hpa(metrics=[wrong])) == [
        (
            "spec.metrics[0].pods",
            "Required value: must populate information for the given metric source",
        )
    ]
    two = {**cpu(type="Utilization", averageUtilization=50), "pods": pods["pods"]}
    assert ("spec.metrics[0].pods", "Forbidden: must populate the given metric source only") in (
        await causes(api, hpa(metrics=[two]))
    )
    negative = cpu(type="AverageValue", averageValue="-1")
    assert await causes(api, hpa(metrics=[negative])) == [
        ("spec.metrics[0].resource.target.averageValue", 'Invalid value: "-1": must be positive')
    ]


async def test_an_update_is_validated_and_a_status_write_is_not(api: Api) -> None:
    created = await api.create(HPAS, hpa())
    changed = copy.deepcopy(created)
    changed["spec"]["maxReplicas"] = 0
    assert (await api.put(f"{HPAS}/job", changed)).status == 422
    created["status"] = {"currentReplicas": 3, "desiredReplicas": 4}
    written = await api.put(f"{HPAS}/job/status", created)
    assert written.status == 200, written.body
    assert written.body["status"]["currentReplicas"] == 3


async def test_kubectl_get_hpa_shows_reference_targets_and_bounds(api: Api) -> None:
    metrics = [
        cpu(type="Utilization", averageUtilization=80),
        {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                  "target": {"type": "AverageValue", "averageValue": "10"}}},
    ]  # fmt: skip
    await api.create(HPAS, hpa(minReplicas=2, metrics=metrics))
    table = (await api.get(HPAS, headers={"Accept": TABLE})).body
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"]
    row = table["rows"][0]["cells"]
    assert row[:6] == ["job", "PyTorchJob/job", "cpu: <unknown>/80%, <unknown>/10", "2", 4, 0]
