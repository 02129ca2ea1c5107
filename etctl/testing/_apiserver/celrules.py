"""CRD validation rules (``x-kubernetes-validations``), compiled and run as kube-apiserver does.

A CRD version's schema is compiled once into a tree of rule nodes (:class:`RuleNode`) parallel to
the schema
(:func:`compile_rules`): each ``rule`` and ``messageExpression`` is compiled with CEL (Google's C++
runtime through cel-expr-python), and a rule that references ``oldSelf`` is a *transition rule*.
Compile errors, a bad ``reason``, ``fieldPath``, ``message`` or ``optionalOldSelf`` are the CRD's
422 causes, worded and placed as apiextensions words them.

:func:`evaluate` walks an object (and, on update, the old one) down the tree, as the real
validator does:

* a rule is evaluated on every non-null value at its node, with ``self`` that value;
* ``oldSelf`` is the correlated old value: the same property of an object, the same key of a map
  (unless ``x-kubernetes-map-type: atomic``), the item with the same keys of an
  ``x-kubernetes-list-type: map`` list, and nothing inside other lists; a transition rule is
  evaluated only where there is one, unless ``optionalOldSelf: true`` (then ``oldSelf`` is an
  optional, empty on create);
* a false rule is a field error at the node's path (plus ``fieldPath``): ``Invalid value:
  "object": <message>`` (the schema type as the value), or ``Forbidden``/``Required``/
  ``Duplicate`` with ``reason``; the message is ``messageExpression``'s value when it evaluates to
  a non-empty single-line string, else ``message``, else ``failed rule: <rule>``; an evaluation
  error is ``<error> evaluating rule: <rule>``;
* on update, a non-transition rule's error at a value equal to its old value (or under an equal
  correlated parent) is ratcheted: not reported, as with ``CRDValidationRatcheting``.

The environment has CEL's standard library, the ``strings`` and optional extensions, and from
Kubernetes' library the list functions (``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``,
``lastIndexOf``) and ``find``/``findAll``; rules are checked against ``dyn`` values, so a type
error the real server finds at compile time is found here when the rule runs. A rule's cost is
estimated statically (:mod:`~etctl.testing._apiserver.celcost`, a lower bound of the real
estimate) and a CRD over the limits refused; the cost of a running rule is not metered.

cel-expr-python is imported only when a CRD with rules is compiled: the operator never loads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from etctl.testing._apiserver.celcost import (
    PER_CRD_LIMIT,
    PER_RULE_LIMIT,
    cardinality,
    estimate,
    over_budget,
)
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.validation import go_value

__all__ = ["CompiledRule", "RuleNode", "compile_rules", "evaluate"]

_REASONS = ("FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate")
_MAX_MESSAGE_BYTES = 5000
_OLD = "__etctlOldSelf"
_HAS_OLD = "__etctlHasOldSelf"


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """One ``x-kubernetes-validations`` entry, compiled."""

    rule: str
    program: Any
    uses_old_self: bool
    message: str = ""
    message_program: Any = None
    reason: str = ""
    field_path: tuple[str, ...] = ()
    optional_old_self: bool = False

    @property
    def error_string(self) -> str:
        """What a message names the rule by: its message, else its text."""
        return self.message.strip() or self.rule.strip()


@dataclass(slots=True)
class RuleNode:
    """The rules at one schema node and the nodes below it that hold rules."""

    schema: Mapping[str, Any]
    rules: list[CompiledRule] = field(default_factory=list)
    properties: dict[str, RuleNode] = field(default_factory=dict)
    additional: RuleNode | None = None
    items: RuleNode | None = None


# -- the environment -------------------------------------------------------------------------


def _is_sorted(values: Sequence[Any]) -> bool:
    return all(values[i] <= values[i + 1] for i in range(len(values) - 1))


def _index_of(values: Sequence[Any], item: Any) -> int:
    return next((i for i, v in enumerate(values) if v == item), -1)


def _last_index_of(values: Sequence[Any], item: Any) -> int:
    return next((i for i in range(len(values) - 1, -1, -1) if values[i] == item), -1)


def _find(text: str, pattern: str) -> str:
    match = re.search(pattern, text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str) -> list[str]:
    return [m.group(0) for m in re.finditer(pattern, text)]


@cache
def _environments() -> tuple[Any, Any, Any]:
    """``(without oldSelf, with oldSelf, with an optional oldSelf)`` environments, made once."""
    from cel_expr_python import cel  # noqa: PLC0415 - the operator never loads CEL
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings  # noqa: PLC0415

    dyn = cel.Type.DYN
    items = cel.Type.List(dyn)

    def member(name: str, result: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        overload = cel.Overload(
            f"k8s_{name}_{len(params)}", result, params, is_member=True, impl=impl
        )
        return cel.FunctionDecl(name, [overload])

    kubernetes = cel.CelExtension(
        "kubernetes",
        [
            member("isSorted", cel.Type.BOOL, [items], _is_sorted),
            member("sum", dyn, [items], sum),
            member("min", dyn, [items], min),
            member("max", dyn, [items], max),
            member("indexOf", cel.Type.INT, [items, dyn], _index_of),
            member("lastIndexOf", cel.Type.INT, [items, dyn], _last_index_of),
            member("find", cel.Type.STRING, [cel.Type.STRING, cel.Type.STRING], _find),
            member("findAll", items, [cel.Type.STRING, cel.Type.STRING], _find_all),
        ],
    )

    def env(**variables: Any) -> Any:
        return cel.NewEnv(
            variables=variables,
            extensions=[
                ext_strings.ExtStrings(),
                ext_optional.ExtOptional(),
                ext_bindings.ExtBindings(),
                kubernetes,
            ],
        )

    return (
        env(self=dyn),
        env(self=dyn, oldSelf=dyn),
        env(self=dyn, **{_OLD: dyn, _HAS_OLD: cel.Type.BOOL}),
    )


def _error_type() -> Any:
    from cel_expr_python import cel  # noqa: PLC0415

    return cel.Type.ERROR


# -- compiling -------------------------------------------------------------------------------


class _CompileError(Exception):
    pass


_PROGRAMS: dict[tuple[int, str], Any] = {}
"""Compiled programs by environment and text: a CRD's rules are compiled when it is validated
and again for its resource, and the same CRDs are loaded by many servers in one process."""


def _compile(env: Any, text: str) -> Any:
    key = (id(env), text)
    program = _PROGRAMS.get(key)
    if program is None:
        try:
            program = env.compile(text)
        except RuntimeError as error:
            detail = str(error).removeprefix("INVALID_ARGUMENT: ")
            raise _CompileError(detail.split(" [INVALID_ARGUMENT]")[0].strip()) from None
        _PROGRAMS[key] = program
    return program


def _references_old_self(text: str) -> bool:
    plain, _with_old, _optional = _environments()
    try:
        _compile(plain, text)
    except _CompileError as error:
        return re.search(r"undeclared reference to 'oldSelf[.']", str(error)) is not None
    return False


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]")


def _field_path(text: str, schema: Mapping[str, Any]) -> tuple[str, ...]:
    """A rule's ``fieldPath`` as path parts, checked against the schema under the node."""
    parts: list[str] = []
    position = 0
    node: Mapping[str, Any] = schema
    while position < len(text):
        match = _PATH_TOKEN.match(text, position)
        if match is None:
            raise _CompileError("fieldPath must be a valid path")
        name = match.group(1) if match.group(1) is not None else match.group(2)
        properties = node.get("properties")
        additional = node.get("additionalProperties")
        if isinstance(properties, Mapping) and name in properties:
            node = properties[name]
            parts.append(name)
        elif isinstance(additional, Mapping):
            node = additional
            parts.append(f"[{name}]")
        else:
            raise _CompileError("fieldPath must be a valid path: does not refer to a valid field")
        position = match.end()
    return tuple(parts)


