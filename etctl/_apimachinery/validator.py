"""kube-openapi's schema validator, producing the field errors apiextensions reports.

One :class:`_Validator` walk mirrors ``validate.SchemaValidator`` (type, allOf/anyOf/oneOf/not,
string, format, number, array, enum, object, in that order) and apiextensions'
``kubeOpenAPIResultToFieldErrors`` (which cause type each failure becomes, which value it shows);
two further walks mirror the embedded-resource and list-type checks that follow it.

On update the walk is given the old object and ratchets as apiextensions-apiserver does with
``CRDValidationRatcheting`` (KEP-4008; beta and on by default since Kubernetes 1.30, GA in 1.33;
``ratchetingValueValidator`` and ``common.CorrelatedObject``): a value correlated with an old value
that it is identical to (:func:`~etctl._apimachinery.jsonvalues.identical`, JSON types included)
reports no errors, so it is not walked at all. Correlation follows object properties and map keys
by name, and the items of ``x-kubernetes-list-type: map`` lists by their keys; other lists are
correlated only as a whole. The root's ``apiVersion`` and ``kind`` are never correlated (the real
server cannot see a change to them), and the embedded-resource check is never ratcheted.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any

from etctl._apimachinery.fielderror import (
    FieldError,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)
from etctl._apimachinery.formats import check_format, is_known_format
from etctl._apimachinery.gofmt import go_json, go_quote, go_v
from etctl._apimachinery.jsonvalues import NO_OLD, identical
from etctl._apimachinery.resourcechecks import check_embedded_resources, check_list_types

__all__ = ["validate_object", "validate_value"]

Schema = Mapping[str, Any]
_NIL_PATH = "<nil>"
_TYPE_META = ("apiVersion", "kind")


def _field(name: str) -> str:
    """The field path apiextensions derives from a kube-openapi error name."""
    if not name or name == ".":
        return _NIL_PATH
    return name.removeprefix(".")


_INT64 = range(-(2**63), 2**63)
_MAX_JSON_INTEGER = 2**53 - 1  # the largest integer a float64 holds exactly (swag's bound)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        # Go decodes a number that does not fit an int64 into a float64.
        return "integer" if value in _INT64 else "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _schema_types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    declared = schema.get("type")
    if isinstance(declared, list):
        return [str(t) for t in declared]
    return [declared] if isinstance(declared, str) and declared else []


def _json_equal(left: Any, right: Any) -> bool:
    """Equality of decoded JSON values, numbers compared by value, booleans apart."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return float(left) == float(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            _json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    return type(left) is type(right) and left == right


def _is_json_integer(number: float) -> bool:
    if math.isnan(number) or math.isinf(number) or abs(number) > _MAX_JSON_INTEGER:
        return False
    nearest = round(number)
    return number == nearest or abs(number - nearest) / max(abs(number), 1.0) < 1e-9


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | str:
    try:
        return re.compile(pattern)
    except re.error as err:
        return str(err)


def _bound(limit: float, value: float) -> str:
    """How kube-openapi prints a bound: truncated to an integer when the value is one."""
    return str(int(limit)) if isinstance(value, int) else go_v(float(limit))


def _fewest(results: list[list[FieldError]]) -> list[FieldError]:
    """The failures of the alternative that came closest (fewest errors, first on a tie)."""
    return min(results, key=len)


