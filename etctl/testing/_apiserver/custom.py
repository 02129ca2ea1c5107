"""Custom resources: the behaviour a CRD version's schema gives its objects.

On every write the object goes through the version's ``openAPIV3Schema`` as the apiextensions
server does it: unknown fields are pruned (and reported, so the request can warn or, with
``fieldValidation=Strict``, fail), defaults are applied, then the object is validated.
``apiVersion``, ``kind`` and ``metadata`` are the server's business and never pruned by the schema.
An update (of the resource or of its status) is validated against the stored object with
``CRDValidationRatcheting`` (KEP-4008, on by default since Kubernetes 1.30): schema errors in
values it leaves unchanged are not reported, so a status write is not refused for a spec that a
later, stricter schema rejects, and is not slowed down by validating that spec again. Field
selectors accept ``metadata.name``, ``metadata.namespace`` (namespaced resources only) and the
version's ``selectableFields``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.celrules import RuleNode, compile_rules, evaluate
from etctl.testing._apiserver.registry import VersionInfo
from etctl.testing._apiserver.schema import apply_defaults, prune, validate
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import Strategy, WriteContext

__all__ = ["CustomResourceStrategy", "removed_fields"]


def removed_fields(before: Any, after: Any, path: str = "") -> list[str]:
    """Dotted paths present in ``before`` and missing from ``after`` (what pruning dropped).

    Pruning shares the subtrees it left alone, and the same object lacks nothing of itself.
    """
    out: list[str] = []
    if before is after:
        return out
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key, value in before.items():
            child = f"{path}.{key}" if path else str(key)
            if key not in after:
                out.append(child)
            else:
                out.extend(removed_fields(value, after[key], child))
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out.extend(removed_fields(old, new, f"{path}[{index}]"))
    return out


def _lookup(obj: ObjectView, dotted: str) -> Any:
    node: Any = obj
    for part in dotted.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _field_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_RULES_NOT_CHECKED = Cause(
    "FieldValueInvalid",
    "<nil>",
    'Invalid value: "null": some validation rules were not checked because the object was '
    "invalid; correct the existing errors to complete validation",
)


def _has_rules(schema: Any) -> bool:
    """Whether ``x-kubernetes-validations`` appears anywhere in a schema (cheap, no CEL)."""
    if isinstance(schema, Mapping):
        return "x-kubernetes-validations" in schema or any(_has_rules(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_rules(v) for v in schema)
    return False


class CustomResourceStrategy(Strategy):
    """Behaviour of the objects of one CRD.

    Args:
        namespaced: whether the CRD is namespaced (``metadata.namespace`` is selectable).
        versions: the CRD's versions, with their schemas and selectable fields.
    """

    default_field_error = False

    def __init__(self, *, namespaced: bool, versions: tuple[VersionInfo, ...]) -> None:
        self._versions = {v.name: v for v in versions}
        selectable = {f for v in versions for f in v.selectable_fields}
        base = {"metadata.name", "metadata.namespace"} if namespaced else {"metadata.name"}
        self.field_labels = frozenset(base | selectable)
        self._selectable = sorted(selectable)
        self._rules: dict[str, RuleNode] = {}
        for version in versions:
            if version.schema and _has_rules(version.schema):
                node, _causes = compile_rules(version.schema, "")  # the CRD was validated
                if node is not None:
                    self._rules[version.name] = node

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name, namespace and the selectable fields' values."""
        out = super().fields(obj)
        for path in self._selectable:
            out[path] = _field_text(_lookup(obj, path))
        return out

    def _schema(self, version: str) -> Mapping[str, Any] | None:
        info = self._versions.get(version)
        return info.schema if info and info.schema else None

    def apply_schema(self, obj: KubeObject, version: str) -> list[str]:
        """Prune unknown fields and apply defaults in place; return the pruned paths."""
        schema = self._schema(version)
        if schema is None:
            return []
        pruned = prune(obj, schema)
        removed = removed_fields(obj, pruned)
        defaulted = apply_defaults(pruned, schema)
        obj.clear()
        obj.update(defaulted)
        return removed

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """The object against its version's schema, then its validation rules."""
        return self._validate(obj, None, ctx)

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """The new object against the schema; the rules with ``oldSelf`` the stored object."""
        return self._validate(new, old, ctx)

    def _validate(self, obj: ObjectView, old: ObjectView | None, ctx: WriteContext) -> list[Cause]:
        schema = self._schema(ctx.version)
        if schema is None:
            return []
        previous = None if old is None else dict(old)
        causes = [Cause.of(error) for error in validate(dict(obj), schema, old=previous)]
        rules = self._rules.get(ctx.version)
        if rules is None:
            return causes
        if any(c.type == "FieldValueTypeInvalid" for c in causes):
            # As kube-apiserver does: rules are not run on values of the wrong type.
            return [*causes, _RULES_NOT_CHECKED]
        return causes + evaluate(rules, obj, old)