def _compile_rule(
    entry: Mapping[str, Any], schema: Mapping[str, Any], path: str, correlatable: bool
) -> tuple[CompiledRule | None, list[Cause]]:
    """One entry, or the CRD's causes against it."""
    text = str(entry.get("rule") or "")
    if not text.strip():
        return None, [Cause("FieldValueRequired", f"{path}.rule", "Required value")]
    plain, with_old, optional = _environments()
    uses_old = _references_old_self(text)
    optional_old = entry.get("optionalOldSelf") is True
    causes: list[Cause] = []
    program = None
    try:
        if optional_old and uses_old:
            program = _compile(
                optional,
                f"cel.bind(oldSelf, {_HAS_OLD} ? optional.of({_OLD}) : optional.none(), {text})",
            )
        else:
            program = _compile(with_old if uses_old else plain, text)
    except _CompileError as error:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"{path}.rule",
                f"Invalid value: {go_value(text)}: compilation failed: {error}",
            )
        )
    if optional_old and not uses_old:
        causes.append(
            Cause(
                "FieldValueForbidden",
                f"{path}.optionalOldSelf",
                "Forbidden: may not be set if rule does not use oldSelf",
            )
        )
    if uses_old and not correlatable:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"{path}.rule",
                f"Invalid value: {go_value(text)}: oldSelf cannot be used on the uncorrelatable "
                "portion of the schema within x-kubernetes-validations[0]",
            )
        )
    message_program, parts, problems = _entry_checks(
        entry, schema, path, with_old if uses_old else plain
    )
    causes += problems
    if causes or program is None:
        return None, causes
    return (
        CompiledRule(
            rule=text,
            program=program,
            uses_old_self=uses_old,
            message=str(entry.get("message") or ""),
            message_program=message_program,
            reason=str(entry.get("reason") or ""),
            field_path=parts,
            optional_old_self=optional_old,
        ),
        [],
    )


