"""A small custom resource description the CRD tests build on."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from etctl.common import CRDVersion, CustomResource, Int32, JobStatus, KubeObjectModel, ValueModel

__all__ = ["Widget", "widget"]


class WidgetSpec(ValueModel):
    """Desired widgets."""

    replicas: Int32 = Field(default=1, json_schema_extra={"minimum": 0})
    """How many."""


class WidgetStatus(JobStatus):
    """Observed widgets."""

    replicas: Int32 = 0
    selector: str | None = None


class Widget(KubeObjectModel):
    """A widget."""

    api_version: str = "example.com/v1"
    kind: str = "Widget"
    spec: WidgetSpec = Field(default_factory=WidgetSpec)
    status: WidgetStatus = Field(default_factory=WidgetStatus)


def widget(**overrides: Any) -> CustomResource:
    version = CRDVersion(
        name="v1",
        model=Widget,
        printer_columns=overrides.pop("columns", ()),
        scale=overrides.pop("scale", None),
        status_subresource=overrides.pop("status_subresource", True),
    )
    fields: dict[str, Any] = {
        "group": "example.com",
        "kind": "Widget",
        "plural": "widgets",
        "versions": (version,),
    }
    fields.update(overrides)
    return CustomResource(**fields)
