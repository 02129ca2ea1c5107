"""The webhook builder: paths, what it registers, and the configurations that name them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from etctl.runtime import (
    HubAndSpoke,
    KubeObject,
    Resource,
    Spoke,
    WebhookBuilder,
    WebhookClientConfig,
    WebhookServer,
    WebhookServerOptions,
    webhook_configurations,
)
from tests.runtime._webhooks import Accepting

WIDGETS = Resource("example.etctl.dev", "v2", "widgets", "Widget")
PODS = Resource("", "v1", "pods", "Pod")


Nothing = Accepting


def same(o: KubeObject) -> KubeObject:
    return o


def server(tmp_path: Path) -> WebhookServer:
    return WebhookServer(WebhookServerOptions(cert_dir=tmp_path))


def test_a_resource_gets_kubebuilder_paths_and_one_converter_path(tmp_path: Path) -> None:
    hooks = server(tmp_path)
    assert hooks.paths == []
    specs = (
        WebhookBuilder(hooks, WIDGETS, versions=("v1", "v2"))
        .with_defaulter(Nothing())
        .with_validator(Nothing(), on_delete=True)
        .with_converter(HubAndSpoke(WIDGETS.group, "Widget", "v2", {"v1": Spoke(same, same)}))
        .with_options(failure_policy="Ignore", timeout_seconds=5)
        .build()
    )
    assert hooks.active
    assert hooks.paths == [
        "/convert",
        "/mutate-example-etctl-dev-v2-widget",
        "/validate-example-etctl-dev-v2-widget",
    ]
    mutate, validate = specs
    assert (mutate.name, mutate.operations) == (
        "mutate.widgets.example.etctl.dev",
        ("CREATE", "UPDATE"),
    )
    assert (validate.name, validate.operations) == (
        "validate.widgets.example.etctl.dev",
        ("CREATE", "UPDATE", "DELETE"),
    )
    assert validate.versions == ("v1", "v2")
    assert (validate.failure_policy, validate.timeout_seconds) == ("Ignore", 5)
    assert list(hooks.specs) == [mutate, validate]
    core = WebhookBuilder(hooks, PODS).with_validator(Nothing()).build()
    assert core[0].path == "/validate-core-v1-pod"
    assert core[0].name == "validate.pods.core"
    assert core[0].operations == ("CREATE", "UPDATE")


def test_mistakes_are_refused_when_building(tmp_path: Path) -> None:
    hooks = server(tmp_path)
    with pytest.raises(ValueError, match="no defaulter, validator or converter"):
        WebhookBuilder(hooks, WIDGETS).build()
    other = HubAndSpoke("other.io", "Widget", "v2", {"v1": Spoke(same, same)})
    with pytest.raises(ValueError, match="is not for"):
        WebhookBuilder(hooks, WIDGETS).with_converter(other).build()
    WebhookBuilder(hooks, WIDGETS).with_validator(Nothing()).build()
    with pytest.raises(ValueError, match="registered already"):
        WebhookBuilder(hooks, WIDGETS).with_validator(Nothing()).build()
    with pytest.raises(ValueError, match="timeoutSeconds is 1-30"):
        WebhookBuilder(hooks, WIDGETS).with_options(timeout_seconds=31)
    built = WebhookBuilder(hooks, PODS).with_defaulter(Nothing())
    built.build()
    with pytest.raises(RuntimeError, match="builds once"):
        built.build()


def test_configurations_point_at_a_service_or_a_url(tmp_path: Path) -> None:
    hooks = server(tmp_path)
    WebhookBuilder(hooks, WIDGETS).with_defaulter(Nothing()).with_validator(Nothing()).build()
    service = WebhookClientConfig(service="etctl-webhook-service", namespace="etctl-system")
    mutating, validating = webhook_configurations(
        hooks.specs,
        service,
        mutating_name="etctl-mutating-webhooks",
        validating_name="etctl-validating-webhooks",
        labels={"app": "etctl"},
        annotations={"cert-manager.io/inject-ca-from": "etctl-system/etctl-serving-cert"},
    )
    assert mutating == {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {
            "name": "etctl-mutating-webhooks",
            "labels": {"app": "etctl"},
            "annotations": {"cert-manager.io/inject-ca-from": "etctl-system/etctl-serving-cert"},
        },
        "webhooks": [
            {
                "name": "mutate.widgets.example.etctl.dev",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {
                    "service": {
                        "name": "etctl-webhook-service",
                        "namespace": "etctl-system",
                        "path": "/mutate-example-etctl-dev-v2-widget",
                        "port": 443,
                    }
                },
                "failurePolicy": "Fail",
                "matchPolicy": "Equivalent",
                "reinvocationPolicy": "Never",
                "rules": [
                    {
                        "apiGroups": ["example.etctl.dev"],
                        "apiVersions": ["v2"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["widgets"],
                        "scope": "Namespaced",
                    }
                ],
                "sideEffects": "None",
                "timeoutSeconds": 10,
            }
        ],
    }
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    assert "reinvocationPolicy" not in validating["webhooks"][0]
    url = WebhookClientConfig(url="https://192.0.2.10:9443/", ca_bundle=b"PEM")
    (only,) = webhook_configurations(
        [s for s in hooks.specs if not s.mutating],
        url,
        mutating_name="m",
        validating_name="v",
    )
    assert only["webhooks"][0]["clientConfig"] == {
        "url": "https://192.0.2.10:9443/validate-example-etctl-dev-v2-widget",
        "caBundle": base64.b64encode(b"PEM").decode(),
    }
    with pytest.raises(ValueError, match="either a Service or a URL"):
        WebhookClientConfig()
    with pytest.raises(ValueError, match="https://"):
        WebhookClientConfig(url="http://insecure:9443")
