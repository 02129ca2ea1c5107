"""``admissionregistration.k8s.io/v1`` webhook configurations: their defaults, validation and model.

``ValidatingWebhookConfiguration`` and ``MutatingWebhookConfiguration`` are stored as the real
server stores them, with the v1 defaults filled in (``failurePolicy: Fail``, ``matchPolicy:
Equivalent``, ``timeoutSeconds: 10``, empty selectors, rule ``scope: "*"``, service port 443,
``reinvocationPolicy: Never``) and refused with kube-apiserver's field errors when invalid
(``sideEffects`` and ``admissionReviewVersions`` are required in v1, a timeout lies in 1..30
seconds, a client config names exactly one of ``url`` or ``service``, a URL is ``https``...).

:func:`webhooks_of` reads a stored configuration into :class:`Webhook` records, the form the
dispatcher (:mod:`~etctl.testing._apiserver.webhookdispatch`) matches and calls.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from etctl.runtime import KubeObject, LabelSelector, ObjectView, SelectorError
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import Strategy, WriteContext, field_path, mapping
from etctl.testing._apiserver.validation import (
    invalid_cause,
    required_cause,
    unsupported_cause,
)

__all__ = [
    "ClientConfig",
    "client_config",
    "Rule",
    "Webhook",
    "WebhookConfigurationStrategy",
    "webhooks_of",
]

_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_REVIEW_VERSIONS = ("v1", "v1beta1")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_TIMEOUT_SECONDS = 30
DEFAULT_TIMEOUT_SECONDS = 10


@dataclass(frozen=True, slots=True)
class Rule:
    """One ``rules`` entry: which requests a webhook is called for."""

    operations: tuple[str, ...]
    api_groups: tuple[str, ...]
    api_versions: tuple[str, ...]
    resources: tuple[str, ...]
    scope: str = "*"


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Where a webhook is reached: a URL, or a Service (``namespace/name:port`` + path)."""

    url: str = ""
    service_namespace: str = ""
    service_name: str = ""
    service_path: str = ""
    service_port: int = 443
    ca_bundle: bytes = b""


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a configuration, defaults applied.

    Attributes:
        configuration: the configuration's name.
        name: the webhook's name (``check.example.com``).
        mutating: from a MutatingWebhookConfiguration.
        uid: identifies the webhook across a dispatch (configuration name and index).
    """

    configuration: str
    name: str
    mutating: bool
    uid: str
    rules: tuple[Rule, ...]
    client: ClientConfig
    failure_policy: str
    match_policy: str
    namespace_selector: LabelSelector
    object_selector: LabelSelector
    side_effects: str
    timeout_seconds: int
    review_versions: tuple[str, ...]
    reinvocation: str


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _selector(value: Any) -> LabelSelector:
    try:
        return LabelSelector.from_label_selector(mapping(value))
    except SelectorError:
        return LabelSelector.match_nothing()


def client_config(raw: Any) -> ClientConfig:
    """A ``clientConfig`` (a webhook's, or a CRD's conversion webhook's) as a record."""
    client = mapping(raw)
    service = mapping(client.get("service"))
    try:
        ca_bundle = base64.b64decode(str(client.get("caBundle") or ""), validate=True)
    except ValueError:
        ca_bundle = b""
    return ClientConfig(
        url=str(client.get("url") or ""),
        service_namespace=str(service.get("namespace") or ""),
        service_name=str(service.get("name") or ""),
        service_path=str(service.get("path") or ""),
        service_port=int(service.get("port") or 443),
        ca_bundle=ca_bundle,
    )


def webhooks_of(obj: ObjectView, *, mutating: bool) -> list[Webhook]:
    """The webhooks of a stored (defaulted, validated) configuration, in order."""
    config = str(mapping(obj.get("metadata")).get("name") or "")
    out = []
    for index, entry in enumerate(obj.get("webhooks") or []):
        hook = mapping(entry)
        out.append(
            Webhook(
                configuration=config,
                name=str(hook.get("name") or ""),
                mutating=mutating,
                uid=f"{config}/{index}",
                rules=tuple(
                    Rule(
                        operations=_strings(rule.get("operations")),
                        api_groups=_strings(rule.get("apiGroups")),
                        api_versions=_strings(rule.get("apiVersions")),
                        resources=_strings(rule.get("resources")),
                        scope=str(rule.get("scope") or "*"),
                    )
                    for rule in (mapping(r) for r in hook.get("rules") or [])
                ),
                client=client_config(hook.get("clientConfig")),
                failure_policy=str(hook.get("failurePolicy") or "Fail"),
                match_policy=str(hook.get("matchPolicy") or "Equivalent"),
                namespace_selector=_selector(hook.get("namespaceSelector")),
                object_selector=_selector(hook.get("objectSelector")),
                side_effects=str(hook.get("sideEffects") or ""),
                timeout_seconds=int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS),
                review_versions=_strings(hook.get("admissionReviewVersions")),
                reinvocation=str(hook.get("reinvocationPolicy") or "Never"),
            )
        )
    return out