class _Validator:
    """kube-openapi's SchemaValidator, producing apiextensions' field errors.

    ``root`` is the field path errors are rooted at: none for an object (names become paths and
    errors without a name print as ``<nil>``), ``...default`` for a schema default.
    """

    def __init__(self, root: str = "") -> None:
        self._root = root

    def _f(self, name: str) -> str:
        if not name or name == ".":
            return self._root or _NIL_PATH
        name = name.removeprefix(".")
        return f"{self._root}.{name}" if self._root else name

    def check(self, value: Any, schema: Schema, path: str, old: Any = NO_OLD) -> list[FieldError]:
        """The errors of ``value``; none if it is identical to its correlated ``old`` value."""
        if old is not NO_OLD and identical(value, old):
            return []  # ratcheted: whatever is wrong with it was stored already
        return self._changed(value, schema, path, old)

    def _changed(self, value: Any, schema: Schema, path: str, old: Any) -> list[FieldError]:
        """The errors of a value known to differ from ``old`` (or to have none)."""
        errors = self._type(value, schema, path)
        if value is None:
            return errors + self._enum(value, schema, path)
        errors += self._junctors(value, schema, path, old)
        if isinstance(value, str):
            errors += self._string(value, schema, path)
            errors += self._format(value, schema, path)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            errors += self._number(value, schema, path)
        elif isinstance(value, list):
            errors += self._slice(value, schema, path, old)
        errors += self._enum(value, schema, path)
        if isinstance(value, dict):
            errors += self._object(value, schema, path, old)
        return errors

    def _type(self, value: Any, schema: Schema, path: str) -> list[FieldError]:
        types = _schema_types(schema)
        fmt = schema.get("format") or ""
        if not types and not fmt:
            return []
        if value is None:
            if types and "null" not in types and not schema.get("nullable"):
                joined = ",".join(types)
                message = f"{path} in body must be of type {joined}: {go_quote('null')}"
                return [type_invalid(self._f(path), "null", message)]
            return []
        kind = _json_kind(value)
        if fmt and not {"number", "integer"} & set(types) and isinstance(value, str | list):
            return []
        float_int = kind == "number" and _is_json_integer(value) and "integer" in types
        int_float = kind == "integer" and "number" in types
        if kind in types or float_int or int_float:
            return []
        message = f"{path} in body must be of type {','.join(types)}: {go_quote(kind)}"
        return [type_invalid(self._f(path), kind, message)]

    def _junctors(self, value: Any, schema: Schema, path: str, old: Any) -> list[FieldError]:
        # The alternatives see the same value, so the same old value (as kube's validators of
        # the alternatives build their children with the node's ratcheting constructors).
        errors: list[FieldError] = []
        any_of = schema.get("anyOf") or []
        if any_of:
            results = [self._changed(value, alt, path, old) for alt in any_of]
            if all(results):
                errors.append(
                    invalid(
                        self._f(""),
                        "",
                        f"{go_quote(path)} must validate at least one schema (anyOf)",
                    )
                )
                errors += _fewest(results)
        one_of = schema.get("oneOf") or []
        if one_of:
            results = [self._changed(value, alt, path, old) for alt in one_of]
            passed = sum(1 for r in results if not r)
            if passed != 1:
                found = "Found none valid" if passed == 0 else f"Found {passed} valid alternatives"
                errors.append(
                    invalid(
                        self._f(""),
                        "",
                        f"{go_quote(path)} must validate one and only one schema (oneOf). {found}",
                    )
                )
                if passed == 0:
                    errors += _fewest(results)
        all_of = schema.get("allOf") or []
        if all_of:
            results = [self._changed(value, part, path, old) for part in all_of]
            for result in results:
                errors += result
            passed = sum(1 for r in results if not r)
            if passed != len(all_of):
                none = ". None validated" if passed == 0 else ""
                errors.append(
                    invalid(
                        self._f(""),
                        "",
                        f"{go_quote(path)} must validate all the schemas (allOf){none}",
                    )
                )
        negated = schema.get("not")
        if isinstance(negated, Mapping) and not self._changed(value, negated, path, old):
            errors.append(
                invalid(self._f(""), "", f"{go_quote(path)} must not validate the schema (not)")
            )
        return errors

    def _string(self, value: str, schema: Schema, path: str) -> list[FieldError]:
        field = self._f(path)
        max_length = schema.get("maxLength")
        if max_length is not None and len(value) > max_length:
            return [too_long(field, value, int(max_length))]
        min_length = schema.get("minLength")
        if min_length is not None and len(value) < min_length:
            detail = f"{path} in body should be at least {int(min_length)} chars long"
            return [invalid(field, value, detail)]
        pattern = schema.get("pattern")
        if pattern:
            compiled = _compiled(pattern)
            if isinstance(compiled, str):
                shown = f"{pattern}, but pattern is invalid: {compiled}"
                return [invalid(field, value, f"{path} in body should match '{shown}'")]
            if not compiled.search(value):
                return [invalid(field, value, f"{path} in body should match '{pattern}'")]
        return []

    def _format(self, value: str, schema: Schema, path: str) -> list[FieldError]:
        fmt = schema.get("format")
        if not fmt or not is_known_format(fmt) or check_format(fmt, value):
            return []
        message = f"{path} in body must be of type {fmt}: {go_quote(value)}"
        return [type_invalid(self._f(path), value, message)]

    def _number(self, value: float, schema: Schema, path: str) -> list[FieldError]:
        errors: list[FieldError] = []
        field = self._f(path)
        factor = schema.get("multipleOf")
        if factor is not None and factor != 0:
            if factor < 0:
                detail = f"factor MultipleOf declared for {path} must be positive: {go_v(factor)}"
                errors.append(invalid(field, factor, detail))
            else:
                if isinstance(value, int):
                    step = int(factor)
                    ok = step == 0 or value % step == 0
                else:
                    ratio = value * (1 / factor) if factor < 1 else value / factor
                    ok = _is_json_integer(ratio)
                if not ok:
                    shown = _bound(factor, value)
                    detail = f"{path} in body should be a multiple of {shown}"
                    errors.append(invalid(field, value, detail))
        for key, exclusive_key, below in (
            ("minimum", "exclusiveMinimum", True),
            ("maximum", "exclusiveMaximum", False),
        ):
            limit = schema.get(key)
            if limit is None:
                continue
            exclusive = bool(schema.get(exclusive_key))
            bound: float = int(limit) if isinstance(value, int) else float(limit)
            failed = (
                (value <= bound if exclusive else value < bound)
                if below
                else (value >= bound if exclusive else value > bound)
            )
            if failed:
                word = ("greater" if below else "less") + (" than" if exclusive else "")
                if not exclusive:
                    word += " than or equal to"
                detail = f"{path} in body should be {word} {_bound(limit, value)}"
                errors.append(invalid(field, value, detail))
        return errors

    def _slice(self, value: list[Any], schema: Schema, path: str, old: Any) -> list[FieldError]:
        errors: list[FieldError] = []
        items = schema.get("items")
        if isinstance(items, Mapping):
            olds = _correlated_items(value, schema, old)
            for i, item in enumerate(value):
                errors += self.check(item, items, f"{path}[{i}]", olds[i] if olds else NO_OLD)
        field = self._f(path)
        min_items = schema.get("minItems")
        if min_items is not None and len(value) < min_items:
            detail = f"{path} in body should have at least {int(min_items)} items"
            errors.append(invalid(field, len(value), detail))
        max_items = schema.get("maxItems")
        if max_items is not None and len(value) > max_items:
            errors.append(too_many(field, len(value), int(max_items)))
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for item in value:
                if any(_json_equal(item, s) for s in seen):
                    detail = f"{path} in body shouldn't contain duplicates"
                    errors.append(invalid(field, "", detail))
                    break
                seen.append(item)
        return errors

    def _enum(self, value: Any, schema: Schema, path: str) -> list[FieldError]:
        allowed = schema.get("enum")
        if not allowed:
            return []
        if value is not None and any(_json_equal(value, a) for a in allowed if a is not None):
            return []
        shown = [a if isinstance(a, str) else go_json(a) for a in allowed]
        return [not_supported(self._f(path), value, shown)]

    def _object(
        self, value: dict[str, Any], schema: Schema, path: str, old: Any
    ) -> list[FieldError]:
        field = self._f(path)
        count = len(value)
        min_props = schema.get("minProperties")
        if min_props is not None and count < min_props:
            detail = f"{path} in body should have at least {int(min_props)} properties"
            return [invalid(field, count, detail)]
        max_props = schema.get("maxProperties")
        if max_props is not None and count > max_props:
            return [too_many(field, count, int(max_props))]
        errors: list[FieldError] = []
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        olds: Mapping[str, Any] = old if isinstance(old, dict) else {}
        if extra is False:
            for key in value:
                if key not in properties:
                    detail = f"{path}.{key} in body is a forbidden property"
                    errors.append(invalid(field, key, detail))
        elif isinstance(extra, Mapping):
            for key, item in value.items():
                if key not in properties:
                    errors += self.check(item, extra, f"{path}.{key}", olds.get(key, NO_OLD))
        errors += self._properties(value, properties, path, olds)
        for name in schema.get("required") or ():
            if name not in value:
                errors.append(required(self._f(f"{path}.{name}")))
        return errors

    def _properties(
        self,
        value: dict[str, Any],
        properties: Mapping[str, Schema],
        path: str,
        olds: Mapping[str, Any],
    ) -> list[FieldError]:
        """The errors of the declared properties, in the schema's order."""
        errors: list[FieldError] = []
        for name, sub in properties.items():
            if name in value:
                previous = olds.get(name, NO_OLD)
                if not path and name in _TYPE_META:
                    previous = NO_OLD  # never ratcheted: the real server cannot see a change
                child = f"{path}.{name}" if path else name
                errors += self.check(value[name], sub, child, previous)
        return errors


