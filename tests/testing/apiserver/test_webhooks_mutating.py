"""Mutating admission webhooks: patches, order, reinvocation, versions and subresources."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from etctl.testing import ApiServer
from tests.testing.apiserver._client import Api, configmap, widget
from tests.testing.apiserver._webhooks import (
    MUTATING,
    VALIDATING,
    HookServer,
    allow,
    configuration,
    hook_server,
    json_patch,
    webhook,
)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WIDGETS_V1 = "/apis/example.com/v1/namespaces/default/widgets"
WIDGETS_BETA = "/apis/example.com/v1beta1/namespaces/default/widgets"


@pytest.fixture
async def hooks() -> AsyncIterator[HookServer]:
    async with hook_server() as running:
        yield running


def at(hooks: HookServer, path: str) -> dict[str, Any]:
    return {"url": hooks.url(path), "caBundle": hooks.ca_bundle}


async def mutating(api: Api, *hooks: dict[str, Any], name: str = "defaults") -> None:
    await api.create(MUTATING, configuration("MutatingWebhookConfiguration", name, *hooks))


async def test_a_json_patch_is_applied_before_validation_and_stored(
    api: Api, hooks: HookServer, server: ApiServer
) -> None:
    def answer(path: str, review: dict[str, Any]) -> Any:
        if path == "/mutate":
            return json_patch(review, [{"op": "add", "path": "/data/added", "value": "yes"}])
        return allow(review)

    hooks.answer = answer
    await mutating(api, webhook("add.example.com", at(hooks, "/mutate")))
    await api.create(
        VALIDATING,
        configuration(
            "ValidatingWebhookConfiguration", "v", webhook("see.example.com", at(hooks, "/see"))
        ),
    )
    created = await api.create(CONFIGMAPS, configmap("c"))
    assert created["data"] == {"k": "v", "added": "yes"}
    stored = server.store.get(("", "configmaps"), "default/c")
    assert stored is not None
    assert stored["data"] == {"k": "v", "added": "yes"}
    assert [p.split("?")[0] for p in hooks.paths()] == ["/mutate", "/see"]
    assert hooks.requests()[1]["object"]["data"] == {"k": "v", "added": "yes"}


async def test_webhooks_with_if_needed_are_called_again_after_a_later_change(
    api: Api, hooks: HookServer
) -> None:
    def answer(path: str, review: dict[str, Any]) -> Any:
        data = review["request"]["object"]["data"]
        if path == "/second":
            return json_patch(review, [{"op": "add", "path": "/data/second", "value": "1"}])
        return json_patch(
            review, [{"op": "add", "path": "/data/first-saw", "value": ",".join(sorted(data))}]
        )

    hooks.answer = answer
    await mutating(
        api,
        webhook("first.example.com", at(hooks, "/first"), reinvocationPolicy="IfNeeded"),
        webhook("second.example.com", at(hooks, "/second")),
    )
    created = await api.create(CONFIGMAPS, configmap("c"))
    assert [p.split("?")[0] for p in hooks.paths()] == ["/first", "/second", "/first"]
    assert created["data"]["first-saw"] == "first-saw,k,second"


async def test_a_patch_on_a_delete_fails_the_request(api: Api, hooks: HookServer) -> None:
    await api.create(CONFIGMAPS, configmap("c"))
    hooks.answer = lambda path, review: json_patch(
        review, [{"op": "add", "path": "/x", "value": 1}]
    )
    await mutating(api, webhook("m.example.com", at(hooks, "/m"), operations=("DELETE",)))
    reply = await api.delete(f"{CONFIGMAPS}/c")
    assert reply.status == 500
    assert reply.body["message"] == (
        'Internal error occurred: admission webhook "m.example.com" attempted to modify the '
        "object, which is not supported for this operation"
    )


async def test_an_equivalent_version_is_matched_and_the_object_sent_at_it(
    api: Api, hooks: HookServer, widgets: ApiServer
) -> None:
    hooks.answer = lambda path, review: json_patch(
        review,
        [
            {"op": "add", "path": "/spec/color", "value": "red"},
            {"op": "add", "path": "/spec/unknown", "value": "pruned"},
        ],
    )
    await mutating(
        api,
        webhook(
            "w.example.com",
            at(hooks, "/w"),
            groups=("example.com",),
            versions=("v1beta1",),
            resources=("widgets",),
        ),
    )
    created = await api.create(WIDGETS_V1, widget("a"))
    request = hooks.requests()[0]
    assert request["kind"] == {"group": "example.com", "version": "v1beta1", "kind": "Widget"}
    assert request["resource"]["version"] == "v1beta1"
    assert request["requestKind"]["version"] == "v1"
    assert request["object"]["apiVersion"] == "example.com/v1beta1"
    assert created["apiVersion"] == "example.com/v1"
    # The patched object is pruned and defaulted by the request version's schema again.
    assert created["spec"] == {"color": "red", "replicas": 1}

    await api.delete(f"{MUTATING}/defaults")
    await mutating(
        api,
        webhook(
            "exact.example.com",
            at(hooks, "/exact"),
            groups=("example.com",),
            versions=("v1beta1",),
            resources=("widgets",),
            matchPolicy="Exact",
        ),
    )
    await api.create(WIDGETS_V1, widget("b"))
    assert len(hooks.reviews) == 1
    await api.create(WIDGETS_BETA, {**widget("c"), "apiVersion": "example.com/v1beta1"})
    assert len(hooks.reviews) == 2


async def test_subresources_are_matched_by_their_own_rules(
    api: Api, hooks: HookServer, widgets: ApiServer
) -> None:
    await api.create(WIDGETS_V1, widget("a", replicas=1))
    await mutating(
        api,
        webhook(
            "s.example.com",
            at(hooks, "/s"),
            groups=("example.com",),
            resources=("widgets/status", "widgets/scale"),
            operations=("UPDATE",),
        ),
    )
    await api.patch(f"{WIDGETS_V1}/a", {"spec": {"replicas": 2}})
    assert hooks.reviews == []
    await api.patch(f"{WIDGETS_V1}/a/status", {"status": {"phase": "Up"}})
    status = hooks.requests()[0]
    assert status["subResource"] == "status"
    assert status["object"]["status"] == {"phase": "Up"}
    reply = await api.patch(f"{WIDGETS_V1}/a/scale", {"spec": {"replicas": 5}})
    assert reply.status == 200, reply.body
    scale = hooks.requests()[1]
    assert scale["subResource"] == "scale"
    assert scale["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert scale["object"]["spec"] == {"replicas": 5}
    assert scale["oldObject"]["spec"] == {"replicas": 2}


async def test_an_unsupported_patch_type_fails_unless_ignored(api: Api, hooks: HookServer) -> None:
    def answer(path: str, review: dict[str, Any]) -> Any:
        reply = json_patch(review, [{"op": "add", "path": "/data/x", "value": "1"}])
        reply["response"]["patchType"] = "MergePatch"
        return reply

    hooks.answer = answer
    await mutating(api, webhook("m.example.com", at(hooks, "/m")))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 500
    assert reply.body["message"] == (
        'Internal error occurred: failed calling webhook "m.example.com": unsupported patch '
        'type "MergePatch"'
    )
    await api.delete(f"{MUTATING}/defaults")
    await mutating(api, webhook("m.example.com", at(hooks, "/m"), failurePolicy="Ignore"))
    created = await api.create(CONFIGMAPS, configmap("c"))
    assert created["data"] == {"k": "v"}
