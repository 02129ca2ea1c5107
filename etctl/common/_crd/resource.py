"""Descriptions of custom resources, and the CustomResourceDefinition each one renders to.

A :class:`CustomResource` describes one kind (group, names, scope, versions with their pydantic
model, printer columns and subresources); :func:`crd_manifest` turns it into an
``apiextensions.k8s.io/v1`` CustomResourceDefinition whose schemas come from
:func:`etctl.common.openapi_schema`.

Invariants checked when a description is built or rendered, so a broken CRD never reaches a
cluster: names are valid and lower-case, exactly one version is the storage version, printer
columns and scale-subresource paths point at schema fields of the right type, and every schema is
structural.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from etctl.common._openapi import openapi_schema, schema_at, schema_problems
from etctl.errors import ConfigError
from etctl.runtime import Resource

__all__ = [
    "CRDVersion",
    "CustomResource",
    "PrinterColumn",
    "ScaleSubresource",
    "crd_manifest",
]

_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_COLUMN_TYPES = {
    "integer": ("integer",),
    "number": ("number", "integer"),
    "string": ("string",),
    "boolean": ("boolean",),
    "date": ("string",),
}
_METADATA_COLUMNS = {".metadata.name": "string", ".metadata.creationTimestamp": "date"}
_ROOT_FIELDS: dict[str, dict[str, Any]] = {
    "apiVersion": {
        "type": "string",
        "description": "Versioned schema of this representation of the object.",
    },
    "kind": {"type": "string", "description": "REST resource this object represents."},
    "metadata": {"type": "object"},
}


@dataclass(frozen=True, kw_only=True, slots=True)
class PrinterColumn:
    """A column of ``kubectl get`` (``additionalPrinterColumns``).

    Attributes:
        name: the column header.
        json_path: a simple JSONPath into the object (``.status.conditions[-1:].type``).
        type: integer, number, string, boolean or date.
        description: shown by ``kubectl explain``-like tools.
        priority: 0 shows the column by default; 1 only with ``-o wide``.
    """

    name: str
    json_path: str
    type: Literal["integer", "number", "string", "boolean", "date"] = "string"
    description: str = ""
    priority: int = 0

    def manifest(self) -> dict[str, Any]:
        """The ``additionalPrinterColumns`` entry."""
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            out["description"] = self.description
        if self.priority:
            out["priority"] = self.priority
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class ScaleSubresource:
    """The ``/scale`` subresource, for ``kubectl scale`` and the HorizontalPodAutoscaler.

    Attributes:
        spec_replicas_path: the desired replica count, under ``.spec`` (an integer).
        status_replicas_path: the observed replica count, under ``.status`` (an integer).
        label_selector_path: a label selector in string form, under ``.status`` or ``.spec``;
            required by the HorizontalPodAutoscaler.
    """

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None

    def manifest(self) -> dict[str, str]:
        """The ``subresources.scale`` entry."""
        out = {
            "specReplicasPath": self.spec_replicas_path,
            "statusReplicasPath": self.status_replicas_path,
        }
        if self.label_selector_path:
            out["labelSelectorPath"] = self.label_selector_path
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class CRDVersion:
    """One served version of a custom resource and the model that defines its schema.

    Attributes:
        name: the version (``v1``, ``v1alpha1``).
        model: the pydantic model of the whole object (spec and status).
        served: whether the API server serves this version.
        storage: whether objects are stored in this version (exactly one version is).
        printer_columns: the ``kubectl get`` columns; include ``Age`` explicitly.
        status_subresource: whether ``/status`` is a separate subresource.
        scale: the ``/scale`` subresource, if any.
    """

    name: str
    model: type[BaseModel]
    served: bool = True
    storage: bool = True
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    scale: ScaleSubresource | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class CustomResource:
    """Everything needed to render the CRD of one kind.

    Attributes:
        group: the API group (``kubeflow.org``).
        kind: the kind (``TFJob``).
        plural: the lower-case plural used in URLs (``tfjobs``).
        singular: the lower-case singular; defaults to the lower-cased kind.
        short_names: aliases for ``kubectl get``; check them for clashes with common CRDs.
        categories: groups for ``kubectl get <category>``.
        scope: Namespaced or Cluster.
        versions: the versions, exactly one with ``storage=True``.

    Raises:
        ConfigError: on construction, when a name or the version list is invalid.
    """

    group: str
    kind: str
    plural: str
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    scope: Literal["Namespaced", "Cluster"] = "Namespaced"
    versions: tuple[CRDVersion, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        problems = self._problems()
        if problems:
            raise ConfigError(f"custom resource {self.kind}: " + "; ".join(problems))

    def _problems(self) -> list[str]:
        problems = []
        if not _DNS_SUBDOMAIN.fullmatch(self.group) or "." not in self.group:
            problems.append(f"group {self.group!r} must be a DNS subdomain with a dot")
        if not self.kind[:1].isupper() or not self.kind.isalnum():
            problems.append(f"kind {self.kind!r} must be CamelCase alphanumerics")
        for label, value in (("plural", self.plural), ("singular", self.singular)):
            if not _DNS_LABEL.fullmatch(value):
                problems.append(f"{label} {value!r} must be a lower-case DNS label")
        problems.extend(
            f"short name or category {alias!r} must be a lower-case DNS label"
            for alias in (*self.short_names, *self.categories)
            if not _DNS_LABEL.fullmatch(alias)
        )
        if not self.versions:
            problems.append("at least one version is needed")
        elif sum(version.storage for version in self.versions) != 1:
            problems.append("exactly one version must be the storage version")
        if len({version.name for version in self.versions}) != len(self.versions):
            problems.append("version names must be unique")
        return problems

    @property
    def name(self) -> str:
        """The CRD's name, ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"

    @property
    def storage_version(self) -> CRDVersion:
        """The version objects are stored in."""
        return next(version for version in self.versions if version.storage)

    def resource(self, version: str | None = None) -> Resource:
        """The :class:`~etctl.runtime.Resource` of a version (default: storage)."""
        chosen = version or self.storage_version.name
        if chosen not in {v.name for v in self.versions}:
            msg = f"{self.kind} has no version {chosen!r}"
            raise ConfigError(msg)
        return Resource(
            self.group, chosen, self.plural, self.kind, namespaced=self.scope == "Namespaced"
        )


