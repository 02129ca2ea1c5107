"""A resource's webhooks wired into the webhook server (and described for the API server).

``manager.webhook(RESOURCE).with_defaulter(d).with_validator(v).with_converter(c).build()``
(controller-runtime's ``ctrl.NewWebhookManagedBy(mgr).For(obj)...Complete()``) registers, on the
manager's :class:`~etctl.runtime.WebhookServer`:

* the defaulter at ``/mutate-<group with dashes>-<version>-<kind>`` (kubebuilder's paths), for
  CREATE and UPDATE;
* the validator at ``/validate-<group with dashes>-<version>-<kind>``, for CREATE and UPDATE (and
  DELETE when asked: a webhook on deletes makes them depend on the operator running);
* the converter at ``/convert`` (one path for every kind).

Each registration is also a :class:`~etctl.runtime._webhook_config.WebhookSpec`, which
:func:`~etctl.runtime.webhook_configurations` renders as the configurations to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Self

from etctl.runtime._admission_handlers import (
    AdmissionEndpoint,
    Defaulter,
    Validator,
    defaulting_handler,
    validating_handler,
)
from etctl.runtime._conversion import HubAndSpoke
from etctl.runtime._resources import Resource
from etctl.runtime._webhook_config import FailurePolicy, WebhookSpec, webhook_path
from etctl.runtime._webhook_server import WebhookServer

__all__ = ["WebhookBuilder"]


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
