"""Conformance: the size limits of kube-apiserver and etcd (request bodies, data, stored objects).

The server here runs with lowered limits so the objects stay small; one test sends a body over a
real cluster's 3 MiB to a server with the default limits.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import aiohttp
import pytest

from etctl.runtime import FakeClock
from etctl.testing import ApiServer, Limits
from tests.testing.apiserver._client import APPLY, JSON_PATCH, Api, configmap, widget

BODY = 32 * 1024
DATA = 1000
OBJECT = 16 * 1024
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    limits = Limits(max_request_body_bytes=BODY, max_data_bytes=DATA, max_object_bytes=OBJECT)
    return {"clock": clock, "seed": 7, "controllers": False, "limits": limits}


def _too_large(limit: int) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Request entity too large: limit is {limit}",
        "reason": "RequestEntityTooLarge",
        "code": 413,
    }


def test_defaults_are_a_real_clusters() -> None:
    limits = Limits()
    assert limits.max_request_body_bytes == 3 * 1024 * 1024
    assert limits.max_data_bytes == 1024 * 1024
    assert limits.max_object_bytes == 1536 * 1024
    with pytest.raises(ValueError, match="max_data_bytes must be a positive number of bytes"):
        Limits(max_data_bytes=0)


async def test_a_body_over_the_limit_is_413_for_every_write(widgets: ApiServer, api: Api) -> None:
    padding = "x" * BODY
    reply = await api.post(CONFIGMAPS, configmap("big", {"k": padding}))
    assert (reply.status, reply.body) == (413, _too_large(BODY))
    assert (await api.get(f"{CONFIGMAPS}/big")).status == 404

    await api.create(CONFIGMAPS, configmap("small"))
    replaced = await api.put(f"{CONFIGMAPS}/small", configmap("small", {"k": padding}))
    assert (replaced.status, replaced.body) == (413, _too_large(BODY))
    merged = await api.patch(f"{CONFIGMAPS}/small", {"data": {"k": padding}})
    assert (merged.status, merged.body) == (413, _too_large(BODY))
    patch = [{"op": "add", "path": "/data/k", "value": padding}]
    patched = await api.patch(f"{CONFIGMAPS}/small", patch, content_type=JSON_PATCH)
    assert patched.status == 413
    applied = await api.patch(
        f"{WIDGETS}/w",
        json.dumps(widget("w", size=padding)),
        content_type=APPLY,
        params={"fieldManager": "me"},
    )
    assert (applied.status, applied.body) == (413, _too_large(BODY))
    assert (await api.get(f"{CONFIGMAPS}/small")).body["data"] == {"k": "v"}


async def test_the_body_is_read_before_the_options_are_checked(api: Api) -> None:
    # A real handler reads the body first: an oversized body with a bad option is a 413.
    reply = await api.post(
        CONFIGMAPS, configmap("big", {"k": "x" * BODY}), params={"dryRun": "Sometimes"}
    )
    assert reply.status == 413


async def test_a_body_at_the_limit_is_read(api: Api) -> None:
    body = configmap("edge", {"k": ""})
    room = BODY - len(json.dumps(body))
    body["data"]["k"] = "x" * min(room, DATA)
    assert len(json.dumps(body)) <= BODY
    assert (await api.post(CONFIGMAPS, body)).status == 201


async def test_the_default_body_limit_is_three_mebibytes(clock: FakeClock) -> None:
    body = json.dumps(configmap("big", {"k": "x" * (3 * 1024 * 1024)})).encode()
    async with (
        ApiServer(clock=clock, controllers=False) as server,
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session,
        session.post(
            server.url + CONFIGMAPS,
            data=io.BytesIO(body),
            headers={"Content-Type": "application/json"},
        ) as response,
    ):
        assert response.status == 413
        assert await response.json() == _too_large(3145728)


async def test_config_map_data_over_the_limit_is_invalid(api: Api) -> None:
    reply = await api.post(CONFIGMAPS, configmap("big", {"a": "x" * 600, "b": "y" * 401}))
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == (
        f'ConfigMap "big" is invalid: []: Too long: must have at most {DATA} bytes'
    )
    assert reply.body["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": f"Too long: must have at most {DATA} bytes",
            "field": "[]",
        }
    ]
    assert (await api.post(CONFIGMAPS, configmap("full", {"a": "x" * DATA}))).status == 201


async def test_config_map_binary_data_counts_decoded_and_updates_are_checked(api: Api) -> None:
    half = base64.b64encode(b"\0" * (DATA // 2)).decode()
    body = configmap("mixed", {"a": "x" * (DATA // 2)})
    body["binaryData"] = {"b": half}
    created = await api.create(CONFIGMAPS, body)  # exactly at the limit, encoded it is over
    created["data"]["a"] += "!"
    grown = await api.put(f"{CONFIGMAPS}/mixed", created)
    assert grown.status == 422
    assert grown.body["details"]["causes"][0]["field"] == "[]"
    # Multi-byte characters count as their UTF-8 bytes, as Go's len() does.
    wide = await api.post(CONFIGMAPS, configmap("wide", {"a": "é" * (DATA // 2 + 1)}))
    assert wide.status == 422


async def test_secret_data_is_counted_decoded_on_the_data_path(api: Api) -> None:
    full = {"metadata": {"name": "full"}, "stringData": {"k": "x" * DATA}}
    assert (await api.post(SECRETS, full)).status == 201
    over = {"metadata": {"name": "over"}, "data": {"k": base64.b64encode(b"x" * 1001).decode()}}
    reply = await api.post(SECRETS, over)
    assert reply.status == 422
    assert reply.body["message"] == (
        f'Secret "over" is invalid: data: Too long: must have at most {DATA} bytes'
    )
    assert reply.body["details"]["causes"][0]["field"] == "data"


async def test_an_object_over_the_storage_limit_is_etcds_500(widgets: ApiServer, api: Api) -> None:
    rv_before = widgets.store.rv
    reply = await api.post(WIDGETS, widget("huge", size="x" * OBJECT))
    assert reply.status == 500
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "etcdserver: request is too large",
        "code": 500,
    }
    assert widgets.store.rv == rv_before  # nothing was committed
    assert (await api.get(f"{WIDGETS}/huge")).status == 404
    # A dry run never reaches storage, so it is not refused.
    dry = await api.post(WIDGETS, widget("huge", size="x" * OBJECT), params={"dryRun": "All"})
    assert dry.status == 201


async def test_a_status_growing_past_the_storage_limit_is_refused(
    widgets: ApiServer, api: Api
) -> None:
    created = await api.create(WIDGETS, widget("w", size="small"))
    status = {**created, "status": {"phase": "x" * OBJECT}}
    reply = await api.put(f"{WIDGETS}/w/status", status)
    assert reply.status == 500
    assert reply.body["message"] == "etcdserver: request is too large"
    current = (await api.get(f"{WIDGETS}/w")).body
    assert current["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "status" not in current or current["status"] != status["status"]
