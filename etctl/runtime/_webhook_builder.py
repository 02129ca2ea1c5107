"""A resource's webhooks: wired into the webhook server, described for the API server.

``manager.webhook(RESOURCE).with_defaulter(d).with_validator(v).with_converter(c).build()``
(controller-runtime's ``ctrl.NewWebhookManagedBy(mgr).For(obj)...Complete()``) registers, on the
manager's :class:`~etctl.runtime.WebhookServer`:

* the defaulter at ``/mutate-<group with dashes>-<version>-<kind>`` (kubebuilder's paths), for
  CREATE and UPDATE;
* the validator at ``/validate-<group with dashes>-<version>-<kind>``, for CREATE and UPDATE (and
  DELETE when asked: a webhook on deletes makes them depend on the operator running);
* the converter at ``/convert`` (one path for every kind).

Each registration is also a :class:`WebhookSpec`, and :func:`webhook_configurations` renders
them as the ``MutatingWebhookConfiguration`` and ``ValidatingWebhookConfiguration`` to install,
pointing at a Service (in a cluster) or a URL (an operator run outside it), with Kubernetes'
defaults made explicit: ``failurePolicy: Fail``, ``matchPolicy: Equivalent``, ``sideEffects:
None``, ``timeoutSeconds: 10``, ``admissionReviewVersions: [v1]``. The ``caBundle`` is left for
whoever provisions the certificate (:class:`~etctl.runtime.CertRotator`, or cert-manager's CA
injector) unless given.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from etctl.runtime._admission_handlers import (
    AdmissionEndpoint,
    Defaulter,
    Validator,
    defaulting_handler,
    validating_handler,
)
from etctl.runtime._conversion import HubAndSpoke
from etctl.runtime._objects import KubeObject
from etctl.runtime._resources import Resource
from etctl.runtime._webhook_server import WebhookServer

__all__ = [
    "FailurePolicy",
    "WebhookBuilder",
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


@dataclass(slots=True)
class _Wanted:
    defaulter: Defaulter | None = None
    validator: Validator | None = None
    validate_delete: bool = False
    converter: HubAndSpoke | None = None
    failure_policy: FailurePolicy = "Fail"
    timeout_seconds: int = 10
    specs: list[WebhookSpec] = field(default_factory=list)


class WebhookBuilder:
    """Registers a resource's webhooks on a webhook server (see the module docs).

    Args:
        server: the webhook server (``manager.webhook_server``).
        resource: the resource the webhooks are for; its version is the one the handlers see.
        versions: the versions the rules match (default: the resource's). With several, each
            request reaches the handlers in the version the client used (as for a CRD whose
            versions share one schema); with one, requests in other versions are converted to it.
    """

    def __init__(
        self, server: WebhookServer, resource: Resource, *, versions: Sequence[str] = ()
    ) -> None:
        self._server = server
        self._resource = resource
        self._versions = tuple(versions) or (resource.version,)
        self._wanted = _Wanted()
        self._built = False

    def with_defaulter(self, defaulter: Defaulter) -> Self:
        """Serve ``defaulter`` as a mutating webhook (CREATE and UPDATE)."""
        self._wanted.defaulter = defaulter
        return self

    def with_validator(self, validator: Validator, *, on_delete: bool = False) -> Self:
        """Serve ``validator`` as a validating webhook (CREATE, UPDATE; DELETE if ``on_delete``)."""
        self._wanted.validator = validator
        self._wanted.validate_delete = on_delete
        return self

    def with_converter(self, converter: HubAndSpoke) -> Self:
        """Serve ``converter`` at ``/convert`` (the CRD names it in ``spec.conversion``)."""
        self._wanted.converter = converter
        return self

    def with_options(
        self, *, failure_policy: FailurePolicy = "Fail", timeout_seconds: int = 10
    ) -> Self:
        """What the API server does when a webhook fails, and how long it waits (1-30 s)."""
        if not 1 <= timeout_seconds <= 30:
            msg = f"a webhook's timeoutSeconds is 1-30, got {timeout_seconds}"
            raise ValueError(msg)
        self._wanted.failure_policy = failure_policy
        self._wanted.timeout_seconds = timeout_seconds
        return self

    def _spec(self, mutating: bool, path: str, operations: tuple[str, ...]) -> WebhookSpec:
        resource = self._resource
        verb = "mutate" if mutating else "validate"
        return WebhookSpec(
            mutating=mutating,
            name=f"{verb}.{resource.plural}.{resource.group or 'core'}",
            path=path,
            group=resource.group,
            versions=self._versions,
            resource=resource.plural,
            operations=operations,
            namespaced=resource.namespaced,
            failure_policy=self._wanted.failure_policy,
            timeout_seconds=self._wanted.timeout_seconds,
        )

    def build(self) -> tuple[WebhookSpec, ...]:
        """Register the webhooks; returns the admission webhooks' specs.

        Raises:
            ValueError: nothing to register, a path is taken, or the converter is for another
                kind.
            RuntimeError: built twice, or the server has started.
        """
        if self._built:
            msg = "a webhook builder builds once"
            raise RuntimeError(msg)
        wanted, resource = self._wanted, self._resource
        if wanted.defaulter is None and wanted.validator is None and wanted.converter is None:
            msg = f"no defaulter, validator or converter for {resource}"
            raise ValueError(msg)
        specs: list[WebhookSpec] = []
        if wanted.defaulter is not None:
            path = webhook_path("mutate", resource)
            self._server.register(path, AdmissionEndpoint(defaulting_handler(wanted.defaulter)))
            specs.append(self._spec(True, path, ("CREATE", "UPDATE")))
        if wanted.validator is not None:
            path = webhook_path("validate", resource)
            self._server.register(path, AdmissionEndpoint(validating_handler(wanted.validator)))
            operations = ("CREATE", "UPDATE", "DELETE") if wanted.validate_delete else ()
            specs.append(self._spec(False, path, operations or ("CREATE", "UPDATE")))
        if wanted.converter is not None:
            converter = wanted.converter
            if (converter.group, converter.kind) != (resource.group, resource.kind):
                msg = f"the converter of {converter.kind}.{converter.group} is not for {resource}"
                raise ValueError(msg)
            self._server.conversion.register(converter)
        self._server.specs.extend(specs)
        self._built = True
        return tuple(specs)