def _map_key(item: Any, keys: list[str]) -> tuple[Any, ...] | None:
    """An item's key in an ``x-kubernetes-list-type: map`` list, typed (``True`` is not ``1``).

    None for an item that is not an object or lacks a key field, or whose key is not a scalar:
    such items are not correlated (kube would key them by the fields' defaults; not correlating
    only validates them as on create).
    """
    if not isinstance(item, dict):
        return None
    key: list[Any] = []
    for name in keys:
        part = item.get(name, NO_OLD)
        if part is NO_OLD or isinstance(part, dict | list):
            return None
        key.append((type(part), part))
    return tuple(key)


def _correlated_items(value: list[Any], schema: Schema, old: Any) -> list[Any] | None:
    """The old item each item of a changed list is correlated with (``NO_OLD`` for none).

    Only ``x-kubernetes-list-type: map`` lists correlate their items, by key, with the first old
    item of the same key (``MapList.Get``); other lists, ``set`` included, only as a whole.
    None when nothing is correlated.
    """
    if not isinstance(old, list) or not old or schema.get("x-kubernetes-list-type") != "map":
        return None
    keys = [str(k) for k in schema.get("x-kubernetes-list-map-keys") or ()]
    if not keys:
        return None
    by_key: dict[tuple[Any, ...], Any] = {}
    for item in old:
        key = _map_key(item, keys)
        if key is not None:
            by_key.setdefault(key, item)
    return [
        NO_OLD if (key := _map_key(item, keys)) is None else by_key.get(key, NO_OLD)
        for item in value
    ]


