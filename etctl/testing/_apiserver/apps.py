"""Deployments and ReplicaSets (``apps/v1``): their defaults and validation, as the real registry's.

Defaults: one replica, ten revisions of history, a 600 s progress deadline, the ``RollingUpdate``
strategy with 25% surge and unavailability (Deployments), and the pod defaults on the template's
spec. Validation: a selector that is not empty and matches the template's labels, non-negative
replicas, a template whose restart policy is ``Always``, the template's pod spec as pods are
validated (paths under ``spec.template.spec``), and a selector that never changes. What runs them
is :class:`~etctl.testing._controllers.WorkloadController`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.pods import PodStrategy
from etctl.testing._apiserver.podspec import decode_error, validate_pod_spec
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import Strategy, WriteContext, mapping
from etctl.testing._apiserver.validation import (
    invalid_cause,
    label_value_errors,
    qualified_name_errors,
    required_cause,
    unsupported_cause,
)

__all__ = ["WorkloadStrategy", "selector_matches"]

_POD_DEFAULTS = PodStrategy()


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Whether a ``LabelSelector`` selects ``labels`` (an empty selector selects nothing here)."""
    match_labels = mapping(selector.get("matchLabels"))
    expressions = [e for e in selector.get("matchExpressions") or [] if isinstance(e, Mapping)]
    if not match_labels and not expressions:
        return False
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    return all(_requirement_holds(e, labels) for e in expressions)


def _requirement_holds(expression: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    key, operator = str(expression.get("key")), expression.get("operator")
    values = [str(v) for v in expression.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not (present and labels[key] in values)
    if operator == "Exists":
        return present
    return operator == "DoesNotExist" and not present


def _go_map(labels: Mapping[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    return f"map[string]string{{{inner}}}"


class WorkloadStrategy(Strategy):
    """Behaviour of ``deployments`` and ``replicasets``.

    Args:
        deployment: True for Deployments (a strategy and a progress deadline).
    """

    def __init__(self, *, deployment: bool) -> None:
        self.deployment = deployment

    def decode_error(self, obj: ObjectView) -> str | None:
        """Quantities of the template's containers that do not parse."""
        template = mapping(mapping(obj.get("spec")).get("template"))
        return decode_error(mapping(template.get("spec")))

    def defaults(self, obj: KubeObject) -> None:
        """``SetDefaults_Deployment`` or ``_ReplicaSet``, and the template's pod defaults."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        if self.deployment:
            spec.setdefault("revisionHistoryLimit", 10)
            spec.setdefault("progressDeadlineSeconds", 600)
            strategy = spec.setdefault("strategy", {})
            if isinstance(strategy, dict):
                strategy.setdefault("type", "RollingUpdate")
                if strategy["type"] == "RollingUpdate":
                    rolling = strategy.setdefault("rollingUpdate", {})
                    if isinstance(rolling, dict):
                        rolling.setdefault("maxUnavailable", "25%")
                        rolling.setdefault("maxSurge", "25%")
        template = spec.get("template")
        if isinstance(template, dict):
            _POD_DEFAULTS.defaults(template)

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """A new workload has an empty status."""
        obj["status"] = {}

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Selector, replicas and template."""
        spec = mapping(obj.get("spec"))
        causes: list[Cause] = []
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            causes.append(
                invalid_cause("spec.replicas", replicas, "must be greater than or equal to 0")
            )
        selector = mapping(spec.get("selector"))
        if not selector:
            causes.append(required_cause("spec.selector"))
        else:
            for key, value in mapping(selector.get("matchLabels")).items():
                causes += [
                    invalid_cause("spec.selector.matchLabels", key, m)
                    for m in qualified_name_errors(str(key))
                ]
                causes += [
                    invalid_cause("spec.selector.matchLabels", value, m)
                    for m in label_value_errors(str(value))
                ]
            if not selector.get("matchLabels") and not selector.get("matchExpressions"):
                causes.append(
                    invalid_cause("spec.selector", "", "empty selector is invalid for deployment")
                    if self.deployment
                    else required_cause("spec.selector")
                )
        template = mapping(spec.get("template"))
        labels = mapping(mapping(template.get("metadata")).get("labels"))
        if selector and not selector_matches(selector, labels):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "spec.template.metadata.labels",
                    f"Invalid value: {_go_map(labels)}: `selector` does not match template "
                    "`labels`",
                )
            )
        pod_spec = mapping(template.get("spec"))
        causes += validate_pod_spec(pod_spec, "spec.template.spec")
        restart = pod_spec.get("restartPolicy")
        if restart and restart != "Always":
            causes.append(
                unsupported_cause("spec.template.spec.restartPolicy", restart, ("Always",))
            )
        return causes

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As a create, and the selector is immutable."""
        causes = self.validate_create(new, ctx)
        new_selector = mapping(new.get("spec")).get("selector")
        old_selector = mapping(old.get("spec")).get("selector")
        if new_selector != old_selector:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "spec.selector",
                    "Invalid value: v1.LabelSelector{MatchLabels:"
                    f"{_go_map(mapping(mapping(new_selector).get('matchLabels')))}, "
                    "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
                )
            )
        return causes
