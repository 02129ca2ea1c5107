"""A static cost estimate of a CRD validation rule: a lower bound of kube-apiserver's.

kube-apiserver refuses a CRD whose rule's estimated cost (the rule's worst case, times how many
values of its node an object may hold) exceeds 10,000,000, or whose rules together exceed
100,000,000: ``estimated rule cost exceeds budget by factor of more than 100x (try simplifying
the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are
declared)``. The estimate walks the checked expression (cel-expr-python's serialised
``CheckedExpr``, read with the protobuf wire reader): every node costs 1, a comprehension
(``all``, ``exists``, ``map``, ``filter``...) costs its range plus, per element, its condition and
step, and a regular expression costs a tenth of its string's longest length. A list, map or
string without ``maxItems``, ``maxProperties`` or ``maxLength`` is as large as a 3 MiB request
allows, as the real estimator assumes.

It counts less than cel-go's estimator does, never more: a rule refused here is refused by a real
server; a rule accepted here may still be refused there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from etctl.testing._apiserver.protowire import fields

__all__ = ["PER_CRD_LIMIT", "PER_RULE_LIMIT", "cardinality", "estimate", "over_budget"]

PER_RULE_LIMIT = 10_000_000
"""``StaticEstimatedCostLimit``: the most one rule may cost (times its node's cardinality)."""
PER_CRD_LIMIT = 100_000_000
"""``StaticEstimatedCRDCostLimit``: the most the rules of one schema may cost together."""
_MAX_REQUEST_BYTES = 3 * 1024 * 1024
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})

Schema = Mapping[str, Any] | None


def _min_size(schema: Schema) -> int:
    """The fewest bytes a value of ``schema`` takes in JSON, with its separating comma."""
    kind = (schema or {}).get("type")
    if kind == "string":
        return 3  # "",
    if kind in ("object", "array"):
        return 3  # {}, or [],
    return 2  # 0,


def cardinality(schema: Schema) -> int:
    """How many elements a list or map of ``schema`` may hold (1 for anything else)."""
    if not schema:
        return 1
    if schema.get("type") == "array":
        bound = schema.get("maxItems")
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else None
        return int(bound) if bound is not None else _MAX_REQUEST_BYTES // _min_size(items)
    extra = schema.get("additionalProperties")
    if schema.get("type") == "object" and isinstance(extra, Mapping):
        bound = schema.get("maxProperties")
        # An entry is at least a key and a value: "":x,
        return int(bound) if bound is not None else _MAX_REQUEST_BYTES // (_min_size(extra) + 3)
    return 1


def _length(schema: Schema) -> int:
    """The longest a string of ``schema`` may be."""
    bound = (schema or {}).get("maxLength")
    return int(bound) if bound is not None else _MAX_REQUEST_BYTES


def _element(schema: Schema) -> Schema:
    """What a comprehension over ``schema`` binds: list items, or (for maps) the string keys."""
    if not schema:
        return None
    if schema.get("type") == "array":
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    return {"type": "string"}


def _child(schema: Schema, name: str) -> Schema:
    if not schema:
        return None
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
        return properties[name]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _message(data: bytes) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for number, value in fields(data):
        out.setdefault(number, []).append(value)
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else ""


class _Estimator:
    def __init__(self, self_schema: Schema) -> None:
        self.scope: dict[str, Schema] = {"self": self_schema, "oldSelf": self_schema}

    def cost(self, data: bytes) -> tuple[int, Schema]:
        """``(cost, schema of the value)`` of one ``Expr``."""
        expr = _message(data)
        if 4 in expr:  # ident
            name = _text(_message(expr[4][0]).get(1, [b""])[0])
            return 1, self.scope.get(name)
        if 5 in expr:  # select
            select = _message(expr[5][0])
            cost, schema = self.cost(select.get(1, [b""])[0])
            return cost + 1, _child(schema, _text(select.get(2, [b""])[0]))
        if 6 in expr:  # call
            return self._call(_message(expr[6][0]))
        if 7 in expr:  # list literal
            elements = _message(expr[7][0]).get(1, [])
            return 1 + sum(self.cost(e)[0] for e in elements), None
        if 9 in expr:  # comprehension
            return self._comprehension(_message(expr[9][0]))
        return 1, None

    def _call(self, call: dict[int, list[Any]]) -> tuple[int, Schema]:
        function = _text(call.get(2, [b""])[0])
        total, target_schema = 1, None
        if 1 in call:
            cost, target_schema = self.cost(call[1][0])
            total += cost
        schemas = []
        for arg in call.get(3, []):
            cost, schema = self.cost(arg)
            total += cost
            schemas.append(schema)
        if function in _REGEX_FUNCTIONS:
            total += math.ceil(_length(target_schema) * 0.1)
        if function == "_[_]" and schemas:
            return total, _child(schemas[0], "") if schemas[0] else None
        return total, None

    def _comprehension(self, loop: dict[int, list[Any]]) -> tuple[int, Schema]:
        variable = _text(loop.get(1, [b""])[0])
        range_cost, range_schema = self.cost(loop.get(2, [b""])[0])
        iterations = cardinality(range_schema) if range_schema else 1
        outer = self.scope.get(variable)
        self.scope[variable] = _element(range_schema)
        body = sum(self.cost(loop[k][0])[0] for k in (5, 6) if k in loop)
        if outer is None:
            self.scope.pop(variable, None)
        else:
            self.scope[variable] = outer
        rest = sum(self.cost(loop[k][0])[0] for k in (4, 7) if k in loop)
        return range_cost + iterations * body + rest, None


def estimate(program: Any, schema: Schema) -> int:
    """The estimated worst-case cost of a compiled rule on a value of ``schema``."""
    envelope = _message(program.serialize())
    checked = _message(envelope.get(2, [b""])[0])
    expr = checked.get(4, [b""])[0]
    return _Estimator(schema).cost(expr)[0]


def over_budget(cost: int, limit: int) -> str:
    """The real server's words for a cost over ``limit``."""
    factor = cost / limit
    shown = "more than 100x" if factor > 100 else f"{factor:.1f}x"
    return (
        f"exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, "
        "maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
