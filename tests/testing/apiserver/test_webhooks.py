"""Validating admission webhooks: configurations, the calls, and the answers the client gets."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest

from etctl.testing import ApiServer
from etctl.testing._apiserver.tls import serving_certificate
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