def _entry_checks(
    entry: Mapping[str, Any], schema: Mapping[str, Any], path: str, env: Any
) -> tuple[Any, tuple[str, ...], list[Cause]]:
    """``message``, ``messageExpression``, ``reason`` and ``fieldPath`` of an entry, checked."""
    causes: list[Cause] = []
    message = entry.get("message")
    if isinstance(message, str) and (not message.strip() or "\n" in message):
        detail = (
            "message must be non-empty if specified"
            if not message.strip()
            else "message must not contain line breaks"
        )
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"{path}.message",
                f"Invalid value: {go_value(message)}: {detail}",
            )
        )
    message_program = None
    expression = entry.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            message_program = _compile(env, expression)
        except _CompileError as error:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"{path}.messageExpression",
                    f"Invalid value: {go_value(expression)}: messageExpression compilation "
                    f"failed: {error}",
                )
            )
    reason = entry.get("reason")
    if reason is not None and reason not in _REASONS:
        supported = ", ".join(f'"{r}"' for r in _REASONS)
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f"{path}.reason",
                f"Unsupported value: {go_value(reason)}: supported values: {supported}",
            )
        )
    parts: tuple[str, ...] = ()
    if entry.get("fieldPath"):
        try:
            parts = _field_path(str(entry["fieldPath"]), schema)
        except _CompileError as error:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"{path}.fieldPath",
                    f"Invalid value: {go_value(entry['fieldPath'])}: {error}",
                )
            )
    return message_program, parts, causes


@dataclass(slots=True)
class _Costs:
    """The estimated costs of one schema's rules.

    ``total`` is the running total; ``multiplier`` is how many values of the current node an
    object may hold (the product of the enclosing lists' and maps' sizes).
    """

    total: int = 0
    multiplier: int = 1


