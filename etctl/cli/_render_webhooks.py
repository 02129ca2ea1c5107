"""The webhook part of the install manifests: configurations, Service, certificate, RBAC.

Rendered from the same registrations ``etctl run --webhooks`` serves
(:func:`~etctl.common.setup_job_webhooks` on a webhook server that never runs), so the
configurations name exactly the paths the operator serves:

* ``MutatingWebhookConfiguration`` ``etctl-mutating-webhooks`` and
  ``ValidatingWebhookConfiguration`` ``etctl-validating-webhooks``: a defaulting and a validating
  webhook per kind, every served version, ``failurePolicy: Fail``, pointing at the Service
  ``etctl-webhook-service`` (port 443 to the operator's 9443), or at ``--webhook-url`` for an
  operator run outside the cluster. Their ``caBundle`` is left empty: the operator injects its CA
  (``--webhook-certs self``, the default), or cert-manager's CA injector does (the
  ``cert-manager`` overlay).
* the Secret ``etctl-webhook-server-cert``, empty: the operator fills it with its CA and serving
  certificate (cert-manager, in its overlay), and the Deployment mounts it read-only where the
  webhook server reads its certificate.
* RBAC: reading and updating those two configurations (by name) to inject the CA; the Secret is
  covered by the operator's grants on Secrets.
* the ``cert-manager`` overlay: a self-signed Issuer and a Certificate for the Service's names
  into that Secret, the configurations annotated ``cert-manager.io/inject-ca-from``, and the
  operator told ``--webhook-certs=external``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.cli._manifest_docs import OPERATOR_NAME, dump, kustomization, meta
from etctl.cli._webhook_settings import (
    DEFAULT_WEBHOOK_SECRET,
    DEFAULT_WEBHOOK_SERVICE,
    MUTATING_WEBHOOKS,
    VALIDATING_WEBHOOKS,
)
from etctl.common import JobPlugin, PolicyRule, setup_job_webhooks
from etctl.runtime import (
    DEFAULT_CERT_DIR,
    DEFAULT_WEBHOOK_PORT,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    CertRotation,
    WebhookClientConfig,
    WebhookServer,
    webhook_configurations,
)

__all__ = [
    "CERT_MANAGER_ISSUER",
    "SERVING_CERTIFICATE",
    "WEBHOOK_PORT_NAME",
    "WEBHOOK_RULES",
    "WEBHOOK_SECRET_RULES",
    "cert_manager_documents",
    "cert_manager_overlay",
    "inject_ca_annotation",
    "webhook_configuration_documents",
    "webhook_secret",
    "webhook_service",
    "webhook_volume",
]

WEBHOOK_PORT_NAME = "webhook"
CERT_MANAGER_ISSUER = "etctl-selfsigned-issuer"
SERVING_CERTIFICATE = "etctl-serving-cert"

WEBHOOK_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        api_groups=(MUTATING_WEBHOOK_CONFIGURATIONS.group,),
        resources=(MUTATING_WEBHOOK_CONFIGURATIONS.plural,),
        verbs=("get", "list", "watch", "update"),
        resource_names=(MUTATING_WEBHOOKS,),
    ),
    PolicyRule(
        api_groups=(VALIDATING_WEBHOOK_CONFIGURATIONS.group,),
        resources=(VALIDATING_WEBHOOK_CONFIGURATIONS.plural,),
        verbs=("get", "list", "watch", "update"),
        resource_names=(VALIDATING_WEBHOOKS,),
    ),
)
"""What injecting the CA takes: the two configurations, by name (watched by name too)."""

WEBHOOK_SECRET_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        api_groups=("",),
        resources=("secrets",),
        verbs=("get", "list", "watch", "update"),
        resource_names=(DEFAULT_WEBHOOK_SECRET,),
    ),
)
"""What keeping the certificates takes, in a Role of the operator's namespace: the Secret the
manifests ship (empty), by name (watched by name too). Never create: the operator's grants stay
the same whichever plugins are enabled, and no other Secret is touched."""


def webhook_configuration_documents(
    plugins: Sequence[JobPlugin[Any]],
    namespace: str,
    labels: dict[str, str],
    *,
    url: str = "",
    annotations: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The mutating and validating configurations of ``plugins``' webhooks."""
    server = WebhookServer()
    for plugin in plugins:
        setup_job_webhooks(server, plugin)
    client = (
        WebhookClientConfig(url=url)
        if url
        else WebhookClientConfig(service=DEFAULT_WEBHOOK_SERVICE, namespace=namespace)
    )
    return webhook_configurations(
        server.specs,
        client,
        mutating_name=MUTATING_WEBHOOKS,
        validating_name=VALIDATING_WEBHOOKS,
        labels=labels,
        annotations=annotations,
    )


