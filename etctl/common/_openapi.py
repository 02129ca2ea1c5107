"""Structural OpenAPI v3 schemas from pydantic models, for CustomResourceDefinitions.

pydantic writes JSON Schema 2020-12; a CRD needs a *structural* OpenAPI v3.0 schema. The
converter here bridges the two:

* every ``$ref`` / ``$defs`` is inlined (a CRD schema cannot reference anything);
* ``title`` goes; ``X | None`` becomes the schema of ``X`` with ``nullable: true`` (never an
  ``anyOf`` with ``null``); ``int | str`` becomes ``x-kubernetes-int-or-string``;
* ``const`` becomes a one-value ``enum``, numeric ``exclusiveMinimum``/``exclusiveMaximum`` become
  the OpenAPI 3.0 boolean form, ``dict[str, Any]`` keeps unknown fields;
* descriptions come from attribute docstrings, defaults from field defaults (``None`` dropped);
* a field that is optional in Python but must not be null on the wire (a required field the
  model parses leniently) sets ``json_schema_extra={"nullable": False}``, and one whose Python
  default only serves lenient parsing sets ``json_schema_extra={"default": None}`` to keep that
  default out of the schema.

The result is then checked by the same rules the embedded API server applies before it accepts a
CRD (:mod:`etctl._apimachinery.structural`: every node typed, junctors only carrying value
validations, no forbidden keywords, defaults that conform), plus etctl's own (no ``title``), so a
schema that would be rejected fails at generation time, not at install time.

:class:`KnownKeys` describes a map with well-known keys (``tfReplicaSpecs``) as an object with one
property per key, each with its own schema, while keeping other keys for the controller to report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from etctl._apimachinery.schemapath import INT_OR_STRING, JUNCTORS
from etctl.errors import ConfigError

__all__ = ["KnownKeys", "openapi_schema", "schema_at", "schema_problems"]


@dataclass(frozen=True, slots=True)
class KnownKeys:
    """Schema hint for a ``dict[str, Model]`` whose useful keys are known in advance.

    The map is described as an object with one property per known key (each with the schema of
    its own model, so ``Chief`` can allow at most one replica while ``Worker`` allows any number)
    and ``x-kubernetes-preserve-unknown-fields``, so other keys (a lower-case ``worker``, a typo)
    reach the controller, which normalises or reports them, instead of being pruned silently.

    Args:
        keys: ``(key, model)`` pairs in the order the schema lists them.
        min_properties: the fewest keys the map may have.
    """

    keys: tuple[tuple[str, type[BaseModel]], ...]
    min_properties: int = 0

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        properties = {key: handler(model.__pydantic_core_schema__) for key, model in self.keys}
        schema: JsonSchemaValue = {
            "type": "object",
            "properties": properties,
            "x-kubernetes-preserve-unknown-fields": True,
        }
        if self.min_properties:
            schema["minProperties"] = self.min_properties
        return schema


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of ``model`` (JSON names, validation-mode view).

    Raises:
        ConfigError: the model uses a construct a structural schema cannot express (a union
            other than ``X | None`` or ``int | str``, a recursive model), or the result is not
            structural.
    """
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    # The JSON round trip unshares the nodes inlined from one definition, so a caller may change
    # one node without changing its twins (and YAML renders no anchors).
    schema: dict[str, Any] = json.loads(
        json.dumps(_Converter(defs).convert(raw, model.__name__, ()))
    )
    problems = schema_problems(schema, root=False)
    if problems:
        msg = f"{model.__name__}: the generated schema is not structural: " + "; ".join(problems)
        raise ConfigError(msg)
    return schema


def schema_problems(schema: Mapping[str, Any], *, root: bool = True) -> list[str]:
    """Why the API server would refuse ``schema`` in a CRD, plus etctl's own rule (no titles).

    Args:
        schema: a version's ``openAPIV3Schema``, or the schema of one model.
        root: ``schema`` is a version's root; False checks it as a field's schema, so the rules
            that hold only at a CRD's root (on ``metadata``, ``apiVersion`` and ``kind``) are not
            applied to a model that will sit below it.
    """
    # Imported here: the structural rules (a validator, defaulting, Go formats) serve CRD
    # generation and its checks, which an operator that only reconciles never runs.
    from etctl._apimachinery.structural import structural_errors  # noqa: PLC0415

    if root:
        return structural_errors(schema) + _titles(schema, "openAPIV3Schema")
    field = "openAPIV3Schema.properties[model]"
    wrapped = {"type": "object", "properties": {"model": schema}}
    found = structural_errors(wrapped) + _titles(schema, field)
    return [problem.replace(field, "<model>", 1) for problem in found]


def _titles(node: Any, path: str) -> list[str]:
    """Etctl's own schema rule: no ``title`` anywhere (pydantic's titles say nothing to users)."""
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in _titles(item, f"{path}[{i}]")]
    if not isinstance(node, Mapping):
        return []
    found = [f"{path}.title: etctl keeps titles out of its CRDs"] if "title" in node else []
    for key, value in node.items():
        if key not in ("default", "enum", "example"):
            found.extend(_titles(value, f"{path}.{key}"))
    return found


