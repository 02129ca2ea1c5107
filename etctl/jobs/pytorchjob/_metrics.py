"""``elasticPolicy.metrics``: the ``autoscaling/v2`` MetricSpec list a PyTorchJob's HPA scales on.

The models are Kubernetes' own types (``k8s.io/api/autoscaling/v2``), field for field, so the CRD
describes ``metrics`` as training-operator's does and a manifest written for it parses unchanged;
the HorizontalPodAutoscaler built from them (:mod:`etctl.jobs.pytorchjob._hpa`) carries them as
written. ``type`` (of a metric and of a target) is one of the values Kubernetes accepts, in the
schema; what else the API server would refuse on the HPA is refused on the job instead, where
its user can see it (:func:`metric_problems`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import ConfigDict, Field
from pydantic.config import JsonDict

from etctl._apimachinery import quantity
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


def _positive(value: Quantity | None) -> bool:
    if value is None:
        return True
    try:
        amount = quantity.parse(value).amount
    except quantity.QuantityError:
        return False
    return amount > 0


def _target_problems(target: MetricTarget, where: str) -> list[str]:
    problems = [
        f"{where}.{name}: must be positive"
        for name, value in (("value", target.value), ("averageValue", target.average_value))
        if not _positive(value)
    ]
    if target.average_utilization is not None and target.average_utilization < 1:
        problems.append(f"{where}.averageUtilization: must be greater than 0")
    return problems


def _name_problems(name: str, where: str) -> list[str]:
    if not name:
        return [f"{where}: must specify a metric name"]
    if name in (".", "..") or "/" in name or "%" in name:
        return [f"{where}: {name!r} may not be '.' or '..' nor contain '/' or '%'"]
    return []


def _source_problems(kind: MetricSourceType, source: ValueModel, where: str) -> list[str]:
    """What Kubernetes' HPA validation says of one source (``validate<Kind>Source``)."""
    target = getattr(source, "target", None)
    if not isinstance(target, MetricTarget):
        return []
    problems = _target_problems(target, f"{where}.target")
    metric = getattr(source, "metric", None)
    if isinstance(metric, MetricIdentifier):
        problems.extend(_name_problems(metric.name, f"{where}.metric.name"))
    value, average, utilization = target.value, target.average_value, target.average_utilization
    if kind in (MetricSourceType.RESOURCE, MetricSourceType.CONTAINER_RESOURCE):
        if utilization is None and average is None:
            problems.append(
                f"{where}.target.averageUtilization: must set either a target raw value or a "
                "target utilization"
            )
        if utilization is not None and average is not None:
            problems.append(
                f"{where}.target.averageValue: may not set both a target raw value and a target "
                "utilization"
            )
    elif kind is MetricSourceType.PODS and average is None:
        problems.append(f"{where}.target.averageValue: must specify a positive target averageValue")
    elif kind in (MetricSourceType.OBJECT, MetricSourceType.EXTERNAL):
        if value is None and average is None:
            problems.append(
                f"{where}.target.averageValue: must set either a target value or averageValue"
            )
        if kind is MetricSourceType.EXTERNAL and value is not None and average is not None:
            problems.append(
                f"{where}.target.value: may not set both a target value for metric and a per-pod "
                "target"
            )
    return problems


def metric_problems(metrics: Sequence[MetricSpec], *, path: str) -> list[str]:
    """What the API server would refuse in these metrics once they are an HPA's.

    Kubernetes' HPA validation (``validateMetricSpec`` and the source checks), so the job is
    refused, where its user looks, rather than its HPA, where nobody does: each metric sets
    exactly the source its type names; a Resource or ContainerResource target gives
    ``averageUtilization`` or ``averageValue`` (not both), a Pods target ``averageValue``, an
    Object or External target ``value`` or ``averageValue`` (an External one not both); values
    are positive, utilizations at least 1, metric names path segments.
    """
    problems = []
    for index, metric in enumerate(metrics):
        where = f"{path}[{index}]"
        sources = metric.sources()
        field = metric.type.value[0].lower() + metric.type.value[1:]
        source = sources.get(metric.type)
        if source is None:
            problems.append(
                f"{where}.{field}: must populate information for the given metric source"
            )
        else:
            problems.extend(_source_problems(metric.type, source, f"{where}.{field}"))
        problems.extend(
            f"{where}.{kind.value[0].lower() + kind.value[1:]}: must populate the given metric "
            f"source only ({metric.type})"
            for kind in sources
            if kind is not metric.type
        )
    return problems
