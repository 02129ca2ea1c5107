"""Hub-and-spoke conversion and the ConversionReview endpoint."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from etctl.runtime import REGISTRY, ConversionError, HubAndSpoke, KubeObject, Spoke
from etctl.runtime._conversion_review import ConversionEndpoint
from etctl.runtime._http_server import Request
from tests.runtime._webhooks import conversion_review

GROUP = "example.etctl.dev"


def obj(version: str, spec: dict[str, Any], **metadata: Any) -> KubeObject:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u-1", **metadata},
        "spec": spec,
    }


# v1 spells the size "count"; v2 (the hub) "replicas"; v3 nests it under "scale".
def v1_to_hub(o: KubeObject) -> KubeObject:
    o["spec"] = {"replicas": o["spec"].pop("count")}
    return o


def hub_to_v1(o: KubeObject) -> KubeObject:
    o["spec"] = {"count": o["spec"]["replicas"]}
    return o


def v3_to_hub(o: KubeObject) -> KubeObject:
    o["spec"] = {"replicas": o["spec"]["scale"]["replicas"]}
    return o


def hub_to_v3(o: KubeObject) -> KubeObject:
    replicas = o["spec"]["replicas"]
    if replicas > 100:
        msg = f"spec.replicas: {replicas} does not fit v3 (at most 100)"
        raise ValueError(msg)
    o["spec"] = {"scale": {"replicas": replicas}}
    return o


WIDGETS = HubAndSpoke(
    group=GROUP,
    kind="Widget",
    hub="v2",
    spokes={"v1": Spoke(v1_to_hub, hub_to_v1), "v3": Spoke(v3_to_hub, hub_to_v3)},
)


def test_any_version_reaches_any_other_through_the_hub() -> None:
    v1 = obj("v1", {"count": 3})
    assert WIDGETS.convert(v1, f"{GROUP}/v2") == obj("v2", {"replicas": 3})
    assert WIDGETS.convert(v1, f"{GROUP}/v3") == obj("v3", {"scale": {"replicas": 3}})
    assert WIDGETS.convert(obj("v3", {"scale": {"replicas": 2}}), f"{GROUP}/v1") == obj(
        "v1", {"count": 2}
    )
    assert v1 == obj("v1", {"count": 3})  # converters work on copies
    same = obj("v2", {"replicas": 1})
    assert WIDGETS.convert(same, f"{GROUP}/v2") is same
    assert WIDGETS.versions == ("v2", "v1", "v3")


def test_a_conversion_keeps_metadata_but_labels_and_annotations() -> None:
    def relabel(o: KubeObject) -> KubeObject:
        o["metadata"]["labels"] = {"converted": "yes"}
        return v1_to_hub(o)

    def rename(o: KubeObject) -> KubeObject:
        o["metadata"]["name"] = "other"
        return v1_to_hub(o)

    labelled = HubAndSpoke(GROUP, "Widget", "v2", {"v1": Spoke(relabel, hub_to_v1)})
    assert labelled.convert(obj("v1", {"count": 1}), f"{GROUP}/v2")["metadata"]["labels"] == {
        "converted": "yes"
    }
    renamed = HubAndSpoke(GROUP, "Widget", "v2", {"v1": Spoke(rename, hub_to_v1)})
    with pytest.raises(ConversionError, match=r"changed metadata\.name"):
        renamed.convert(obj("v1", {"count": 1}), f"{GROUP}/v2")


def test_unknown_versions_kinds_and_a_hub_spoke_are_refused() -> None:
    with pytest.raises(ConversionError, match="Widget has no version 'v9'"):
        WIDGETS.convert(obj("v9", {}), f"{GROUP}/v2")
    with pytest.raises(ConversionError, match="cannot convert Gadget"):
        WIDGETS.convert({**obj("v1", {}), "kind": "Gadget"}, f"{GROUP}/v2")
    with pytest.raises(ValueError, match="cannot also be a spoke"):
        HubAndSpoke(GROUP, "Widget", "v2", {"v2": Spoke(v1_to_hub, hub_to_v1)})


def review_request(review: dict[str, Any]) -> Request:
    return Request(
        "POST", "/convert", headers={"content-type": "application/json"}, body=orjson.dumps(review)
    )


async def answer(endpoint: ConversionEndpoint, review: dict[str, Any]) -> tuple[int, Any]:
    response = await endpoint(review_request(review))
    return response.status, orjson.loads(response.body)


async def test_a_review_converts_every_object_or_fails_whole_with_the_message() -> None:
    endpoint = ConversionEndpoint()
    endpoint.register(WIDGETS)
    review = conversion_review(f"{GROUP}/v3", obj("v1", {"count": 5}), obj("v2", {"replicas": 7}))
    status, body = await answer(endpoint, review)
    assert status == 200
    assert body["response"]["uid"] == review["request"]["uid"]
    assert body["response"]["result"] == {"status": "Success"}
    assert [o["spec"] for o in body["response"]["convertedObjects"]] == [
        {"scale": {"replicas": 5}},
        {"scale": {"replicas": 7}},
    ]
    too_big = conversion_review(
        f"{GROUP}/v3", obj("v1", {"count": 5}), obj("v2", {"replicas": 500})
    )
    status, body = await answer(endpoint, too_big)
    assert status == 200
    assert "convertedObjects" not in body["response"]  # never half converted
    assert body["response"]["result"] == {
        "status": "Failure",
        "message": f"converting Widget {GROUP}/v2 to v3: spec.replicas: 500 does not fit v3 "
        "(at most 100)",
    }


async def test_a_converter_bug_fails_the_review_and_is_counted() -> None:
    def broken(o: KubeObject) -> KubeObject:
        return o["spec"]["nothing"]  # type: ignore[no-any-return]

    endpoint = ConversionEndpoint()
    endpoint.register(HubAndSpoke(GROUP, "Widget", "v2", {"v1": Spoke(broken, hub_to_v1)}))
    before = REGISTRY.get_sample_value("controller_runtime_conversion_webhook_panics_total") or 0
    with capture_logs() as logs:
        status, body = await answer(endpoint, conversion_review(f"{GROUP}/v2", obj("v1", {})))
    assert status == 200
    assert body["response"]["result"]["status"] == "Failure"
    assert "KeyError: 'nothing'" in body["response"]["result"]["message"]
    after = REGISTRY.get_sample_value("controller_runtime_conversion_webhook_panics_total")
    assert after == before + 1
    assert any(line["event"] == "a converter failed" for line in logs)


async def test_a_kind_without_converter_and_a_malformed_review_are_refused() -> None:
    endpoint = ConversionEndpoint()
    endpoint.register(WIDGETS)
    with pytest.raises(ValueError, match="has a converter already"):
        endpoint.register(copy.copy(WIDGETS))
    gadget = {**obj("v1", {}), "kind": "Gadget"}
    status, body = await answer(endpoint, conversion_review(f"{GROUP}/v2", gadget))
    assert body["response"]["result"] == {
        "status": "Failure",
        "message": f"no converter for Gadget in {GROUP}",
    }
    with capture_logs() as logs:
        status, body = await answer(endpoint, {"kind": "ConversionReview", "request": {}})
    assert status == 400
    assert body["response"]["result"]["status"] == "Failure"
    assert "not a ConversionReview" in body["response"]["result"]["message"]
    assert any(line["event"] == "refused a malformed conversion review" for line in logs)
