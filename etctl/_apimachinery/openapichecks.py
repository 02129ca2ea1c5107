"""The OpenAPI rules apiextensions applies to a CRD version schema before structural checks.

``ValidateCustomResourceDefinitionOpenAPISchema`` with the options of a v1 CRD: forbidden
keywords (``$ref``, ``id``, ``definitions``, ``patternProperties``, ``dependencies``,
``additionalItems``, ``uniqueItems``, ``type: null``, items arrays), defaults in top-level
metadata, ``additionalProperties`` beside ``properties``, and the rules of the
``x-kubernetes-list-type``, ``-list-map-keys``, ``-map-type`` and ``-preserve-unknown-fields``
extensions.
"""

from __future__ import annotations

from collections.abc import Mapping

from etctl._apimachinery.fielderror import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
)
from etctl._apimachinery.schemapath import (
    Schema,
    child_path,
    items_of,
    key_path,
    properties_of,
    truthy,
)

__all__ = ["openapi_errors", "type_problem"]

_OPENAPI_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_META_FIELDS = ("metadata", "kind", "apiVersion")
_JUNCTORS = ("allOf", "anyOf", "oneOf")


def type_problem(path: str, declared: str, detail: str) -> FieldError:
    """``Required`` when no type is declared, else ``Invalid`` with the declared one."""
    where = child_path(path, "type")
    return invalid(where, declared, detail) if declared else required(where, detail)


