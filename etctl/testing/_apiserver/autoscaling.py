"""HorizontalPodAutoscalers (``autoscaling/v2``): their defaults and validation, as the registry's.

Defaults (``SetDefaults_HorizontalPodAutoscaler``): ``minReplicas`` 1; no metrics means one, CPU
at 80% average utilization; a ``behavior`` that is set gets every unset field of its scale-up
rules (no stabilization window, the larger of 4 pods or 100% per 15 s) and scale-down rules
(100% per 15 s; the window is left to the controller's flag). A new object's status is
``desiredReplicas: 0``.

Validation (``ValidateHorizontalPodAutoscaler``), messages and paths as the real server's:
``minReplicas`` at least 1 (0 only on an update of an object that already had 0),
``maxReplicas`` at least 1 and not below ``minReplicas``, a ``scaleTargetRef`` with a kind and a
name that are path segments, each metric of a known type that sets exactly its own source with
the target fields that source needs (positive values, utilizations of at least 1, metric names
that are path segments), and ``behavior`` rules in range.

No controller acts on them here (there are no metrics to scale on); a test that plays the
autoscaler writes the target's ``/scale`` itself, as the HPA controller does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from etctl._apimachinery import quantity
from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import Strategy, WriteContext, field_path, mapping
from etctl.testing._apiserver.validation import (
    NameRule,
    forbidden_cause,
    invalid_cause,
    name_errors,
    required_cause,
    unsupported_cause,
)

__all__ = ["HorizontalPodAutoscalerStrategy"]

_SOURCES: Final = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}
_SOURCE_ORDER: Final = ("object", "external", "pods", "resource", "containerResource")
_TARGET_TYPES: Final = ("Utilization", "Value", "AverageValue")
_SELECT_POLICIES: Final = ("Disabled", "Max", "Min")
_POLICY_TYPES: Final = ("Percent", "Pods")
_MAX_PERIOD_SECONDS: Final = 1800
_MAX_WINDOW_SECONDS: Final = 3600
_DEFAULT_CPU_UTILIZATION: Final = 80


def _scale_up_rules() -> dict[str, Any]:
    return {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }


def _scale_down_rules() -> dict[str, Any]:
    return {
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def _filled(rules: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """``copyHPAScalingRules``: every field ``rules`` sets, over the defaults."""
    given = mapping(rules)
    return {**defaults, **{k: v for k, v in given.items() if v is not None}}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _path_segment_causes(value: Any, where: str) -> list[Cause]:
    if not isinstance(value, str) or not value:
        return [required_cause(where)]
    return [invalid_cause(where, value, msg) for msg in name_errors(NameRule.PATH_SEGMENT, value)]


def _positive(value: Any, where: str) -> list[Cause]:
    if value is None:
        return []
    try:
        amount = quantity.parse(value).amount
    except quantity.QuantityError:
        return [invalid_cause(where, value, "must be positive")]
    return [] if amount > 0 else [invalid_cause(where, value, "must be positive")]


def _target_causes(target: Mapping[str, Any], where: str) -> list[Cause]:
    causes = []
    kind = target.get("type")
    if not kind:
        causes.append(required_cause(f"{where}.type", "must specify a metric target type"))
    if kind not in _TARGET_TYPES:
        causes.append(
            invalid_cause(
                f"{where}.type", kind or "", "must be either Utilization, Value, or AverageValue"
            )
        )
    causes += _positive(target.get("value"), f"{where}.value")
    causes += _positive(target.get("averageValue"), f"{where}.averageValue")
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        causes.append(
            invalid_cause(f"{where}.averageUtilization", utilization, "must be greater than 0")
        )
    return causes


def _source_causes(key: str, source: Mapping[str, Any], where: str) -> list[Cause]:
    target = mapping(source.get("target"))
    causes = []
    if key in ("object", "external", "pods"):
        metric = mapping(source.get("metric"))
        if not metric.get("name"):
            causes.append(required_cause(f"{where}.metric.name", "must specify a metric name"))
        else:
            causes += _path_segment_causes(metric.get("name"), f"{where}.metric.name")
    if key == "object":
        ref = mapping(source.get("describedObject"))
        causes += _reference_causes(ref, f"{where}.describedObject")
    if key in ("resource", "containerResource") and not source.get("name"):
        causes.append(required_cause(f"{where}.name", "must specify a resource name"))
    if key == "containerResource" and not source.get("container"):
        causes.append(required_cause(f"{where}.container", "must specify a container"))
    causes += _target_causes(target, f"{where}.target")
    value, average = target.get("value"), target.get("averageValue")
    utilization = target.get("averageUtilization")
    if key in ("resource", "containerResource"):
        if utilization is None and average is None:
            causes.append(
                required_cause(
                    f"{where}.target.averageUtilization",
                    "must set either a target raw value or a target utilization",
                )
            )
        if utilization is not None and average is not None:
            causes.append(
                forbidden_cause(
                    f"{where}.target.averageValue",
                    "may not set both a target raw value and a target utilization",
                )
            )
    elif key == "pods" and average is None:
        causes.append(
            required_cause(
                f"{where}.target.averageValue", "must specify a positive target averageValue"
            )
        )
    elif key in ("object", "external") and value is None and average is None:
        detail = (
            "must set either a target value or averageValue"
            if key == "object"
            else "must set either a target value for metric or a per-pod target"
        )
        causes.append(required_cause(f"{where}.target.averageValue", detail))
    elif key == "external" and value is not None and average is not None:
        causes.append(
            forbidden_cause(
                f"{where}.target.value",
                "may not set both a target value for metric and a per-pod target",
            )
        )
    return causes


def _metric_causes(metric: Mapping[str, Any], where: str) -> list[Cause]:
    causes = []
    kind = metric.get("type")
    supported = sorted(_SOURCES)
    if not kind:
        causes.append(required_cause(f"{where}.type", "must specify a metric source type"))
    if kind not in _SOURCES:
        causes.append(unsupported_cause(f"{where}.type", kind or "", supported))
    present = [key for key in _SOURCE_ORDER if metric.get(key) is not None]
    if present:
        first = present[0]
        causes += _source_causes(first, mapping(metric.get(first)), f"{where}.{first}")
    expected = _SOURCES.get(str(kind))
    if expected is not None and metric.get(expected) is None:
        causes.append(
            required_cause(
                f"{where}.{expected}", "must populate information for the given metric source"
            )
        )
    if len(present) != 1:
        causes.extend(
            forbidden_cause(f"{where}.{key}", "must populate the given metric source only")
            for key in present
            if key != expected
        )
    return causes


def _reference_causes(ref: Mapping[str, Any], where: str) -> list[Cause]:
    return _path_segment_causes(ref.get("kind"), f"{where}.kind") + _path_segment_causes(
        ref.get("name"), f"{where}.name"
    )


def _rules_causes(rules: Any, where: str) -> list[Cause]:
    if rules is None:
        return []
    given = mapping(rules)
    causes = []
    window = _int(given.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        causes.append(
            invalid_cause(
                f"{where}.stabilizationWindowSeconds",
                window,
                "must be greater than or equal to zero",
            )
        )
    if window is not None and window > _MAX_WINDOW_SECONDS:
        causes.append(
            invalid_cause(
                f"{where}.stabilizationWindowSeconds",
                window,
                f"must be less than or equal to {_MAX_WINDOW_SECONDS}",
            )
        )
    select = given.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        causes.append(unsupported_cause(f"{where}.selectPolicy", select, _SELECT_POLICIES))
    policies = given.get("policies") or []
    if not policies:
        causes.append(required_cause(f"{where}.policies", "must specify at least one Policy"))
    for index, policy in enumerate(policies if isinstance(policies, list) else []):
        at = f"{where}.policies[{index}]"
        entry = mapping(policy)
        if entry.get("type") not in _POLICY_TYPES:
            causes.append(unsupported_cause(f"{at}.type", entry.get("type") or "", _POLICY_TYPES))
        for name in ("value", "periodSeconds"):
            number = _int(entry.get(name)) or 0
            if number <= 0:
                causes.append(invalid_cause(f"{at}.{name}", number, "must be greater than zero"))
        period = _int(entry.get("periodSeconds")) or 0
        if period > _MAX_PERIOD_SECONDS:
            causes.append(
                invalid_cause(
                    f"{at}.periodSeconds",
                    period,
                    f"must be less than or equal to {_MAX_PERIOD_SECONDS}",
                )
            )
    return causes


def _spec_causes(spec: Mapping[str, Any], lowest_min: int) -> list[Cause]:
    causes = []
    low, high = _int(spec.get("minReplicas")), _int(spec.get("maxReplicas")) or 0
    if low is not None and low < lowest_min:
        causes.append(
            invalid_cause("spec.minReplicas", low, f"must be greater than or equal to {lowest_min}")
        )
    if high < 1:
        causes.append(invalid_cause("spec.maxReplicas", high, "must be greater than 0"))
    if low is not None and high < low:
        causes.append(
            invalid_cause(
                "spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"
            )
        )
    causes += _reference_causes(mapping(spec.get("scaleTargetRef")), "spec.scaleTargetRef")
    metrics = spec.get("metrics") or []
    for index, metric in enumerate(metrics if isinstance(metrics, list) else []):
        causes += _metric_causes(mapping(metric), field_path("spec", "metrics", index))
    behavior = spec.get("behavior")
    if isinstance(behavior, Mapping):
        causes += _rules_causes(behavior.get("scaleUp"), "spec.behavior.scaleUp")
        causes += _rules_causes(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return causes


class HorizontalPodAutoscalerStrategy(Strategy):
    """Behaviour of ``horizontalpodautoscalers`` (see the module docstring)."""

    def defaults(self, obj: KubeObject) -> None:
        """``SetDefaults_HorizontalPodAutoscaler``."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("minReplicas", 1)
        if not spec.get("metrics"):
            spec["metrics"] = [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {
                            "type": "Utilization",
                            "averageUtilization": _DEFAULT_CPU_UTILIZATION,
                        },
                    },
                }
            ]
        behavior = spec.get("behavior")
        if isinstance(behavior, dict):
            behavior["scaleUp"] = _filled(behavior.get("scaleUp"), _scale_up_rules())
            behavior["scaleDown"] = _filled(behavior.get("scaleDown"), _scale_down_rules())

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """A new autoscaler has scaled nothing yet."""
        obj["status"] = {"desiredReplicas": 0}

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """``ValidateHorizontalPodAutoscaler``."""
        return _spec_causes(mapping(obj.get("spec")), 1)

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As a create, except that an autoscaler that had ``minReplicas: 0`` may keep it."""
        if ctx.subresource == "status":
            return []
        had_zero = mapping(old.get("spec")).get("minReplicas") == 0
        return _spec_causes(mapping(new.get("spec")), 0 if had_zero else 1)
