"""Why a CRD's ``openAPIV3Schema`` would be rejected: structural-schema and OpenAPI checks.

Mirrors apiextensions' CRD validation of a version schema, in the server's order: the OpenAPI
checks of ``ValidateCustomResourceDefinitionOpenAPISchema`` (forbidden keywords, list and map
types, defaults in metadata), then, when those leave a schema that can be made structural, the
sorted invariants of ``ValidateStructural`` (types everywhere, nothing but value validations in
``allOf``/``anyOf``/``oneOf``/``not``, metadata restricted to name and generateName) and finally
the check that every default is pruned and valid. CEL rules (``x-kubernetes-validations``) are
not compiled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from etctl._apimachinery.defaulting import prune_value
from etctl._apimachinery.fielderror import (
    FieldError,
    forbidden,
    invalid,
    required,
)
from etctl._apimachinery.openapichecks import openapi_errors, type_problem
from etctl._apimachinery.schemapath import (
    INT_OR_STRING,
    Schema,
    child_path,
    items_of,
    key_path,
    properties_of,
    truthy,
)
from etctl._apimachinery.validator import validate_value

__all__ = ["structural_errors", "structural_field_errors"]

# Keys that make ``NewStructural`` fail; the generic checks report them instead.
_UNSTRUCTURABLE = ("$ref", "id", "additionalItems", "patternProperties", "definitions")
_NESTED_FORBIDDEN_GENERICS = (
    ("type", "must be empty to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


class _StructuralChecks:
    """``ValidateStructural``: invariants and completeness of the structural schema."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def invariants(self, schema: Schema, path: str, level: str) -> None:
        out = self.errors
        declared = schema.get("type") or ""
        items = items_of(schema)
        if declared == "array" and items is None:
            out.append(required(child_path(path, "items"), "must be specified"))
        if items is not None:
            self.invariants(items, child_path(path, "items"), "item")
        props = properties_of(schema)
        for name, sub in props.items():
            self.invariants(sub, key_path(child_path(path, "properties"), name), "field")
        extra = schema.get("additionalProperties")
        if extra is not None:
            if level == "root":
                out.append(
                    forbidden(
                        child_path(path, "additionalProperties"), "must not be used at the root"
                    )
                )
            if isinstance(extra, Mapping):
                self.invariants(extra, child_path(path, "additionalProperties"), "field")
        self._extension_invariants(schema, path)
        self._value_validation(schema, path, skip_int_or_string=True)
        self._type_invariants(schema, path, level)
        check_meta = level == "root" or truthy(schema, "x-kubernetes-embedded-resource")
        for name in ("kind", "apiVersion"):
            if name in props and check_meta and props[name].get("type") != "string":
                where = child_path(key_path(child_path(path, "properties"), name), "type")
                out.append(invalid(where, props[name].get("type") or "", "must be string"))
        if "metadata" in props:
            where = key_path(child_path(path, "properties"), "metadata")
            self._metadata(props["metadata"], where, check_meta, root=level == "root")
        preserve = truthy(schema, "x-kubernetes-preserve-unknown-fields")
        if truthy(schema, "x-kubernetes-embedded-resource") and not preserve and not props:
            detail = (
                "must not be empty if x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields"
            )
            out.append(required(child_path(path, "properties"), detail))

    def _extension_invariants(self, schema: Schema, path: str) -> None:
        if not truthy(schema, "x-kubernetes-int-or-string"):
            return
        detail = "must be false if x-kubernetes-int-or-string is true"
        for key in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
            if truthy(schema, key):
                self.errors.append(invalid(child_path(path, key), True, detail))

    def _type_invariants(self, schema: Schema, path: str, level: str) -> None:
        out = self.errors
        declared = schema.get("type") or ""
        embedded = truthy(schema, "x-kubernetes-embedded-resource")
        loose = truthy(schema, "x-kubernetes-int-or-string") or truthy(
            schema, "x-kubernetes-preserve-unknown-fields"
        )
        if embedded and declared != "object":
            detail = "must be object if x-kubernetes-embedded-resource is true"
            out.append(type_problem(path, declared, detail))
        elif not declared and not loose:
            detail = {
                "root": "must not be empty at the root",
                "item": "must not be empty for specified array items",
                "field": "must not be empty for specified object fields",
            }[level]
            out.append(required(child_path(path, "type"), detail))
        if embedded and schema.get("additionalProperties") is not None:
            detail = "must not be used if x-kubernetes-embedded-resource is set"
            out.append(forbidden(child_path(path, "additionalProperties"), detail))
        if level == "root" and declared and declared != "object":
            out.append(invalid(child_path(path, "type"), declared, "must be object at the root"))

    def _metadata(self, meta: Schema, path: str, check_meta: bool, *, root: bool) -> None:
        if check_meta and meta.get("type") != "object":
            self.errors.append(
                invalid(child_path(path, "type"), meta.get("type") or "", "must be object")
            )
        if not root:
            return
        props = properties_of(meta)
        rest = {k: v for k, v in meta.items() if k not in ("type", "default", "properties")}
        only_names = set(props) <= {"name", "generateName"}
        if rest or not only_names:
            detail = (
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified"
            )
            self.errors.append(forbidden(path, detail))

    def _value_validation(self, schema: Schema, path: str, *, skip_int_or_string: bool) -> None:
        skip_any_of = skip_int_or_string and list(schema.get("anyOf") or []) == INT_OR_STRING
        all_of = list(schema.get("allOf") or [])
        skip_first = (
            skip_int_or_string
            and bool(all_of)
            and list(all_of[0].get("anyOf") or []) == INT_OR_STRING
        )
        if not skip_any_of:
            for i, part in enumerate(schema.get("anyOf") or ()):
                self._nested(part, f"{child_path(path, 'anyOf')}[{i}]", skip_any_of=False)
        for i, part in enumerate(all_of):
            self._nested(
                part, f"{child_path(path, 'allOf')}[{i}]", skip_any_of=skip_first and i == 0
            )
        for i, part in enumerate(schema.get("oneOf") or ()):
            self._nested(part, f"{child_path(path, 'oneOf')}[{i}]", skip_any_of=False)
        negated = schema.get("not")
        if isinstance(negated, Mapping):
            self._nested(negated, child_path(path, "not"), skip_any_of=False)
        pattern = schema.get("pattern")
        if pattern:
            try:
                re.compile(pattern)
            except re.error as err:
                detail = f"must be a valid regular expression, but isn't: {err}"
                self.errors.append(invalid(child_path(path, "pattern"), pattern, detail))

    def _nested(self, part: Schema, path: str, *, skip_any_of: bool) -> None:
        if skip_any_of:
            rest = {k: v for k, v in part.items() if k != "anyOf"}
            self._value_validation(rest, path, skip_int_or_string=False)
        else:
            self._value_validation(part, path, skip_int_or_string=False)
        items = items_of(part)
        if items is not None:
            self._nested(items, child_path(path, "items"), skip_any_of=False)
        for name, sub in properties_of(part).items():
            self._nested(sub, key_path(child_path(path, "properties"), name), skip_any_of=False)
        for key, detail in _NESTED_FORBIDDEN_GENERICS:
            value = part.get(key)
            if value or (key == "default" and key in part):
                self.errors.append(forbidden(child_path(path, key), detail))
        if part.get("additionalProperties") is not None:
            detail = "must be undefined to be structural"
            self.errors.append(forbidden(child_path(path, "additionalProperties"), detail))
        if "metadata" in properties_of(part):
            detail = "must not be specified in a nested context"
            self.errors.append(
                forbidden(key_path(child_path(path, "properties"), "metadata"), detail)
            )

    def completeness(self, schema: Schema, path: str) -> None:
        self._complete_value(schema, schema, path, path)

    def _complete_value(
        self, part: Schema, struct: Schema | None, s_path: str, v_path: str
    ) -> None:
        negated = part.get("not")
        if isinstance(negated, Mapping):
            self._complete_nested(negated, struct, s_path, child_path(v_path, "not"))
        for junctor in ("allOf", "anyOf", "oneOf"):
            for i, sub in enumerate(part.get(junctor) or ()):
                self._complete_nested(sub, struct, s_path, f"{child_path(v_path, junctor)}[{i}]")

    def _complete_nested(
        self, part: Schema, struct: Schema | None, s_path: str, v_path: str
    ) -> None:
        if struct is None:
            self.errors.append(required(s_path, f"because it is defined in {v_path}"))
            return
        self._complete_value(part, struct, s_path, v_path)
        items = items_of(part)
        if items is not None:
            self._complete_nested(
                items, items_of(struct), child_path(s_path, "items"), child_path(v_path, "items")
            )
        struct_props = properties_of(struct)
        for name, sub in properties_of(part).items():
            s_sub = key_path(child_path(s_path, "properties"), name)
            v_sub = key_path(child_path(v_path, "properties"), name)
            if name in struct_props:
                self._complete_nested(sub, struct_props[name], s_sub, v_sub)
            else:
                self.errors.append(required(s_sub, f"because it is defined in {v_sub}"))