class _OpenAPIChecks:
    """``ValidateCustomResourceDefinitionOpenAPISchema`` with the v1 CRD options."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def run(
        self,
        schema: Schema,
        path: str,
        *,
        root: bool = False,
        defaults_forbidden: str | None = None,
        in_meta: bool = False,
    ) -> None:
        self._generic(schema, path, defaults_forbidden=defaults_forbidden, in_meta=in_meta)
        extra = schema.get("additionalProperties")
        props = properties_of(schema)
        if extra is not None and not isinstance(extra, bool | Mapping):
            self.errors.append(
                invalid(
                    child_path(path, "additionalProperties"), extra, "must be a bool or an object"
                )
            )
        if extra is not None and props and (extra is False or isinstance(extra, Mapping)):
            detail = "additionalProperties and properties are mutual exclusive"
            self.errors.append(forbidden(child_path(path, "additionalProperties"), detail))
        if isinstance(extra, Mapping):
            reason = (
                "inside additionalProperties applying to object metadata"
                if in_meta
                else defaults_forbidden
            )
            self.run(
                extra,
                child_path(path, "additionalProperties"),
                defaults_forbidden=reason,
                in_meta=in_meta,
            )
        for name in sorted(props):
            sub_meta, sub_reason = in_meta, defaults_forbidden
            if (root or truthy(schema, "x-kubernetes-embedded-resource")) and name in _META_FIELDS:
                sub_meta = True
                if root:
                    sub_reason = f"in top-level {name}"
            self.run(
                props[name],
                key_path(child_path(path, "properties"), name),
                defaults_forbidden=sub_reason,
                in_meta=sub_meta,
            )
        negated = schema.get("not")
        if isinstance(negated, Mapping):
            self.run(
                negated,
                child_path(path, "not"),
                defaults_forbidden=defaults_forbidden,
                in_meta=in_meta,
            )
        for junctor in _JUNCTORS:
            for i, part in enumerate(schema.get(junctor) or ()):
                if isinstance(part, Mapping):
                    where = f"{child_path(path, junctor)}[{i}]"
                    self.run(part, where, defaults_forbidden=defaults_forbidden, in_meta=in_meta)
        items = items_of(schema)
        if items is not None:
            self.run(
                items,
                child_path(path, "items"),
                defaults_forbidden=defaults_forbidden,
                in_meta=in_meta,
            )
        self._extensions(schema, path)

    def _generic(
        self, schema: Schema, path: str, *, defaults_forbidden: str | None, in_meta: bool
    ) -> None:
        out = self.errors
        declared = schema.get("type")
        if declared and declared not in _OPENAPI_TYPES:
            out.append(not_supported(child_path(path, "type"), declared, _OPENAPI_TYPES))
        if "default" in schema and defaults_forbidden is not None:
            detail = "must not be set " + defaults_forbidden
            out.append(forbidden(child_path(path, "default"), detail))
        for key, detail in (
            ("id", "id is not supported"),
            ("additionalItems", "additionalItems is not supported"),
            ("patternProperties", "patternProperties is not supported"),
            ("definitions", "definitions is not supported"),
            ("dependencies", "dependencies is not supported"),
            ("$ref", "$ref is not supported"),
        ):
            if schema.get(key):
                out.append(forbidden(child_path(path, key), detail))
        if declared == "null":
            detail = "type cannot be set to null, use nullable as an alternative"
            out.append(forbidden(child_path(path, "type"), detail))
        if isinstance(schema.get("items"), list):
            detail = "items must be a schema object and not an array"
            out.append(forbidden(child_path(path, "items"), detail))
        if in_meta and truthy(schema, "x-kubernetes-embedded-resource"):
            detail = "must not be used inside of resource meta"
            out.append(forbidden(child_path(path, "x-kubernetes-embedded-resource"), detail))
        if truthy(schema, "uniqueItems"):
            detail = (
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )
            out.append(forbidden(child_path(path, "uniqueItems"), detail))

    def _extensions(self, schema: Schema, path: str) -> None:
        out = self.errors
        declared = schema.get("type") or ""
        if schema.get("x-kubernetes-preserve-unknown-fields") is False:
            out.append(
                invalid(
                    child_path(path, "x-kubernetes-preserve-unknown-fields"),
                    False,
                    "must be true or undefined",
                )
            )
        map_type = schema.get("x-kubernetes-map-type")
        if map_type is not None:
            if declared != "object":
                detail = "must be object if x-kubernetes-map-type is specified"
                out.append(type_problem(path, declared, detail))
            if map_type not in ("atomic", "granular"):
                out.append(
                    not_supported(
                        child_path(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"]
                    )
                )
        list_type = schema.get("x-kubernetes-list-type")
        items = items_of(schema)
        if list_type is not None and declared != "array":
            detail = "must be array if x-kubernetes-list-type is specified"
            out.append(type_problem(path, declared, detail))
        elif list_type == "set" and items is not None:
            self._set_items(items, path)
        if list_type is not None and list_type not in ("atomic", "set", "map"):
            out.append(
                not_supported(
                    child_path(path, "x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]
                )
            )
        keys = list(schema.get("x-kubernetes-list-map-keys") or [])
        if keys and list_type != "map":
            detail = "must be map if x-kubernetes-list-map-keys is non-empty"
            where = child_path(path, "x-kubernetes-list-type")
            out.append(
                required(where, detail) if list_type is None else invalid(where, list_type, detail)
            )
        if list_type == "map":
            self._map_list(schema, keys, items, path)

    def _set_items(self, items: Schema, path: str) -> None:
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        item_type = items.get("type")
        if item_type == "array" and items.get("x-kubernetes-list-type", "atomic") != "atomic":
            where = child_path(child_path(path, "items"), "x-kubernetes-list-type")
            self.errors.append(invalid(where, items.get("x-kubernetes-list-type"), detail))
        elif item_type == "object" and items.get("x-kubernetes-map-type") != "atomic":
            where = child_path(child_path(path, "items"), "x-kubernetes-map-type")
            self.errors.append(invalid(where, items.get("x-kubernetes-list-type"), detail))

    def _map_list(self, schema: Schema, keys: list[str], items: Schema | None, path: str) -> None:
        out = self.errors
        if not keys:
            detail = "must not be empty if x-kubernetes-list-type is map"
            out.append(required(child_path(path, "x-kubernetes-list-map-keys"), detail))
        if schema.get("items") is None:
            out.append(
                required(
                    child_path(path, "items"), "must have a schema if x-kubernetes-list-type is map"
                )
            )
            return
        if items is None:
            detail = "must only have a single schema if x-kubernetes-list-type is map"
            out.append(invalid(child_path(path, "items"), schema.get("items"), detail))
            return
        if items.get("type") != "object":
            detail = "must be object if parent array's x-kubernetes-list-type is map"
            out.append(
                invalid(child_path(child_path(path, "items"), "type"), items.get("type"), detail)
            )
            return
        props = properties_of(items)
        seen: set[str] = set()
        item_required = set(items.get("required") or ())
        for key in keys:
            prop = props.get(key)
            member = key_path(child_path(child_path(path, "items"), "properties"), key)
            if prop is None:
                detail = "entries must all be names of item properties"
                out.append(invalid(child_path(path, "x-kubernetes-list-map-keys"), keys, detail))
            else:
                if prop.get("type") in ("array", "object"):
                    detail = "must be a scalar type if parent array's x-kubernetes-list-type is map"
                    out.append(invalid(child_path(member, "type"), "object", detail))
                if "default" not in prop and key not in item_required:
                    detail = (
                        "this property is in x-kubernetes-list-map-keys, so it must have a default "
                        "or be a required property"
                    )
                    out.append(required(child_path(member, "default"), detail))
                if prop.get("nullable"):
                    detail = (
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
                    )
                    out.append(forbidden(child_path(member, "nullable"), detail))
            if key in seen:
                detail = "must not contain duplicate entries"
                out.append(invalid(child_path(path, "x-kubernetes-list-map-keys"), keys, detail))
            seen.add(key)


def openapi_errors(schema: Schema, path: str) -> list[FieldError]:
    """The OpenAPI-rule violations of a version schema rooted at ``path``."""
    checks = _OpenAPIChecks()
    checks.run(schema, path, root=True)
    return checks.errors