def crd_manifest(resource: CustomResource) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of ``resource``.

    Raises:
        ConfigError: a schema is not structural, or a printer column or scale path does not
            point at a field of the right type.
    """
    names: dict[str, Any] = {
        "kind": resource.kind,
        "listKind": f"{resource.kind}List",
        "plural": resource.plural,
        "singular": resource.singular,
    }
    if resource.short_names:
        names["shortNames"] = list(resource.short_names)
    if resource.categories:
        names["categories"] = list(resource.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": resource.name, "labels": {"app.kubernetes.io/part-of": "etctl"}},
        "spec": {
            "group": resource.group,
            "names": names,
            "scope": resource.scope,
            "versions": [_version_manifest(resource, v) for v in resource.versions],
        },
    }


def _version_manifest(resource: CustomResource, version: CRDVersion) -> dict[str, Any]:
    schema = openapi_schema(version.model)
    schema["properties"] = {**schema.get("properties", {}), **_ROOT_FIELDS}
    where = f"{resource.kind} {version.name}"
    problems = [
        *(_column_problem(schema, column) for column in version.printer_columns),
        *(_scale_problems(schema, version.scale) if version.scale else ()),
    ]
    if version.scale and not version.status_subresource:
        problems.append("a scale subresource needs the status subresource")
    problems.extend(schema_problems(schema))
    found = [problem for problem in problems if problem]
    if found:
        raise ConfigError(f"{where}: " + "; ".join(found))
    out: dict[str, Any] = {
        "name": version.name,
        "served": version.served,
        "storage": version.storage,
        "schema": {"openAPIV3Schema": schema},
    }
    subresources: dict[str, Any] = {}
    if version.status_subresource:
        subresources["status"] = {}
    if version.scale:
        subresources["scale"] = version.scale.manifest()
    if subresources:
        out["subresources"] = subresources
    if version.printer_columns:
        out["additionalPrinterColumns"] = [c.manifest() for c in version.printer_columns]
    return out


def _column_problem(schema: Mapping[str, Any], column: PrinterColumn) -> str:
    if column.json_path in _METADATA_COLUMNS:
        wanted = _METADATA_COLUMNS[column.json_path]
        if wanted == column.type:
            return ""
        return f"column {column.name}: {column.json_path} is a {wanted}, not a {column.type}"
    node = schema_at(schema, column.json_path)
    if node is None:
        return f"column {column.name}: {column.json_path} is not a field of the schema"
    if node.get("type") not in _COLUMN_TYPES[column.type]:
        found = node.get("type")
        return f"column {column.name}: {column.json_path} is a {found}, not {column.type}"
    if column.type == "date" and node.get("format") != "date-time":
        return f"column {column.name}: {column.json_path} is not a timestamp"
    return ""


def _scale_problems(schema: Mapping[str, Any], scale: ScaleSubresource) -> list[str]:
    checks: list[tuple[str, str, tuple[str, ...], str]] = [
        ("specReplicasPath", scale.spec_replicas_path, (".spec.",), "integer"),
        ("statusReplicasPath", scale.status_replicas_path, (".status.",), "integer"),
    ]
    if scale.label_selector_path:
        checks.append(
            ("labelSelectorPath", scale.label_selector_path, (".status.", ".spec."), "string")
        )
    problems = []
    for label, path, prefixes, kind in checks:
        node = schema_at(schema, path)
        if not path.startswith(prefixes) or "[" in path:
            under = " or ".join(prefixes)
            problems.append(f"scale {label} {path} must be a plain path under {under}")
        elif node is None or node.get("type") != kind:
            problems.append(f"scale {label} {path} must point at a(n) {kind} field of the schema")
    return problems