def compile_rules(
    schema: Mapping[str, Any],
    path: str,
    *,
    correlatable: bool = True,
    costs: _Costs | None = None,
) -> tuple[RuleNode | None, list[Cause]]:
    """The rule tree of a schema (None when it has no rules), or the causes of bad rules.

    A rule whose estimated cost (:mod:`~etctl.testing._apiserver.celcost`) is over the limit,
    or rules over the limit together, are causes too.

    Args:
        schema: the (structural) schema.
        path: the schema's field path in the CRD, for causes.
        correlatable: whether ``oldSelf`` can be correlated at this node.
        costs: the estimate so far (None at the schema's root).
    """
    root = costs is None
    costs = costs if costs is not None else _Costs()
    causes: list[Cause] = []
    node = RuleNode(schema)
    for index, entry in enumerate(schema.get("x-kubernetes-validations") or []):
        if not isinstance(entry, Mapping):
            continue
        where = f"{path}.x-kubernetes-validations[{index}]"
        compiled, problems = _compile_rule(entry, schema, where, correlatable)
        causes += problems
        if compiled is not None:
            cost = estimate(compiled.program, schema) * costs.multiplier
            costs.total += cost
            if cost > PER_RULE_LIMIT:
                causes.append(
                    Cause(
                        "FieldValueForbidden",
                        f"{where}.rule",
                        "Forbidden: estimated rule cost " + over_budget(cost, PER_RULE_LIMIT),
                    )
                )
            node.rules.append(compiled)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if isinstance(sub, Mapping):
                child, problems = compile_rules(
                    sub, f"{path}.properties[{name}]", correlatable=correlatable, costs=costs
                )
                causes += problems
                if child is not None:
                    node.properties[str(name)] = child
    outer = costs.multiplier
    costs.multiplier = outer * cardinality(schema)
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        atomic = schema.get("x-kubernetes-map-type") == "atomic"
        node.additional, problems = compile_rules(
            additional,
            f"{path}.additionalProperties",
            correlatable=correlatable and not atomic,
            costs=costs,
        )
        causes += problems
    items = schema.get("items")
    if isinstance(items, Mapping):
        keyed = schema.get("x-kubernetes-list-type") == "map"
        node.items, problems = compile_rules(
            items, f"{path}.items", correlatable=correlatable and keyed, costs=costs
        )
        causes += problems
    costs.multiplier = outer
    if root and costs.total > PER_CRD_LIMIT:
        causes.append(
            Cause(
                "FieldValueForbidden",
                path,
                "Forbidden: x-kubernetes-validations estimated rule cost total for entire "
                "OpenAPIv3 schema " + over_budget(costs.total, PER_CRD_LIMIT),
            )
        )
    if causes:
        return None, causes
    empty = not (node.rules or node.properties or node.additional or node.items)
    return (None if empty else node), []


# -- evaluating ------------------------------------------------------------------------------

_MISSING = object()


def _join(path: str, part: str) -> str:
    if part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}" if path else part


def _run(program: Any, data: Mapping[str, Any]) -> tuple[Any, str]:
    """``(value, "")``, or ``(None, error)`` as cel-go would word the error."""
    result = program.eval(data=data)
    if result.type() == _error_type():
        return None, _go_error(str(result.value()))
    return result.value(), ""


def _go_error(text: str) -> str:
    key = re.search(r'Key not found in map : "?([^"]*)"?', text)
    if key:
        return f"no such key: {key.group(1)}"
    if "No matching overloads" in text:
        return f"no such overload: {text.split(':', 2)[-1].strip()}"
    if "divide by zero" in text:
        return "division by zero"
    if "index out of range" in text.lower() or "out of bounds" in text.lower():
        return "index out of bounds"
    return text.split(": ", 1)[-1]


def _activation(rule: CompiledRule, value: Any, old: Any) -> dict[str, Any]:
    if rule.optional_old_self:
        has_old = old is not _MISSING
        return {"self": value, _OLD: old if has_old else None, _HAS_OLD: has_old}
    data = {"self": value}
    if rule.uses_old_self and old is not _MISSING:
        data["oldSelf"] = old
    return data


