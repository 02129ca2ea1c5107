"""CustomResourceDefinitions: validation, defaults, status, and the resource a CRD defines.

:class:`CRDStrategy` gives ``customresourcedefinitions`` the behaviour of apiextensions-apiserver
that clients observe: name and names checks, exactly one storage version, a structural schema for
every version (the real server's non-structural-schema rejection), immutable group and scope,
the ``customresourcecleanup.apiextensions.k8s.io`` finalizer, and a status that is computed on
every write (``NamesAccepted`` and ``Established`` true, accepted names, stored versions).
:func:`resource_from_crd` turns an accepted CRD into the :class:`ResourceInfo` the registry
serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.celrules import compile_rules
from etctl.testing._apiserver.custom import CustomResourceStrategy
from etctl.testing._apiserver.registry import PrinterColumn, ResourceInfo, ScaleSpec, VersionInfo
from etctl.testing._apiserver.schema import structural_field_errors
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import Strategy, WriteContext, field_path, mapping
from etctl.testing._apiserver.validation import (
    NameRule,
    forbidden_cause,
    go_value,
    invalid_cause,
    name_errors,
    required_cause,
    unsupported_cause,
)

__all__ = ["CLEANUP_FINALIZER", "CRDStrategy", "is_terminating", "resource_from_crd"]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_SCOPES = ("Cluster", "Namespaced")
_AGE_COLUMN = PrinterColumn("Age", "date", ".metadata.creationTimestamp")


def _names(crd: ObjectView) -> Mapping[str, Any]:
    return mapping(mapping(crd.get("spec")).get("names"))


def _versions(crd: ObjectView) -> list[Mapping[str, Any]]:
    value = mapping(crd.get("spec")).get("versions")
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def is_terminating(crd: ObjectView) -> bool:
    """True once the CRD has been deleted and waits for its objects to go."""
    return bool(mapping(crd.get("metadata")).get("deletionTimestamp"))


class CRDStrategy(Strategy):
    """Behaviour of ``customresourcedefinitions``."""

    def defaults(self, obj: KubeObject) -> None:
        """Singular and list kind from the kind, ``None`` conversion."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict) and names.get("kind"):
            names.setdefault("singular", str(names["kind"]).lower())
            names.setdefault("listKind", f"{names['kind']}List")
        spec.setdefault("conversion", {"strategy": "None"})

    def prepare_create(self, obj: KubeObject, ctx: WriteContext) -> None:
        """Add the cleanup finalizer the server removes once the CRD's objects are gone."""
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if isinstance(finalizers, list) and CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """Accept the names and establish the CRD at once."""
        obj["status"] = self._status(obj, {}, ctx)

    def prepare_update(self, new: KubeObject, old: ObjectView, ctx: WriteContext) -> None:
        """Recompute the status from the new spec (stored versions only grow)."""
        new["status"] = self._status(new, mapping(old.get("status")), ctx)

    def _status(self, crd: ObjectView, old: Mapping[str, Any], ctx: WriteContext) -> dict[str, Any]:
        names = _names(crd)
        accepted = {
            k: names[k]
            for k in ("plural", "singular", "shortNames", "kind", "listKind", "categories")
            if k in names
        }
        old_conditions = {
            c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, Mapping)
        }

        def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
            previous = old_conditions.get(kind)
            since = ctx.now
            if previous and previous.get("status") == status:
                since = str(previous.get("lastTransitionTime") or ctx.now)
            return {
                "type": kind,
                "status": status,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }

        conditions = [
            condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
        ]
        if is_terminating(crd):
            conditions.append(
                condition(
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                )
            )
        stored = [str(v) for v in old.get("storedVersions") or []]
        for version in _versions(crd):
            if version.get("storage") is True and version.get("name") not in stored:
                stored.append(str(version.get("name")))
        return {"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored}

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Names, scope, versions and structural schemas."""
        spec = mapping(obj.get("spec"))
        names = _names(obj)
        causes: list[Cause] = []
        group = str(spec.get("group") or "")
        if not group:
            causes.append(required_cause("spec.group"))
        else:
            causes.extend(
                invalid_cause("spec.group", group, m)
                for m in name_errors(NameRule.SUBDOMAIN, group)
            )
            if "." not in group:
                causes.append(
                    invalid_cause("spec.group", group, "should be a domain with at least one dot")
                )
        plural = str(names.get("plural") or "")
        for key in ("plural", "singular", "kind", "listKind"):
            value = str(names.get(key) or "")
            if not value:
                causes.append(required_cause(f"spec.names.{key}"))
            elif key in ("plural", "singular"):
                causes.extend(
                    invalid_cause(f"spec.names.{key}", value, m)
                    for m in name_errors(NameRule.DNS1035, value)
                )
        name = str(mapping(obj.get("metadata")).get("name") or "")
        if plural and group and name != f"{plural}.{group}":
            causes.append(
                invalid_cause("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
            )
        scope = spec.get("scope")
        if scope not in _SCOPES:
            causes.append(unsupported_cause("spec.scope", scope, ("Cluster", "Namespaced")))
        return causes + self._validate_versions(obj) + _validate_conversion(spec)

    def _validate_versions(self, obj: ObjectView) -> list[Cause]:
        versions = _versions(obj)
        causes: list[Cause] = []
        if not versions:
            return [
                required_cause(
                    "spec.versions", "must have exactly one version marked as storage version"
                )
            ]
        storage = [v for v in versions if v.get("storage") is True]
        if len(storage) != 1:
            causes.append(
                invalid_cause(
                    "spec.versions",
                    [dict(v) for v in versions],
                    "must have exactly one version marked as storage version",
                )
            )
        if not any(v.get("served") is True for v in versions):
            causes.append(
                invalid_cause(
                    "spec.versions",
                    [dict(v) for v in versions],
                    "must have at least one served version",
                )
            )
        seen: set[str] = set()
        for index, version in enumerate(versions):
            base = field_path("spec", "versions", index)
            vname = str(version.get("name") or "")
            if not vname:
                causes.append(required_cause(f"{base}.name"))
            else:
                causes.extend(
                    invalid_cause(f"{base}.name", vname, m)
                    for m in name_errors(NameRule.DNS1035, vname)
                )
                if vname in seen:
                    causes.append(
                        Cause(
                            "FieldValueInvalid",
                            f"{base}.name",
                            f"Invalid value: {go_value(vname)}: must be unique",
                        )
                    )
                seen.add(vname)
            schema = mapping(mapping(version.get("schema")).get("openAPIV3Schema"))
            path = f"{base}.schema.openAPIV3Schema"
            if not schema:
                causes.append(required_cause(path, "schemas are required"))
                continue
            structural = [Cause.of(e) for e in structural_field_errors(schema, path=path)]
            causes.extend(structural)
            if not structural:
                causes.extend(compile_rules(schema, path)[1])
            scale = mapping(mapping(version.get("subresources")).get("scale"))
            if scale:
                causes.extend(self._validate_scale(f"{base}.subresources.scale", scale))
        return causes

    def _validate_scale(self, path: str, scale: Mapping[str, Any]) -> list[Cause]:
        causes = []
        for key, under in (("specReplicasPath", "spec"), ("statusReplicasPath", "status")):
            replicas = str(scale.get(key) or "")
            if not replicas:
                causes.append(required_cause(f"{path}.{key}"))
            elif not replicas.startswith(f".{under}."):
                detail = f"should be a json path under .{under}"
                causes.append(invalid_cause(f"{path}.{key}", replicas, detail))
        selector = str(scale.get("labelSelectorPath") or "")
        if selector and not selector.startswith((".spec.", ".status.")):
            causes.append(
                invalid_cause(
                    f"{path}.labelSelectorPath",
                    selector,
                    "should be a json path under either .spec or .status",
                )
            )
        return causes

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As on create, with group, scope and plural fixed."""
        causes = self.validate_create(new, ctx)
        new_spec, old_spec = mapping(new.get("spec")), mapping(old.get("spec"))
        for key in ("group", "scope"):
            if new_spec.get(key) != old_spec.get(key):
                causes.append(invalid_cause(f"spec.{key}", new_spec.get(key), "field is immutable"))
        return causes


def _validate_conversion(spec: Mapping[str, Any]) -> list[Cause]:
    """``spec.conversion``: ``None``, or ``Webhook`` with a client config and review versions."""
    conversion = mapping(spec.get("conversion"))
    strategy = conversion.get("strategy")
    webhook = conversion.get("webhook")
    if strategy not in ("None", "Webhook"):
        return [unsupported_cause("spec.conversion.strategy", strategy, ("None", "Webhook"))]
    if strategy == "None":
        if webhook is not None:
            return [
                forbidden_cause(
                    "spec.conversion.webhook",
                    "should not be set when strategy is not set to Webhook",
                )
            ]
        return []
    if not isinstance(webhook, Mapping):
        return [
            required_cause("spec.conversion.webhook", "required when strategy is set to Webhook")
        ]
    causes = []
    versions = webhook.get("conversionReviewVersions")
    if not versions or not any(v in ("v1", "v1beta1") for v in versions):
        causes.append(
            required_cause(
                "spec.conversion.webhook.conversionReviewVersions",
                "must include at least one of v1, v1beta1",
            )
        )
    client = mapping(webhook.get("clientConfig"))
    if (client.get("url") is None) == (client.get("service") is None):
        causes.append(
            required_cause(
                "spec.conversion.webhook.clientConfig", "exactly one of url or service is required"
            )
        )
    return causes


def _columns(version: Mapping[str, Any]) -> tuple[PrinterColumn, ...]:
    raw = version.get("additionalPrinterColumns")
    if not isinstance(raw, list) or not raw:
        return (_AGE_COLUMN,)
    return tuple(
        PrinterColumn(
            name=str(col.get("name") or ""),
            type=str(col.get("type") or "string"),
            json_path=str(col.get("jsonPath") or ""),
            format=str(col.get("format") or ""),
            description=str(col.get("description") or ""),
            priority=int(col.get("priority") or 0),
        )
        for col in raw
        if isinstance(col, Mapping)
    )


def _version_info(version: Mapping[str, Any]) -> VersionInfo:
    subresources = mapping(version.get("subresources"))
    scale = mapping(subresources.get("scale"))
    selectable = version.get("selectableFields") or []
    return VersionInfo(
        name=str(version.get("name")),
        served=version.get("served") is True,
        storage=version.get("storage") is True,
        schema=mapping(mapping(version.get("schema")).get("openAPIV3Schema")),
        status="status" in subresources,
        scale=ScaleSpec(
            spec_replicas_path=str(scale.get("specReplicasPath")),
            status_replicas_path=str(scale.get("statusReplicasPath")),
            label_selector_path=str(scale.get("labelSelectorPath") or ""),
        )
        if scale
        else None,
        printer_columns=_columns(version),
        selectable_fields=tuple(
            str(f.get("jsonPath") or "").lstrip(".") for f in selectable if isinstance(f, Mapping)
        ),
        deprecated=version.get("deprecated") is True,
        deprecation_warning=version.get("deprecationWarning"),
    )


def resource_from_crd(crd: ObjectView) -> ResourceInfo:
    """The resource a (valid) CRD defines."""
    spec = mapping(crd.get("spec"))
    names = _names(crd)
    versions = tuple(_version_info(v) for v in _versions(crd))
    namespaced = spec.get("scope") == "Namespaced"
    return ResourceInfo(
        group=str(spec.get("group")),
        plural=str(names.get("plural")),
        singular=str(names.get("singular") or str(names.get("kind")).lower()),
        kind=str(names.get("kind")),
        list_kind=str(names.get("listKind") or f"{names.get('kind')}List"),
        namespaced=namespaced,
        versions=versions,
        strategy=CustomResourceStrategy(namespaced=namespaced, versions=versions),
        short_names=tuple(str(s) for s in names.get("shortNames") or ()),
        categories=tuple(str(c) for c in names.get("categories") or ()),
        name_rule=NameRule.SUBDOMAIN,
        has_generation=True,
        custom=True,
        allow_unconditional_update=False,
        strategic_merge=False,
    )
