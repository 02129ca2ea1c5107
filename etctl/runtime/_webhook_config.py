"""What the API server is told about a resource's webhooks: specs and webhook configurations.

A :class:`WebhookSpec` is one registered admission webhook (what it matches, where it is served);
:func:`webhook_configurations` renders specs as the ``MutatingWebhookConfiguration`` and
``ValidatingWebhookConfiguration`` that register them, pointing at a Service (in a cluster) or a
URL (an operator run outside it) through a :class:`WebhookClientConfig`, with Kubernetes'
defaults made explicit: ``failurePolicy: Fail``, ``matchPolicy: Equivalent``, ``sideEffects:
None``, ``timeoutSeconds: 10``, ``admissionReviewVersions: [v1]``. The ``caBundle`` is left for
whoever provisions the certificate (:class:`~etctl.runtime.CertRotator`, or cert-manager's CA
injector) unless given. Nothing here serves a request: rendering needs no server running.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from etctl.runtime._objects import KubeObject
from etctl.runtime._resources import Resource

__all__ = [
    "FailurePolicy",
    "WebhookClientConfig",
    "WebhookSpec",
    "webhook_configurations",
    "webhook_path",
]

FailurePolicy = Literal["Fail", "Ignore"]
"""What the API server does when the webhook cannot be reached or fails: refuse, or let pass."""


def webhook_path(verb: Literal["mutate", "validate"], resource: Resource) -> str:
    """Kubebuilder's path of a resource's webhook: ``/validate-kubeflow-org-v1-tfjob``."""
    group = resource.group.replace(".", "-") if resource.group else "core"
    return f"/{verb}-{group}-{resource.version}-{resource.kind.lower()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookSpec:
    """One webhook of a webhook configuration: what it matches and where it is served.

    Attributes:
        mutating: a mutating (defaulting) webhook, else a validating one.
        name: the webhook's name (qualified: ``validate.tfjobs.kubeflow.org``), which
            ``kubectl`` shows when the webhook refuses a request.
        path: where the webhook server serves it.
        group: the API group of the resource.
        versions: the versions the rule matches; requests in others reach it converted
            (``matchPolicy: Equivalent``).
        resource: the resource's plural.
        operations: the operations it is called for.
        namespaced: whether the resource is namespaced (the rule's scope).
        failure_policy: what the API server does when the webhook fails.
        timeout_seconds: how long the API server waits for an answer (1-30).
    """

    mutating: bool
    name: str
    path: str
    group: str
    versions: tuple[str, ...]
    resource: str
    operations: tuple[str, ...]
    namespaced: bool = True
    failure_policy: FailurePolicy = "Fail"
    timeout_seconds: int = 10

    def entry(self, client_config: WebhookClientConfig) -> dict[str, Any]:
        """This webhook as an entry of its configuration's ``webhooks``."""
        entry: dict[str, Any] = {
            "name": self.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config.render(self.path),
            "failurePolicy": self.failure_policy,
            "matchPolicy": "Equivalent",
            "rules": [
                {
                    "apiGroups": [self.group],
                    "apiVersions": list(self.versions),
                    "operations": list(self.operations),
                    "resources": [self.resource],
                    "scope": "Namespaced" if self.namespaced else "Cluster",
                }
            ],
            "sideEffects": "None",
            "timeoutSeconds": self.timeout_seconds,
        }
        if self.mutating:
            entry["reinvocationPolicy"] = "Never"
        return entry


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookClientConfig:
    """How the API server reaches the webhook server: a Service in the cluster, or a URL.

    Attributes:
        service: the Service's name (with ``namespace``), for an operator in the cluster.
        namespace: the Service's namespace.
        port: the Service's port.
        url: the webhook server's base URL (``https://host:9443``) instead of a Service, for an
            operator run outside the cluster.
        ca_bundle: the PEM CA bundle the API server verifies the server with (empty: injected
            later by whoever provisions the certificate).
    """

    service: str = ""
    namespace: str = ""
    port: int = 443
    url: str = ""
    ca_bundle: bytes = b""

    def __post_init__(self) -> None:
        if bool(self.url) == bool(self.service):
            msg = "a webhook client config names either a Service or a URL"
            raise ValueError(msg)
        if self.service and not self.namespace:
            msg = "a webhook Service needs its namespace"
            raise ValueError(msg)
        if self.url and not self.url.startswith("https://"):
            msg = f"a webhook URL is https://..., got {self.url!r}"
            raise ValueError(msg)

    def render(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` of the webhook served at ``path``."""
        config: dict[str, Any]
        if self.url:
            config = {"url": self.url.rstrip("/") + path}
        else:
            config = {
                "service": {
                    "name": self.service,
                    "namespace": self.namespace,
                    "path": path,
                    "port": self.port,
                }
            }
        if self.ca_bundle:
            config["caBundle"] = base64.b64encode(self.ca_bundle).decode()
        return config


def webhook_configurations(
    specs: Sequence[WebhookSpec],
    client_config: WebhookClientConfig,
    *,
    mutating_name: str,
    validating_name: str,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> list[KubeObject]:
    """The configurations registering ``specs`` with the API server (one per kind of webhook).

    A configuration with no webhook is left out. Entries are sorted by name, so rendering is
    deterministic.
    """
    documents: list[KubeObject] = []
    for mutating, kind, name in (
        (True, "MutatingWebhookConfiguration", mutating_name),
        (False, "ValidatingWebhookConfiguration", validating_name),
    ):
        entries = [
            spec.entry(client_config)
            for spec in sorted(specs, key=lambda s: s.name)
            if spec.mutating == mutating
        ]
        if not entries:
            continue
        metadata: dict[str, Any] = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
        documents.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": metadata,
                "webhooks": entries,
            }
        )
    return documents