def webhook_service(
    namespace: str, meta: dict[str, Any], selector: dict[str, str]
) -> dict[str, Any]:
    """The Service the API server reaches the webhooks through (443 to the operator's 9443)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {**meta, "name": DEFAULT_WEBHOOK_SERVICE, "namespace": namespace},
        "spec": {
            "selector": selector,
            "ports": [
                {
                    "name": WEBHOOK_PORT_NAME,
                    "port": 443,
                    "targetPort": WEBHOOK_PORT_NAME,
                    "protocol": "TCP",
                }
            ],
        },
    }


def webhook_secret(namespace: str, meta: dict[str, Any]) -> dict[str, Any]:
    """The Secret of the webhook certificates, empty until the operator or cert-manager fills it."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {**meta, "name": DEFAULT_WEBHOOK_SECRET, "namespace": namespace},
        "type": "Opaque",
    }


def webhook_volume() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The Deployment's port, volume and mount of the webhook server."""
    port = {"name": WEBHOOK_PORT_NAME, "containerPort": DEFAULT_WEBHOOK_PORT, "protocol": "TCP"}
    volume = {
        "name": "webhook-certs",
        "secret": {"secretName": DEFAULT_WEBHOOK_SECRET, "defaultMode": 0o440},
    }
    mount = {"name": "webhook-certs", "mountPath": str(DEFAULT_CERT_DIR), "readOnly": True}
    return port, volume, mount


def inject_ca_annotation(namespace: str) -> dict[str, str]:
    """cert-manager's CA injector annotation, naming the serving Certificate."""
    return {"cert-manager.io/inject-ca-from": f"{namespace}/{SERVING_CERTIFICATE}"}


def cert_manager_documents(namespace: str, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """A self-signed Issuer and the serving Certificate into the webhook Secret."""
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {**meta, "name": CERT_MANAGER_ISSUER, "namespace": namespace},
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {**meta, "name": SERVING_CERTIFICATE, "namespace": namespace},
            "spec": {
                "dnsNames": list(CertRotation.service_names(DEFAULT_WEBHOOK_SERVICE, namespace)),
                "issuerRef": {"kind": "Issuer", "name": CERT_MANAGER_ISSUER},
                "secretName": DEFAULT_WEBHOOK_SECRET,
            },
        },
    ]


def cert_manager_overlay(namespace: str, args: list[str]) -> dict[str, str]:
    """The cert-manager overlay: the standalone one with cert-manager's certificate."""
    container = {"name": "operator", "args": args}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": OPERATOR_NAME, "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }
    annotated = [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "annotations": inject_ca_annotation(namespace)},
        }
        for kind, name in (
            ("MutatingWebhookConfiguration", MUTATING_WEBHOOKS),
            ("ValidatingWebhookConfiguration", VALIDATING_WEBHOOKS),
        )
    ]
    return {
        "overlays/cert-manager/certificate.yaml": dump(
            *cert_manager_documents(namespace, meta(OPERATOR_NAME))
        ),
        "overlays/cert-manager/external-certificates.yaml": dump(deployment, *annotated),
        "overlays/cert-manager/kustomization.yaml": kustomization(
            namespace=namespace,
            resources=["../standalone", "certificate.yaml"],
            patches=[{"path": "external-certificates.yaml"}],
        ),
    }
