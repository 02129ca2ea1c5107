"""The checks apiextensions runs on a custom resource after schema validation.

Embedded resources (``x-kubernetes-embedded-resource``) must carry a valid ``apiVersion`` and
``kind`` (and, here, a name and generateName usable as a path segment); lists declared
``x-kubernetes-list-type: set`` must not repeat an element and ``map`` lists must not repeat a key.
Paths are built as apimachinery's ``field.Path`` prints them: ``spec.items[2]``, ``spec.m[key]``.

On update kube-apiserver checks embedded resources as on create, but reports list-type errors
only when the old object has none (``customResourceStrategy.ValidateUpdate``): so does
:func:`check_list_types` given the old object, without walking what the update left unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from etctl._apimachinery.fielderror import FieldError, duplicate, invalid, required
from etctl._apimachinery.gofmt import go_json, go_v
from etctl._apimachinery.jsonvalues import NO_OLD, identical
from etctl._apimachinery.schemapath import Schema, child_path

__all__ = ["check_embedded_resources", "check_list_types"]


def _path_segment_errors(name: str, *, prefix: bool) -> list[str]:
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035 = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{_DNS1035_FMT}')"
)


def _embedded_resource(value: Mapping[str, Any], path: str) -> list[FieldError]:
    """The checks apiextensions applies to an ``x-kubernetes-embedded-resource`` object."""
    errors = [required(child_path(path, key)) for key in ("apiVersion", "kind") if key not in value]
    if "apiVersion" in value:
        errors += _embedded_api_version(value["apiVersion"], child_path(path, "apiVersion"))
    if "kind" in value:
        errors += _embedded_kind(value["kind"], child_path(path, "kind"))
    if "metadata" in value:
        errors += _embedded_metadata(value["metadata"], child_path(path, "metadata"))
    return errors


def _embedded_api_version(api_version: Any, where: str) -> list[FieldError]:
    if not isinstance(api_version, str):
        return [invalid(where, api_version, "must be a string")]
    if not api_version:
        return [required(where)]
    if api_version.count("/") > 1:
        return [invalid(where, api_version, f"unexpected GroupVersion string: {api_version}")]
    return []


def _embedded_kind(kind: Any, where: str) -> list[FieldError]:
    if not isinstance(kind, str):
        return [invalid(where, kind, "must be a string")]
    if not kind:
        return [required(where)]
    problems = []
    if len(kind) > 63:
        problems.append("must be no more than 63 characters")
    if not _DNS1035.match(kind.lower()):
        problems.append(_DNS1035_MESSAGE)
    if problems:
        detail = "may have mixed case, but should otherwise match: " + ",".join(problems)
        return [invalid(where, kind, detail)]
    return []


def _embedded_metadata(meta: Any, path: str) -> list[FieldError]:
    if not isinstance(meta, dict):
        kind = "map[string]interface {}" if meta is None else type(meta).__name__
        detail = f".metadata accessor error: {go_v(meta)} is of the type {kind}, expected map"
        return [invalid(path, meta, detail)]
    errors: list[FieldError] = []
    for key, is_prefix in (("name", False), ("generateName", True)):
        name = meta.get(key)
        if isinstance(name, str) and name:
            errors += [
                invalid(child_path(path, key), name, problem)
                for problem in _path_segment_errors(name, prefix=is_prefix)
            ]
    return errors


def _walk_embedded(value: Any, schema: Schema | None, path: str) -> list[FieldError]:
    if schema is None:
        return []
    errors: list[FieldError] = []
    if isinstance(value, dict):
        if schema.get("x-kubernetes-embedded-resource"):
            errors += _embedded_resource(value, path)
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                errors += _walk_embedded(item, properties[key], child_path(path, key))
            elif isinstance(extra, Mapping):
                errors += _walk_embedded(item, extra, f"{path}[{key}]")
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            errors += _walk_embedded(
                item, items if isinstance(items, Mapping) else None, f"{path}[{i}]"
            )
    return errors


def _set_token(value: Any) -> object:
    if isinstance(value, dict | list):
        return ("json", go_json(value))
    return (type(value), value)


def _duplicates(items: Sequence[Any]) -> list[int]:
    """Indices of the second appearance of each repeated element."""
    seen: dict[object, int] = {}
    found: list[int] = []
    for i, item in enumerate(items):
        token = _set_token(item)
        seen[token] = seen.get(token, 0) + 1
        if seen[token] == 2:
            found.append(i)
    return found


def _list_map_errors(value: list[Any], schema: Schema, path: str) -> list[FieldError]:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            return [
                invalid(f"{path}[{i}]", item, "must be an object for an array of list-type map")
            ]
    keys: list[str] = list(schema.get("x-kubernetes-list-map-keys") or [])
    entries = [
        {k: item[k] for k in keys if k in item} if isinstance(item, dict) else {} for item in value
    ]
    return [duplicate(f"{path}[{i}]", entries[i]) for i in _duplicates(entries)]


def _walk_list_types(
    value: Any, schema: Schema | None, path: str, old: Any = NO_OLD
) -> list[FieldError]:
    """The list-type errors of ``value``, less those of subtrees identical to ``old``'s.

    ``old`` is the value at the same path of the old object (by property name and map key; list
    items are not correlated). An identical subtree has exactly the errors the old object has
    there, so it is not walked.
    """
    if schema is None or (old is not NO_OLD and identical(value, old)):
        return []
    errors: list[FieldError] = []
    if isinstance(value, dict):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        olds: Mapping[str, Any] = old if isinstance(old, dict) else {}
        for key, item in value.items():
            previous = olds.get(key, NO_OLD)
            if isinstance(extra, Mapping):
                errors += _walk_list_types(item, extra, f"{path}[{key}]", previous)
            if key in properties:
                errors += _walk_list_types(item, properties[key], child_path(path, key), previous)
    elif isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set" and len(value) > 1:
            errors += [duplicate(f"{path}[{i}]", value[i]) for i in _duplicates(value)]
        elif list_type == "map" and value:
            errors += _list_map_errors(value, schema, path)
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                errors += _walk_list_types(item, items, f"{path}[{i}]")
    return errors


def check_embedded_resources(obj: Any, schema: Schema) -> list[FieldError]:
    """Errors of every embedded resource in ``obj`` (the root itself is the server's business)."""
    return _walk_embedded(obj, schema, "")


def check_list_types(
    obj: Any, schema: Schema, *, old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """Errors of duplicate elements in set lists and duplicate keys in map lists.

    Given the ``old`` object of an update, the errors are reported only if ``old`` has none, as
    kube-apiserver does. Then every error is in a subtree the update changed (an unchanged one has
    the old object's errors there: none), so only those are walked, and ``old`` is walked only
    when there are errors to excuse.
    """
    if old is None:
        return _walk_list_types(obj, schema, "")
    errors = _walk_list_types(obj, schema, "", old)
    if errors and _walk_list_types(old, schema, ""):
        return []
    return errors
