"""``elasticPolicy.metrics``: the ``autoscaling/v2`` MetricSpec list a PyTorchJob's HPA scales on.

The models are Kubernetes' own types (``k8s.io/api/autoscaling/v2``), field for field, so the CRD
describes ``metrics`` as training-operator's does and a manifest written for it parses unchanged;
the HorizontalPodAutoscaler built from them (:mod:`etctl.jobs.pytorchjob._hpa`) carries them as
written. Two things are tighter than the Go types: ``type`` (of a metric and of a target) is one
of the values the HPA controller knows, and each metric sets the source its ``type`` names, so a
metric the API server would refuse on the HPA is refused on the job instead, where the user can
see it (:func:`metric_problems`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from etctl.common import Int32, Quantity, ValueModel

__all__ = [
    "ContainerResourceMetricSource",
    "CrossVersionObjectReference",
    "ExternalMetricSource",
    "LabelSelector",
    "LabelSelectorRequirement",
    "MetricIdentifier",
    "MetricSourceType",
    "MetricSpec",
    "MetricTarget",
    "MetricTargetType",
    "ObjectMetricSource",
    "PodsMetricSource",
    "ResourceMetricSource",
    "metric_problems",
]

_ATOMIC_LIST: JsonDict = {"x-kubernetes-list-type": "atomic"}


class MetricSourceType(StrEnum):
    """Which source a metric reads (``MetricSpec.type``)."""

    CONTAINER_RESOURCE = "ContainerResource"
    EXTERNAL = "External"
    OBJECT = "Object"
    PODS = "Pods"
    RESOURCE = "Resource"


class MetricTargetType(StrEnum):
    """How a target is expressed (``MetricTarget.type``)."""

    UTILIZATION = "Utilization"
    VALUE = "Value"
    AVERAGE_VALUE = "AverageValue"


class LabelSelectorRequirement(ValueModel):
    """One expression of a label selector."""

    key: str
    """The label key."""
    operator: str
    """In, NotIn, Exists or DoesNotExist."""
    values: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC_LIST)
    """The values (In, NotIn); empty for Exists and DoesNotExist."""


class LabelSelector(ValueModel):
    """A label selector (``metav1.LabelSelector``)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})

    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, json_schema_extra=_ATOMIC_LIST
    )
    """Requirements, ANDed."""
    match_labels: dict[str, str] | None = None
    """Labels that must all match, ANDed with the expressions."""


class MetricIdentifier(ValueModel):
    """A metric by name, and optionally a selector narrowing it."""

    name: str
    """The metric's name."""
    selector: LabelSelector | None = None
    """Narrows the metric's series (unset: the metric name alone)."""


class MetricTarget(ValueModel):
    """The value a metric should have."""

    type: MetricTargetType
    """Utilization, Value or AverageValue."""
    value: Quantity | None = None
    """The target value of the metric (Value)."""
    average_value: Quantity | None = None
    """The target value of the metric averaged over the pods (AverageValue)."""
    average_utilization: Int32 | None = None
    """The target utilization, in percent of the pods' requests (Utilization)."""


class CrossVersionObjectReference(ValueModel):
    """The object an Object metric describes."""

    kind: str
    """The referent's kind."""
    name: str
    """The referent's name."""
    api_version: str | None = None
    """The referent's API version."""


class ResourceMetricSource(ValueModel):
    """A resource of the pods (cpu, memory), as the kubelet reports it."""

    name: str
    """The resource's name."""
    target: MetricTarget
    """Its target."""


class ContainerResourceMetricSource(ValueModel):
    """A resource of one container of the pods."""

    name: str
    """The resource's name."""
    target: MetricTarget
    """Its target."""
    container: str
    """The container's name."""


class ObjectMetricSource(ValueModel):
    """A metric describing one object (an Ingress's hits per second)."""

    described_object: CrossVersionObjectReference
    """The object."""
    target: MetricTarget
    """Its target."""
    metric: MetricIdentifier
    """The metric."""


class PodsMetricSource(ValueModel):
    """A metric of each pod, averaged."""

    metric: MetricIdentifier
    """The metric."""
    target: MetricTarget
    """Its target."""


class ExternalMetricSource(ValueModel):
    """A metric from outside the cluster's objects (a queue's length)."""

    metric: MetricIdentifier
    """The metric."""
    target: MetricTarget
    """Its target."""


class MetricSpec(ValueModel):
    """One metric the autoscaler computes a replica count from (the largest count wins)."""

    type: MetricSourceType
    """ContainerResource, External, Object, Pods or Resource: the source set below."""
    container_resource: ContainerResourceMetricSource | None = None
    """Set for ContainerResource."""
    external: ExternalMetricSource | None = None
    """Set for External."""
    object: ObjectMetricSource | None = None
    """Set for Object."""
    pods: PodsMetricSource | None = None
    """Set for Pods."""
    resource: ResourceMetricSource | None = None
    """Set for Resource."""

    def sources(self) -> dict[MetricSourceType, ValueModel]:
        """The sources this metric sets, by the type each one is for."""
        found: dict[MetricSourceType, ValueModel | None] = {
            MetricSourceType.CONTAINER_RESOURCE: self.container_resource,
            MetricSourceType.EXTERNAL: self.external,
            MetricSourceType.OBJECT: self.object,
            MetricSourceType.PODS: self.pods,
            MetricSourceType.RESOURCE: self.resource,
        }
        return {kind: source for kind, source in found.items() if source is not None}


def _target(source: ValueModel | None) -> MetricTarget | None:
    target = getattr(source, "target", None)
    return target if isinstance(target, MetricTarget) else None


def metric_problems(metrics: Sequence[MetricSpec], *, path: str) -> list[str]:
    """What the API server would refuse in these metrics once they are an HPA's.

    Each metric sets exactly the source its type names; a Utilization target gives
    ``averageUtilization`` (and only Resource and ContainerResource metrics may use one), a Value
    target ``value``, an AverageValue target ``averageValue`` (Kubernetes' HPA validation).
    """
    problems = []
    for index, metric in enumerate(metrics):
        where = f"{path}[{index}]"
        sources = metric.sources()
        field = metric.type.value[0].lower() + metric.type.value[1:]
        if metric.type not in sources:
            problems.append(f"{where}.{field}: missing; a {metric.type} metric sets it")
        others = sorted(str(kind) for kind in sources if kind is not metric.type)
        if others:
            problems.append(
                f"{where}: sets the source of {', '.join(others)} besides {metric.type}; "
                "a metric has exactly the source its type names"
            )
        target = _target(sources.get(metric.type))
        if target is not None:
            problems.extend(_target_problems(metric.type, target, f"{where}.{field}.target"))
    return problems


def _target_problems(kind: MetricSourceType, target: MetricTarget, where: str) -> list[str]:
    needs = {
        MetricTargetType.UTILIZATION: ("averageUtilization", target.average_utilization),
        MetricTargetType.VALUE: ("value", target.value),
        MetricTargetType.AVERAGE_VALUE: ("averageValue", target.average_value),
    }
    name, value = needs[target.type]
    problems = []
    if value is None:
        problems.append(f"{where}.{name}: missing; a {target.type} target gives it")
    resources = (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE)
    if target.type is MetricTargetType.UTILIZATION and kind not in resources:
        problems.append(
            f"{where}.type: Utilization is for Resource and ContainerResource metrics only; "
            "use Value or AverageValue"
        )
    if target.average_utilization is not None and target.average_utilization < 1:
        problems.append(f"{where}.averageUtilization: must be at least 1 (a percentage)")
    return problems