def _message(rule: CompiledRule, data: Mapping[str, Any]) -> str:
    if rule.message_program is not None:
        value, error = _run(rule.message_program, data)
        if not error and isinstance(value, str):
            text = value.strip()
            if text and "\n" not in text and len(text) <= _MAX_MESSAGE_BYTES:
                return text
    return rule.message.strip() or f"failed rule: {rule.rule.strip()}"


def _cause(rule: CompiledRule, path: str, type_name: str, detail: str) -> Cause:
    shown = go_value(type_name)
    if rule.reason == "FieldValueForbidden":
        return Cause(rule.reason, path, f"Forbidden: {detail}")
    if rule.reason == "FieldValueRequired":
        return Cause(rule.reason, path, f"Required value: {detail}")
    if rule.reason == "FieldValueDuplicate":
        return Cause(rule.reason, path, f"Duplicate value: {shown}")
    return Cause("FieldValueInvalid", path, f"Invalid value: {shown}: {detail}")


def _node_errors(node: RuleNode, path: str, value: Any, old: Any, ratchet: bool) -> Iterator[Cause]:
    type_name = str(node.schema.get("type") or "")
    for rule in node.rules:
        if rule.uses_old_self and old is _MISSING and not rule.optional_old_self:
            continue
        data = _activation(rule, value, old)
        result, error = _run(rule.program, data)
        if error:
            yield Cause(
                "FieldValueInvalid",
                path or "<nil>",
                f"Invalid value: {go_value(type_name)}: {error} evaluating rule: "
                f"{rule.error_string}",
            )
            continue
        if result is True:
            continue
        if ratchet and not rule.uses_old_self:
            continue
        target = path
        for part in rule.field_path:
            target = _join(target, part)
        target = target or "<nil>"  # the root's errors name no field, as Go prints a nil path
        yield _cause(rule, target, type_name, _message(rule, data))


def _list_keys(schema: Mapping[str, Any], item: Any) -> tuple[Any, ...] | None:
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if not isinstance(item, Mapping) or not keys:
        return None
    return tuple(item.get(k) for k in keys)


def _walk(node: RuleNode, path: str, value: Any, old: Any, ratchet: bool) -> Iterator[Cause]:
    if value is None:
        return
    equal = old is not _MISSING and old == value
    ratchet = equal or (ratchet and old is _MISSING)
    yield from _node_errors(node, path, value, old, ratchet)
    if isinstance(value, Mapping):
        old_map = old if isinstance(old, Mapping) else {}
        atomic = node.schema.get("x-kubernetes-map-type") == "atomic"
        for key, child_value in value.items():
            child = node.properties.get(str(key))
            if child is not None:
                yield from _walk(
                    child, _join(path, str(key)), child_value, old_map.get(key, _MISSING), ratchet
                )
            elif node.additional is not None:
                previous = _MISSING if atomic else old_map.get(key, _MISSING)
                yield from _walk(node.additional, f"{path}[{key}]", child_value, previous, ratchet)
    elif isinstance(value, list) and node.items is not None:
        keyed = node.schema.get("x-kubernetes-list-type") == "map"
        old_items: dict[Any, Any] = {}
        if keyed and isinstance(old, list):
            for item in old:
                key = _list_keys(node.schema, item)
                if key is not None:
                    old_items[key] = item
        for index, item in enumerate(value):
            previous = old_items.get(_list_keys(node.schema, item), _MISSING) if keyed else _MISSING
            yield from _walk(node.items, f"{path}[{index}]", item, previous, ratchet)


def evaluate(node: RuleNode, obj: Any, old: Any = None) -> list[Cause]:
    """The field errors of ``obj`` (and, on update, its ``old`` state) under the rule tree."""
    return list(_walk(node, "", obj, _MISSING if old is None else old, ratchet=False))