class _Converter:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs

    def convert(self, node: Mapping[str, Any], path: str, seen: tuple[str, ...]) -> dict[str, Any]:
        out = self._inline(node, path, seen)
        _normalise_keywords(out)
        extra = out.get("additionalProperties")
        if isinstance(extra, Mapping):
            out["additionalProperties"] = self.convert(extra, f"{path}.*", seen)
        if isinstance(out.get("properties"), Mapping):
            out["properties"] = {
                name: self.convert(sub, f"{path}.{name}", seen)
                for name, sub in out["properties"].items()
            }
        if isinstance(out.get("items"), Mapping):
            out["items"] = self.convert(out["items"], f"{path}[]", seen)
        for junctor in JUNCTORS:
            if isinstance(out.get(junctor), list):
                out[junctor] = [_drop_titles(branch) for branch in out[junctor]]
        return out

    def _inline(self, node: Mapping[str, Any], path: str, seen: tuple[str, ...]) -> dict[str, Any]:
        """``node`` with its reference, single-reference allOf and nullable union resolved."""
        out = dict(node)
        out.pop("title", None)
        ref = out.pop("$ref", None)
        if ref is not None:
            out = self._merge(self._resolve(ref, path, seen), out, path, seen)
        all_of = out.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
            del out["allOf"]
            out = self._merge(self.convert(all_of[0], path, seen), out, path, seen)
        for junctor in ("anyOf", "oneOf"):
            if junctor in out and not _is_value_validation(out[junctor]):
                out = self._collapse_union(out, junctor, path, seen)
        return out

    def _resolve(self, ref: str, path: str, seen: tuple[str, ...]) -> dict[str, Any]:
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            msg = f"{path}: {name} refers to itself; a CRD schema cannot be recursive"
            raise ConfigError(msg)
        if name not in self._defs:
            msg = f"{path}: unresolved reference {ref}"
            raise ConfigError(msg)
        return self.convert(self._defs[name], path, (*seen, name))

    def _merge(
        self,
        base: dict[str, Any],
        overrides: Mapping[str, Any],
        path: str,
        seen: tuple[str, ...],
    ) -> dict[str, Any]:
        # Keywords next to a reference (a field's description or default) win over the target's.
        merged = {**base, **overrides}
        return self.convert(merged, path, seen) if overrides else merged

    def _collapse_union(
        self, node: dict[str, Any], junctor: str, path: str, seen: tuple[str, ...]
    ) -> dict[str, Any]:
        options = node.pop(junctor)
        if node.get("x-kubernetes-int-or-string") and options == INT_OR_STRING:
            node[junctor] = options
            return node
        concrete = [option for option in options if option.get("type") != "null"]
        nullable = len(concrete) != len(options)
        if len(concrete) == 1:
            merged = self._merge(self.convert(concrete[0], path, seen), node, path, seen)
        elif sorted(option.get("type", "") for option in concrete) == ["integer", "string"]:
            merged = {**node, "anyOf": INT_OR_STRING, "x-kubernetes-int-or-string": True}
        else:
            msg = (
                f"{path}: a union of {len(concrete)} types cannot be expressed in a structural "
                "schema (use X | None, int | str, or a KnownKeys hint)"
            )
            raise ConfigError(msg)
        # A field may be optional in Python yet not nullable on the wire: it says so with an
        # explicit ``nullable: False`` (the API server then rejects an explicit null).
        if merged.get("nullable") is False:
            del merged["nullable"]
        elif nullable:
            merged["nullable"] = True
        return merged


def _normalise_keywords(out: dict[str, Any]) -> None:
    """JSON Schema 2020-12 keywords rewritten in OpenAPI v3.0 form, in place."""
    if isinstance(out.get("description"), str):
        out["description"] = _clean_description(out["description"])
    if "default" in out and out["default"] is None:
        del out["default"]
    if "const" in out:
        out["enum"] = [out.pop("const")]
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = out.get(exclusive)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[bound] = value
            out[exclusive] = True
    extra = out.get("additionalProperties")
    if isinstance(extra, bool):
        del out["additionalProperties"]
        if extra and "properties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True


def _clean_description(text: str) -> str:
    """Docstring text as one line per paragraph (docstrings wrap at the source's line length)."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)


def _drop_titles(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {key: _drop_titles(value) for key, value in node.items() if key != "title"}
    if isinstance(node, list):
        return [_drop_titles(item) for item in node]
    return node


def _is_value_validation(branches: Any) -> bool:
    """True when every branch only validates values (no types, refs or null).

    ``oneOf`` of ``required`` lists is such a junctor: structural, and kept as it is.
    """
    if not isinstance(branches, list) or not branches:
        return False
    return all(
        isinstance(branch, Mapping) and not ({"type", "$ref", "anyOf", "oneOf"} & branch.keys())
        for branch in branches
    )


# --- paths --------------------------------------------------------------------------------------


def schema_at(schema: Mapping[str, Any], json_path: str) -> Mapping[str, Any] | None:
    """The schema node a simple JSONPath (``.status.conditions[-1:].type``) points at, or None.

    Map keys step into ``additionalProperties``; any bracketed suffix steps into ``items``.
    """
    node: Mapping[str, Any] | None = schema
    for segment in _segments(json_path):
        if node is None:
            return None
        if segment == "[]":
            node = node.get("items")
            continue
        properties = node.get("properties") or {}
        extra = node.get("additionalProperties")
        if segment in properties:
            node = properties[segment]
        elif isinstance(extra, Mapping):
            node = extra
        else:
            return None
    return node


def _segments(json_path: str) -> Sequence[str]:
    segments: list[str] = []
    for part in json_path.strip().lstrip(".").split("."):
        name, _, rest = part.partition("[")
        if name:
            segments.append(name)
        segments.extend("[]" for _ in range(rest.count("]")))
    return segments