class WebhookConfigurationStrategy(Strategy):
    """Behaviour of ``validatingwebhookconfigurations`` and ``mutatingwebhookconfigurations``."""

    def __init__(self, *, mutating: bool) -> None:
        self.mutating = mutating

    def defaults(self, obj: KubeObject) -> None:
        """The v1 defaults of every webhook."""
        hooks = obj.get("webhooks")
        if not isinstance(hooks, list):
            return
        for hook in hooks:
            if not isinstance(hook, dict):
                continue
            hook.setdefault("failurePolicy", "Fail")
            hook.setdefault("matchPolicy", "Equivalent")
            hook.setdefault("namespaceSelector", {})
            hook.setdefault("objectSelector", {})
            hook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
            if self.mutating:
                hook.setdefault("reinvocationPolicy", "Never")
            for rule in hook.get("rules") or []:
                if isinstance(rule, dict):
                    rule.setdefault("scope", "*")
            client = hook.get("clientConfig")
            if isinstance(client, dict) and isinstance(client.get("service"), dict):
                client["service"].setdefault("port", 443)

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Every webhook as ``ValidateValidatingWebhookConfiguration`` checks it."""
        causes: list[Cause] = []
        seen: set[str] = set()
        hooks = obj.get("webhooks") or []
        for index, entry in enumerate(hooks if isinstance(hooks, list) else []):
            path = f"webhooks[{index}]"
            hook = mapping(entry)
            name = str(hook.get("name") or "")
            if name in seen:
                causes.append(
                    Cause(
                        "FieldValueDuplicate",
                        field_path(path, "name"),
                        f'Duplicate value: "{name}"',
                    )
                )
            seen.add(name)
            causes += _validate_webhook(hook, path, mutating=self.mutating)
        return causes


def _validate_webhook(hook: Mapping[str, Any], path: str, *, mutating: bool) -> list[Cause]:
    causes = _validate_name(str(hook.get("name") or ""), field_path(path, "name"))
    for index, rule in enumerate(hook.get("rules") or []):
        causes += _validate_rule(mapping(rule), f"{path}.rules[{index}]")
    causes += _choice(hook, path, "failurePolicy", ("Fail", "Ignore"))
    causes += _choice(hook, path, "matchPolicy", ("Equivalent", "Exact"))
    if mutating:
        causes += _choice(hook, path, "reinvocationPolicy", ("IfNeeded", "Never"))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        causes.append(
            required_cause(
                field_path(path, "sideEffects"), "must specify one of None, NoneOnDryRun"
            )
        )
    elif side_effects not in ("None", "NoneOnDryRun"):
        causes.append(
            unsupported_cause(
                field_path(path, "sideEffects"), side_effects, ("None", "NoneOnDryRun")
            )
        )
    versions = hook.get("admissionReviewVersions")
    versions_path = field_path(path, "admissionReviewVersions")
    if not versions:
        causes.append(required_cause(versions_path, "must specify one of v1, v1beta1"))
    elif not any(v in _REVIEW_VERSIONS for v in _strings(versions)):
        causes.append(
            invalid_cause(
                versions_path, list(_strings(versions)), "must include at least one of v1, v1beta1"
            )
        )
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= MAX_TIMEOUT_SECONDS:
        causes.append(
            invalid_cause(
                field_path(path, "timeoutSeconds"),
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )
    causes += _validate_client(mapping(hook.get("clientConfig")), field_path(path, "clientConfig"))
    return causes


def _validate_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required_cause(path)]
    if len(name.split(".")) < 3:
        return [
            invalid_cause(
                path, name, "should be a domain with at least three segments separated by dots"
            )
        ]
    if len(name) > 253 or not all(_DNS_LABEL.match(part) for part in name.split(".")):
        return [
            invalid_cause(
                path,
                name,
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        ]
    return []


def _choice(hook: Mapping[str, Any], path: str, key: str, allowed: Sequence[str]) -> list[Cause]:
    value = hook.get(key)
    if value is None or value in allowed:
        return []
    return [unsupported_cause(field_path(path, key), value, allowed)]


def _validate_rule(rule: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    operations = _strings(rule.get("operations"))
    if not operations:
        causes.append(required_cause(field_path(path, "operations")))
    for index, op in enumerate(operations):
        if op not in _OPERATIONS:
            causes.append(unsupported_cause(f"{path}.operations[{index}]", op, _OPERATIONS))
    if len(operations) > 1 and "*" in operations:
        causes.append(
            invalid_cause(
                field_path(path, "operations"),
                list(operations),
                "if '*' is present, must not specify other operations",
            )
        )
    for key in ("apiGroups", "apiVersions", "resources"):
        values = _strings(rule.get(key))
        if not values:
            causes.append(required_cause(field_path(path, key)))
        elif len(values) > 1 and "*" in values:
            causes.append(
                invalid_cause(
                    field_path(path, key),
                    list(values),
                    f"if '*' is present, must not specify other {_plural_name(key)}",
                )
            )
    for index, resource in enumerate(_strings(rule.get("resources"))):
        if not resource:
            causes.append(required_cause(f"{path}.resources[{index}]"))
        if resource.count("/") > 1:
            causes.append(
                invalid_cause(
                    f"{path}.resources[{index}]",
                    resource,
                    "only '*' and subresources are allowed after '/'",
                )
            )
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        causes.append(unsupported_cause(field_path(path, "scope"), scope, _SCOPES))
    return causes


def _plural_name(key: str) -> str:
    return {"apiGroups": "groups", "apiVersions": "versions", "resources": "resources"}[key]


def _validate_client(client: Mapping[str, Any], path: str) -> list[Cause]:
    url, service = client.get("url"), client.get("service")
    if (url is None) == (service is None):
        return [required_cause(path, "exactly one of url or service is required")]
    if url is not None:
        return _validate_url(str(url), field_path(path, "url"))
    service = mapping(service)
    spath = field_path(path, "service")
    causes = [
        required_cause(field_path(spath, key), f"service {key} is required")
        for key in ("namespace", "name")
        if not service.get(key)
    ]
    svc_path = service.get("path")
    if svc_path is not None and not str(svc_path).startswith("/"):
        causes.append(invalid_cause(field_path(spath, "path"), svc_path, "must start with a '/'"))
    port = service.get("port")
    if isinstance(port, int) and not 1 <= port <= 65535:
        causes.append(
            invalid_cause(
                field_path(spath, "port"),
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    return causes


def _validate_url(url: str, path: str) -> list[Cause]:
    parts = urlsplit(url)
    if parts.scheme != "https":
        return [invalid_cause(path, url, "'https' is the only allowed URL scheme")]
    if not parts.hostname:
        return [invalid_cause(path, url, "host must be specified")]
    if parts.username or parts.password:
        return [invalid_cause(path, url, "user information is not permitted in the URL")]
    if parts.fragment:
        return [invalid_cause(path, url, "fragments are not permitted in the URL")]
    if parts.query:
        return [invalid_cause(path, url, "query parameters are not permitted in the URL")]
    return []
