"""Which webhooks a request is sent to: rules, scope, selectors and the match policy.

As kube-apiserver's ``ShouldCallHook`` decides it: the namespace selector (on the labels of the
request's namespace, or of the namespace object itself when one is created or updated; requests
of other cluster-scoped resources always match), then the object selector (on the new or the old
object's labels), then the rules: operation, API group, version and resource (``*`` matches
anything, ``pods/*`` any subresource, ``*/status`` every status subresource), and the scope
(``Namespaced``, ``Cluster``, ``*``). With ``matchPolicy: Equivalent`` (the default) a request
that no rule names at its own version matches a rule naming the same resource at another served
version; the webhook then sees the object converted to that version.
"""

from __future__ import annotations

from dataclasses import dataclass

from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.admissionrequest import AdmissionAttributes
from etctl.testing._apiserver.store import NAMESPACES, Store, metadata
from etctl.testing._apiserver.webhookconfigs import Rule, Webhook

__all__ = ["Invocation", "admission_namespace", "should_call"]


@dataclass(frozen=True, slots=True)
class Invocation:
    """A webhook to call, and the version its rule matched (the object is sent at it)."""

    webhook: Webhook
    version: str


def admission_namespace(attributes: AdmissionAttributes) -> str:
    """The request's namespace as admission sees it: a namespace object's own name."""
    if attributes.info.key == NAMESPACES:
        return attributes.name
    return attributes.namespace


def _labels(obj: KubeObject | None) -> dict[str, str] | None:
    if obj is None:
        return None
    labels = metadata(obj).get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _namespace_matches(webhook: Webhook, attributes: AdmissionAttributes, store: Store) -> bool:
    namespace = admission_namespace(attributes)
    is_namespace = attributes.info.key == NAMESPACES
    if not namespace and not is_namespace:
        return True  # other cluster-scoped resources are never exempted
    selector = webhook.namespace_selector
    if selector.empty:
        return True
    if is_namespace and not attributes.subresource and attributes.operation in ("CREATE", "UPDATE"):
        labels = _labels(attributes.object) or {}
    else:
        stored = store.get(NAMESPACES, namespace)
        if stored is None:
            raise st.not_found("", "namespaces", namespace)
        labels = _labels(stored) or {}
    return selector.matches(labels)


def _object_matches(webhook: Webhook, attributes: AdmissionAttributes) -> bool:
    selector = webhook.object_selector
    if selector.empty:
        return True
    return any(
        labels is not None and selector.matches(labels)
        for labels in (_labels(attributes.object), _labels(attributes.old_object))
    )


def _any(items: tuple[str, ...], value: str) -> bool:
    return "*" in items or value in items


def _scope_matches(scope: str, attributes: AdmissionAttributes) -> bool:
    """``Namespaced`` never matches a namespace object itself; ``Cluster`` always does."""
    cluster = attributes.info.key == NAMESPACES or not admission_namespace(attributes)
    if scope == "Cluster":
        return cluster
    if scope == "Namespaced":
        return not cluster
    return scope == "*"


def _rule_matches(rule: Rule, attributes: AdmissionAttributes, version: str) -> bool:
    info = attributes.info
    if not _scope_matches(rule.scope, attributes):
        return False
    if not _any(rule.operations, attributes.operation):
        return False
    if not _any(rule.api_groups, info.group) or not _any(rule.api_versions, version):
        return False
    for resource in rule.resources:
        plural, _, sub = resource.partition("/")
        if plural in ("*", info.plural) and sub in ("*", attributes.subresource):
            return True
    return False


def should_call(
    webhook: Webhook, attributes: AdmissionAttributes, store: Store
) -> Invocation | None:
    """The invocation of ``webhook`` for the request, or None when it is not called.

    Raises:
        etctl.errors.NotFound: the webhook selects namespaces and the request's does not exist.
    """
    if not _namespace_matches(webhook, attributes, store):
        return None
    if not _object_matches(webhook, attributes):
        return None
    for rule in webhook.rules:
        if _rule_matches(rule, attributes, attributes.version):
            return Invocation(webhook, attributes.version)
    if webhook.match_policy != "Equivalent" or attributes.kind is not None:
        return None
    others = [v.name for v in attributes.info.versions if v.served and v.name != attributes.version]
    for rule in webhook.rules:
        for version in others:
            if _rule_matches(rule, attributes, version):
                return Invocation(webhook, version)
    return None