def _has_unstructurable(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        if any(schema.get(k) for k in _UNSTRUCTURABLE) or isinstance(schema.get("items"), list):
            return True
        return any(_has_unstructurable(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_unstructurable(v) for v in schema)
    return False


def _default_errors(schema: Schema, path: str) -> list[FieldError]:
    """Every default must survive pruning unchanged and validate against its own schema."""
    errors: list[FieldError] = []

    def walk(node: Schema, where: str) -> None:
        if "default" in node:
            value = node["default"]
            default_path = child_path(where, "default")
            if prune_value(value, node) != value:
                errors.append(invalid(default_path, value, "must not have unknown fields"))
            else:
                errors.extend(validate_value(value, node, field=default_path))
        for name, sub in properties_of(node).items():
            walk(sub, key_path(child_path(where, "properties"), name))
        items = items_of(node)
        if items is not None:
            walk(items, child_path(where, "items"))
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            walk(extra, child_path(where, "additionalProperties"))

    walk(schema, path)
    return errors


def structural_field_errors(schema: Schema, *, path: str = "openAPIV3Schema") -> list[FieldError]:
    """The reasons kube-apiserver would reject a CRD version with this schema, as field errors.

    Args:
        schema: the version's ``openAPIV3Schema``.
        path: the field path of the schema in the CRD, prefixed to every error (the server uses
            ``spec.versions[<i>].schema.openAPIV3Schema``).
    """
    errors = openapi_errors(schema, path)
    if _has_unstructurable(schema):
        return errors
    structural = _StructuralChecks()
    structural.invariants(schema, path, "root")
    structural.completeness(schema, path)
    shape = sorted(structural.errors, key=str)
    if shape:
        return errors + shape
    return errors + _default_errors(schema, path)


def structural_errors(schema: Schema, *, path: str = "openAPIV3Schema") -> list[str]:
    """Why a CRD version schema is not acceptable, one ``"<field>: <message>"`` string per cause.

    Empty when the schema is structural and every other CRD schema rule holds.
    """
    return [str(err) for err in structural_field_errors(schema, path=path)]