def _root_view(schema: Schema) -> Schema:
    """The schema as validation applies it: root metadata reduced to name and generateName."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or "metadata" not in properties:
        return schema
    meta = properties["metadata"]
    kept = {
        k: v for k, v in (meta.get("properties") or {}).items() if k in ("name", "generateName")
    }
    view = dict(schema)
    view["properties"] = {**properties, "metadata": {"type": "object", "properties": kept}}
    return view


def validate_object(
    obj: Mapping[str, Any], schema: Schema, *, old: Mapping[str, Any] | None = None
) -> list[FieldError]:
    """Validate a whole custom resource: schema, embedded resources, list-type uniqueness.

    Args:
        obj: the object (pruned and defaulted).
        schema: the version's ``openAPIV3Schema``.
        old: on update, the stored object (at the same version). Schema errors in values
            unchanged from it are ratcheted (not reported), and list-type errors are reported
            only if the old object had none; embedded resources are checked as on create.
    """
    view = _root_view(schema)
    errors = _Validator().check(obj, view, "", NO_OLD if old is None else old)
    errors += check_embedded_resources(obj, view)
    errors += check_list_types(obj, view, old=old)
    return errors


def validate_value(value: Any, schema: Schema, *, field: str) -> list[FieldError]:
    """Validate a standalone value (a schema default) with errors rooted at ``field``."""
    return _Validator(field).check(value, schema, "")
