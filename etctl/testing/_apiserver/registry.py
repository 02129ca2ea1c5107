"""The registry of served resources: what discovery lists and what the request router resolves.

A :class:`ResourceInfo` describes one group-resource (``pods``, ``foos.example.com``): its kind,
scope, names, verbs, subresources and served versions, and the :class:`Strategy` that gives it its
kind-specific behaviour. Objects are stored per group-resource, whatever the version: every served
version reads and writes the same objects, and ``apiVersion`` is rewritten on the way out (no
conversion, as for a CRD whose versions share a schema).

Invariants:

* one entry per ``(group, plural)``; a CRD replaces its entry when it is updated;
* :attr:`Registry.revision` grows on every change, so discovery documents can be cached per
  revision;
* lookups by ``(group, version, plural)`` only find *served* versions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from etctl.runtime import KubeObject
from etctl.testing._apiserver.store import NAMESPACES
from etctl.testing._apiserver.validation import NameRule

if TYPE_CHECKING:
    from etctl.testing._apiserver.strategy import Strategy

__all__ = [
    "PrinterColumn",
    "Registry",
    "ResourceInfo",
    "ScaleSpec",
    "SubresourceInfo",
    "VersionInfo",
    "version_priority",
    "with_api_version",
]

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def with_api_version(obj: KubeObject, api_version: str) -> KubeObject:
    """``obj`` as served under ``api_version`` (itself when it already says so, else a copy).

    Objects are stored once per group-resource; only ``apiVersion`` differs between the
    versions a resource is read at.
    """
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version order: GA > beta > alpha > other, newest first.

    Use with ``sorted(..., key=version_priority)``: ``v2, v1, v1beta2, v1beta1, v1alpha1, foo``.
    """
    match = _VERSION_RE.match(version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A column of ``kubectl get`` (a CRD's ``additionalPrinterColumns`` entry)."""

    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class ScaleSpec:
    """Where a custom resource keeps what the ``/scale`` subresource shows (JSON paths)."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str = ""


@dataclass(frozen=True, slots=True)
class SubresourceInfo:
    """A subresource other than ``status`` and ``scale`` (``pods/exec``, ``namespaces/finalize``).

    Attributes:
        name: the path segment after the object name.
        kind: the kind discovery says it answers with.
        verbs: the verbs discovery lists for it.
        group: the group of ``kind`` when it differs from the resource's.
        version: the version of ``kind`` when it differs from the resource's.
    """

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str | None = None
    version: str | None = None


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One version of a resource.

    Attributes:
        name: ``v1``, ``v1alpha1``.
        served: False hides the version from discovery and the router.
        storage: True for the version objects are stored as (exactly one per resource).
        schema: the ``openAPIV3Schema`` for custom resources, None for built-ins.
        status: True when the version has a ``/status`` subresource.
        scale: the ``/scale`` mapping, if the version has that subresource.
        printer_columns: ``kubectl get`` columns (empty: the kind's default table).
        selectable_fields: extra field-selector paths of custom resources (``spec.color``).
        deprecated: the version is deprecated (a warning accompanies its responses).
        deprecation_warning: the warning text, or None for the default one.
    """

    name: str
    served: bool = True
    storage: bool = True
    schema: Mapping[str, Any] | None = None
    status: bool = False
    scale: ScaleSpec | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    selectable_fields: tuple[str, ...] = ()
    deprecated: bool = False
    deprecation_warning: str | None = None


_ALL_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class ResourceInfo:
    """One served group-resource and everything the server needs to serve it.

    Attributes:
        group: the API group (``""`` for core).
        plural: the resource name in URLs.
        singular: the singular name.
        kind: the kind of its objects.
        namespaced: True when objects live in namespaces.
        versions: the versions, served or not.
        strategy: the kind-specific behaviour (defaults, validation, field selectors).
        short_names: ``kubectl`` short names.
        categories: discovery categories (``all``).
        verbs: the verbs allowed on the collection and its objects.
        subresources: subresources other than status and scale.
        name_rule: how ``metadata.name`` is validated.
        has_generation: True when writes maintain ``metadata.generation``.
        custom: True for resources defined by a CRD.
        return_deleted_object: a delete answers with the object, not a ``Status``.
        allow_unconditional_update: an update without ``resourceVersion`` is allowed.
        strategic_merge: strategic merge patches are accepted (built-in kinds only).
    """

    group: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    versions: tuple[VersionInfo, ...]
    strategy: Strategy
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = _ALL_VERBS
    subresources: tuple[SubresourceInfo, ...] = ()
    name_rule: NameRule = NameRule.SUBDOMAIN
    has_generation: bool = False
    custom: bool = False
    return_deleted_object: bool = False
    allow_unconditional_update: bool = True
    strategic_merge: bool = True
    list_kind: str = field(default="")

    def __post_init__(self) -> None:
        if not self.list_kind:
            object.__setattr__(self, "list_kind", f"{self.kind}List")

    @property
    def key(self) -> tuple[str, str]:
        """``(group, plural)``: the storage key of the resource."""
        return (self.group, self.plural)

    @property
    def group_resource(self) -> str:
        """``pods`` or ``foos.example.com``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def storage_version(self) -> VersionInfo:
        """The version objects are stored as."""
        for version in self.versions:
            if version.storage:
                return version
        return self.versions[0]

    @property
    def served_versions(self) -> list[VersionInfo]:
        """Served versions in Kubernetes priority order (the preferred one first)."""
        served = [v for v in self.versions if v.served]
        return sorted(served, key=lambda v: version_priority(v.name))

    def version(self, name: str) -> VersionInfo | None:
        """The served version called ``name``, if any."""
        for version in self.versions:
            if version.name == name and version.served:
                return version
        return None

    def api_version(self, version: str) -> str:
        """The ``apiVersion`` of objects read at ``version``."""
        return f"{self.group}/{version}" if self.group else version

    def has_status(self, version: str | None = None) -> bool:
        """True when the resource (at ``version``, or its storage version) has ``/status``."""
        info = self.version(version) if version else self.storage_version
        return bool(info and info.status)

    def subresource_verbs(self, version: str, name: str) -> tuple[str, ...]:
        """The verbs the server's own handlers answer on subresource ``name`` at ``version``.

        ``status`` and ``scale`` (where the version has them) are read, updated and patched, a
        Namespace's ``finalize`` is updated, a Pod's ``binding`` is created; any other name has
        none (connect subresources such as ``exec`` are served elsewhere).
        """
        served = self.version(version)
        if (name == "status" and served and served.status) or (
            name == "scale" and served and served.scale
        ):
            return ("get", "update", "patch")
        if name == "finalize" and self.key == NAMESPACES:
            return ("update",)
        if name == "binding" and self.key == ("", "pods"):
            return ("create",)
        return ()

    def subresource(self, name: str) -> SubresourceInfo | None:
        """A subresource other than status and scale, by name."""
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None


class Registry:
    """The served resources, keyed by group-resource, with change notification."""

    def __init__(self) -> None:
        self._resources: dict[tuple[str, str], ResourceInfo] = {}
        # (group, kind) -> the first registered entry of that kind, rebuilt on every change.
        self._kinds: dict[tuple[str, str], ResourceInfo] = {}
        self._listeners: list[Callable[[], None]] = []
        self.revision = 0

    def register(self, info: ResourceInfo) -> None:
        """Add or replace the entry for ``info``'s group-resource."""
        self._resources[info.key] = info
        self._changed()

    def unregister(self, group: str, plural: str) -> ResourceInfo | None:
        """Remove a group-resource; returns what was removed."""
        info = self._resources.pop((group, plural), None)
        if info is not None:
            self._changed()
        return info

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every registration change."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        self._kinds = {}
        for info in self._resources.values():
            self._kinds.setdefault((info.group, info.kind), info)
        self.revision += 1
        for listener in self._listeners:
            listener()

    def get(self, group: str, plural: str) -> ResourceInfo | None:
        """The entry for a group-resource, served or not."""
        return self._resources.get((group, plural))

    def resolve(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """The entry serving ``plural`` at ``group/version``, if that version is served."""
        info = self._resources.get((group, plural))
        if info is None or info.version(version) is None:
            return None
        return info

    def by_kind(self, group: str, kind: str) -> ResourceInfo | None:
        """The entry whose objects are of ``kind`` in ``group``."""
        return self._kinds.get((group, kind))

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(list(self._resources.values()))

    def groups(self) -> dict[str, list[str]]:
        """Every group with its served versions in priority order (core group as ``""``)."""
        versions: dict[str, set[str]] = {}
        for info in self._resources.values():
            for version in info.versions:
                if version.served:
                    versions.setdefault(info.group, set()).add(version.name)
        return {g: sorted(v, key=version_priority) for g, v in versions.items()}

    def resources_in(self, group: str, version: str) -> list[ResourceInfo]:
        """The entries served at ``group/version``, sorted by plural."""
        found = [
            info
            for info in self._resources.values()
            if info.group == group and info.version(version) is not None
        ]
        return sorted(found, key=lambda i: i.plural)
