"""Validating admission webhooks: configurations, the calls, and the answers the client gets."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from etctl.runtime import FakeClock, RealClock
from etctl.testing import ApiServer
from etctl.testing._apiserver.store import Store
from etctl.testing._apiserver.tls import serving_certificate
from etctl.testing._apiserver.webhookclient import CallError, WebhookClient
from etctl.testing._apiserver.webhookconfigs import ClientConfig
from tests.testing.apiserver._client import Api, configmap
from tests.testing.apiserver._webhooks import (
    VALIDATING,
    HookServer,
    allow,
    configuration,
    deny,
    hook_server,
    webhook,
)

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def hooks() -> AsyncIterator[HookServer]:
    async with hook_server() as running:
        yield running


def url_config(hooks: HookServer, path: str = "/validate") -> dict[str, Any]:
    return {"url": hooks.url(path), "caBundle": hooks.ca_bundle}


async def validating(api: Api, *hooks: dict[str, Any], name: str = "checks") -> dict[str, Any]:
    return await api.create(
        VALIDATING, configuration("ValidatingWebhookConfiguration", name, *hooks)
    )


async def test_a_configuration_is_stored_with_the_v1_defaults(api: Api, hooks: HookServer) -> None:
    created = await validating(
        api,
        webhook("check.example.com", {"service": {"namespace": "ns", "name": "svc"}}),
    )
    hook = created["webhooks"][0]
    assert hook["failurePolicy"] == "Fail"
    assert hook["matchPolicy"] == "Equivalent"
    assert hook["timeoutSeconds"] == 10
    assert hook["namespaceSelector"] == {}
    assert hook["objectSelector"] == {}
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["service"]["port"] == 443
    assert "reinvocationPolicy" not in hook


async def test_an_invalid_configuration_is_refused_with_the_real_field_errors(api: Api) -> None:
    bad = webhook("check", {"url": "http://127.0.0.1:1/x"}, timeoutSeconds=31)
    del bad["sideEffects"]
    reply = await api.post(VALIDATING, configuration("ValidatingWebhookConfiguration", "c", bad))
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    causes = {c["field"]: c["message"] for c in reply.body["details"]["causes"]}
    assert causes == {
        "webhooks[0].name": 'Invalid value: "check": should be a domain with at least three '
        "segments separated by dots",
        "webhooks[0].sideEffects": "Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].timeoutSeconds": "Invalid value: 31: the timeout value must be between 1 "
        "and 30 seconds",
        "webhooks[0].clientConfig.url": "Invalid value: \"http://127.0.0.1:1/x\": 'https' is the "
        "only allowed URL scheme",
    }
    assert reply.body["message"].startswith(
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "c" is invalid: '
    )


async def test_a_webhook_that_denies_refuses_the_create_as_the_real_server_words_it(
    api: Api, hooks: HookServer, server: ApiServer
) -> None:
    hooks.answer = lambda path, review: deny(review, "no colour given")
    await validating(api, webhook("check.example.com", url_config(hooks)))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 403
    assert reply.body["reason"] == "Forbidden"
    assert reply.body["message"] == (
        'configmaps "c" is forbidden: admission webhook "check.example.com" denied the request: '
        "no colour given"
    )
    assert reply.body["details"] == {"name": "c", "kind": "configmaps"}
    assert server.store.get(("", "configmaps"), "default/c") is None


async def test_the_review_carries_the_request_as_kube_apiserver_sends_it(
    api: Api, hooks: HookServer
) -> None:
    await validating(api, webhook("check.example.com", url_config(hooks)))
    created = await api.create(CONFIGMAPS, configmap("c"))
    path, review = hooks.reviews[0]
    assert path == "/validate?timeout=10s"
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    request = review["request"]
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["requestKind"] == request["kind"]
    assert request["name"] == "c"
    assert request["namespace"] == "default"
    assert request["operation"] == "CREATE"
    assert request["userInfo"]["username"] == "etctl-admin"
    assert "system:masters" in request["userInfo"]["groups"]
    assert request["object"]["data"] == {"k": "v"}
    assert request["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    assert request["oldObject"] is None
    assert request["dryRun"] is False
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}

    updated = {**created, "data": {"k": "w"}}
    await api.put(f"{CONFIGMAPS}/c", updated)
    update = hooks.requests()[1]
    assert update["operation"] == "UPDATE"
    assert update["oldObject"]["data"] == {"k": "v"}
    assert update["object"]["data"] == {"k": "w"}
    assert update["options"]["kind"] == "UpdateOptions"


async def test_warnings_reach_the_client_as_warning_headers(api: Api, hooks: HookServer) -> None:
    hooks.answer = lambda path, review: allow(review, warnings=["colour is deprecated"])
    await validating(api, webhook("check.example.com", url_config(hooks)))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 201
    assert reply.headers.getall("Warning") == ['299 - "colour is deprecated"']


async def test_calls_to_a_webhook_reuse_one_kept_alive_connection(
    api: Api, hooks: HookServer
) -> None:
    await validating(api, webhook("check.example.com", url_config(hooks)))
    for name in ("a", "b", "c"):
        assert (await api.post(CONFIGMAPS, configmap(name))).status == 201
    assert len(hooks.reviews) == 3
    assert len(hooks.peers) == 1  # one TLS handshake, not one per write


async def test_a_webhook_that_cannot_be_reached_fails_the_request_under_fail(
    api: Api, hooks: HookServer
) -> None:
    down = {"url": "https://127.0.0.1:1/validate", "caBundle": hooks.ca_bundle}
    await validating(api, webhook("check.example.com", down))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 500
    assert reply.body["reason"] == "InternalError"
    assert reply.body["message"] == (
        'Internal error occurred: failed calling webhook "check.example.com": failed to call '
        'webhook: Post "https://127.0.0.1:1/validate?timeout=10s": dial tcp 127.0.0.1:1: '
        "connect: connection refused"
    )


async def test_a_webhook_that_cannot_be_reached_is_skipped_under_ignore(
    api: Api, hooks: HookServer
) -> None:
    down = {"url": "https://127.0.0.1:1/validate", "caBundle": hooks.ca_bundle}
    await validating(api, webhook("check.example.com", down, failurePolicy="Ignore"))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 201


async def test_the_certificate_is_verified_against_the_ca_bundle(
    api: Api, hooks: HookServer
) -> None:
    other = serving_certificate("127.0.0.1")
    config = {"url": hooks.url(), "caBundle": base64.b64encode(other.ca_pem).decode()}
    await validating(api, webhook("check.example.com", config))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 500
    assert "x509: certificate signed by unknown authority" in reply.body["message"]
    assert hooks.reviews == []


async def test_a_slow_webhook_times_out_on_the_server_clock(
    api: Api, hooks: HookServer, server: ApiServer, clock: FakeClock
) -> None:
    hooks.hold = asyncio.Event()
    await validating(api, webhook("check.example.com", url_config(hooks), timeoutSeconds=3))
    pending = asyncio.ensure_future(api.post(CONFIGMAPS, configmap("c")))
    async with asyncio.timeout(5):
        while not hooks.reviews:
            await asyncio.sleep(0.01)
    await clock.advance(3)
    reply = await pending
    assert reply.status == 500
    assert reply.body["message"].endswith(
        'Post "' + hooks.url() + '?timeout=3s": context deadline exceeded'
    )
    assert hooks.paths() == ["/validate?timeout=3s"]


async def test_a_dry_run_skips_no_webhook_but_refuses_side_effects(
    api: Api, hooks: HookServer, server: ApiServer
) -> None:
    await validating(api, webhook("check.example.com", url_config(hooks)))
    reply = await api.post(CONFIGMAPS, configmap("c"), params={"dryRun": "All"})
    assert reply.status == 201
    assert hooks.requests()[0]["dryRun"] is True
    assert server.store.get(("", "configmaps"), "default/c") is None
    await api.delete(f"{VALIDATING}/checks")
    await validating(
        api, webhook("effects.example.com", url_config(hooks), sideEffects="NoneOnDryRun")
    )
    stored = await api.get(f"{VALIDATING}/checks")
    stored.body["webhooks"][0]["sideEffects"] = "Some"
    assert (await api.put(f"{VALIDATING}/checks", stored.body)).status == 422
    assert (await api.post(CONFIGMAPS, configmap("d"), params={"dryRun": "All"})).status == 201


async def test_selectors_and_scope_choose_the_requests(
    api: Api, hooks: HookServer, server: ApiServer
) -> None:
    await api.create("/api/v1/namespaces", {"metadata": {"name": "watched", "labels": {"a": "b"}}})
    await validating(
        api,
        webhook(
            "ns.example.com",
            url_config(hooks, "/ns"),
            namespaceSelector={"matchLabels": {"a": "b"}},
        ),
        webhook(
            "obj.example.com",
            url_config(hooks, "/obj"),
            objectSelector={"matchExpressions": [{"key": "checked", "operator": "Exists"}]},
        ),
        webhook(
            "cluster.example.com",
            url_config(hooks, "/cluster"),
            resources=("*",),
            rules=[
                {
                    "operations": ["CREATE"],
                    "apiGroups": [""],
                    "apiVersions": ["*"],
                    "resources": ["*"],
                    "scope": "Cluster",
                }
            ],
        ),
    )
    await api.create(CONFIGMAPS, configmap("plain"))
    assert hooks.paths() == []
    await api.create("/api/v1/namespaces/watched/configmaps", configmap("w"))
    assert [p.split("?")[0] for p in hooks.paths()] == ["/ns"]
    await api.create(CONFIGMAPS, configmap("labelled", labels={"checked": "yes"}))
    assert [p.split("?")[0] for p in hooks.paths()] == ["/ns", "/obj"]
    await api.create("/api/v1/namespaces", {"metadata": {"name": "fresh"}})
    assert [p.split("?")[0] for p in hooks.paths()] == ["/ns", "/obj", "/cluster"]
    assert hooks.requests()[-1]["namespace"] == "fresh"


async def test_a_service_reference_reaches_the_endpoints_of_the_service(
    api: Api, hooks: HookServer
) -> None:
    hooks.answer = lambda path, review: deny(review, "from the service")
    service = {"namespace": "webhooks", "name": "hooks", "path": "/v", "port": 8443}
    await validating(
        api, webhook("svc.example.com", {"service": service, "caBundle": hooks.ca_bundle})
    )
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 500
    assert reply.body["message"].endswith(
        'Post "https://hooks.webhooks.svc:8443/v?timeout=10s": service "hooks" not found'
    )
    await api.create("/api/v1/namespaces", {"metadata": {"name": "webhooks"}})
    await api.create(
        "/api/v1/namespaces/webhooks/services",
        {
            "metadata": {"name": "hooks"},
            "spec": {"ports": [{"name": "https", "port": 8443, "targetPort": 9443}]},
        },
    )
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.body["message"].endswith('no endpoints available for service "hooks"')
    await api.create(
        "/api/v1/namespaces/webhooks/endpoints",
        {
            "metadata": {"name": "hooks"},
            "subsets": [
                {
                    "addresses": [{"ip": "127.0.0.1"}],
                    "ports": [{"name": "https", "port": hooks.port}],
                }
            ],
        },
    )
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 403
    assert reply.body["message"].endswith("denied the request: from the service")
    assert hooks.paths() == ["/v?timeout=10s"]


async def test_a_malformed_answer_is_a_failed_call(api: Api, hooks: HookServer) -> None:
    hooks.answer = lambda path, review: {**allow(review), "response": {"uid": "x", "allowed": True}}
    await validating(api, webhook("check.example.com", url_config(hooks)))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 500
    uid = hooks.requests()[0]["uid"]
    assert reply.body["message"] == (
        'Internal error occurred: failed calling webhook "check.example.com": received invalid '
        f'webhook response: expected response.uid="{uid}", got "x"'
    )
    hooks.answer = lambda path, review: web.Response(status=500, text="boom")
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.body["message"].endswith(
        'an error on the server ("boom") has prevented the request from succeeding'
    )


async def test_a_refusal_keeps_the_webhooks_code_and_reason(api: Api, hooks: HookServer) -> None:
    hooks.answer = lambda path, review: deny(review, "too many", code=429, reason="TooManyRequests")
    await validating(api, webhook("check.example.com", url_config(hooks)))
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.status == 429
    assert reply.body["reason"] == "TooManyRequests"
    hooks.answer = lambda path, review: deny(review, "")
    reply = await api.post(CONFIGMAPS, configmap("c"))
    assert reply.body["message"] == (
        'configmaps "c" is forbidden: admission webhook "check.example.com" denied the request '
        "without explanation"
    )


async def test_deletes_send_the_stored_object_as_old_object(api: Api, hooks: HookServer) -> None:
    await api.create(CONFIGMAPS, configmap("a", labels={"x": "1"}))
    await api.create(CONFIGMAPS, configmap("b", labels={"x": "1"}))
    await validating(api, webhook("check.example.com", url_config(hooks), operations=("DELETE",)))
    assert (await api.delete(f"{CONFIGMAPS}/a")).status == 200
    first = hooks.requests()[0]
    assert first["operation"] == "DELETE"
    assert first["name"] == "a"
    assert first["object"] is None
    assert first["oldObject"]["metadata"]["name"] == "a"
    assert first["options"]["kind"] == "DeleteOptions"
    hooks.answer = lambda path, review: deny(review, "keep it")
    reply = await api.delete(CONFIGMAPS, params={"labelSelector": "x=1"})
    assert reply.status == 403
    assert reply.body["message"].startswith('configmaps "Unknown" is forbidden')
    assert "name" not in hooks.requests()[-1]
    assert (await api.get(f"{CONFIGMAPS}/b")).status == 200


async def test_on_the_real_clock_a_slow_webhook_times_out_on_the_loops_timer(
    hooks: HookServer,
) -> None:
    # A real server's deadline is a timer of its event loop around the call: the same failure,
    # after the webhook's timeoutSeconds of real time.
    hooks.hold = asyncio.Event()
    client = WebhookClient(Store(), RealClock())
    config = ClientConfig(url=hooks.url(), ca_bundle=hooks.certificate.ca_pem)
    review = {"kind": "AdmissionReview", "request": {"uid": "u"}}
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        with pytest.raises(CallError) as failed:
            await client.post(config, review, timeout=1)
    finally:
        await client.close()
    assert str(failed.value) == f'Post "{hooks.url()}?timeout=1s": context deadline exceeded'
    assert hooks.paths() == ["/validate?timeout=1s"]
    assert 1 <= loop.time() - started < 5
    hooks.hold.set()
    client = WebhookClient(Store(), RealClock())
    try:
        answered = await client.post(config, review, timeout=1)
    finally:
        await client.close()
    assert answered["response"] == {"uid": "u", "allowed": True}
