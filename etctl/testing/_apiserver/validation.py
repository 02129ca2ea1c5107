"""Object-metadata validation with kube-apiserver's rules and wording.

Names are checked per resource with one of the real server's name rules (:class:`NameRule`), and
the rest of ``metadata`` (namespace, labels, annotations, owner references, finalizers) with the
rules of ``k8s.io/apimachinery/pkg/api/validation``. Every problem is a
:class:`~etctl.testing._apiserver.status.Cause` whose message is the real server's, so a 422 built
from them reads exactly like the real one. Values inside messages are printed as Go prints them
(``%q`` for strings, ``%#v`` for the rest).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from etctl.testing._apiserver.status import Cause

__all__ = [
    "NameRule",
    "forbidden_cause",
    "go_value",
    "invalid_cause",
    "label_value_errors",
    "name_errors",
    "qualified_name_errors",
    "required_cause",
    "unsupported_cause",
    "validate_object_meta",
    "validate_object_meta_update",
]

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"

_LABEL_RE = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN_FMT}$")
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_QNAME_RE = re.compile(f"^{_QNAME_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_ANNOTATIONS_LIMIT = 256 * 1024
_FINALIZER_ORPHAN = "orphan"
_FINALIZER_FOREGROUND = "foregroundDeletion"


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    text = message + " (e.g. "
    for i, example in enumerate(examples):
        if i:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _subdomain(value: str) -> list[str]:
    errs = [_max_len(253)] if len(value) > 253 else []
    if not _SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def _label(value: str) -> list[str]:
    errs = [_max_len(63)] if len(value) > 63 else []
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def _dns1035(value: str) -> list[str]:
    errs = [_max_len(63)] if len(value) > 63 else []
    if not _DNS1035_RE.match(value):
        errs.append(_regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def _path_segment(value: str, prefix: bool) -> list[str]:
    if not prefix:
        for banned in (".", ".."):
            if value == banned:
                return [f"may not be '{banned}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


class NameRule(enum.Enum):
    """How a resource's ``metadata.name`` is validated (the real server's ``ValidateNameFunc``)."""

    SUBDOMAIN = "subdomain"
    """A lowercase RFC 1123 subdomain (most resources)."""
    LABEL = "label"
    """A lowercase RFC 1123 label (namespaces)."""
    DNS1035 = "dns1035"
    """A DNS-1035 label (services)."""
    PATH_SEGMENT = "path-segment"
    """Anything that fits in a URL path segment (RBAC objects)."""


def name_errors(rule: NameRule, name: str, *, prefix: bool = False) -> list[str]:
    """The problems of ``name`` under ``rule`` (``prefix`` for a ``generateName``)."""
    if rule is NameRule.PATH_SEGMENT:
        return _path_segment(name, prefix)
    if prefix and name.endswith("-"):
        name = name[:-1] + "a"  # a generateName may end in a dash: random letters follow
    if rule is NameRule.SUBDOMAIN:
        return _subdomain(name)
    if rule is NameRule.LABEL:
        return _label(name)
    return _dns1035(name)


def qualified_name_errors(value: str) -> list[str]:
    """The problems of a qualified name (label key, annotation key, finalizer)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in _subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _QNAME_RE.match(name):
        errs.append(
            "name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """The problems of a label value."""
    errs = [_max_len(63)] if len(value) > 63 else []
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def go_value(value: Any) -> str:
    """Print a value as a Go field error prints its bad value (``%q`` or ``%#v``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def invalid_cause(field: str, value: Any, detail: str) -> Cause:
    """``Invalid value: <value>: <detail>`` at ``field``."""
    return Cause("FieldValueInvalid", field, f"Invalid value: {go_value(value)}: {detail}")


def required_cause(field: str, detail: str = "") -> Cause:
    """``Required value`` (with ``: <detail>`` when given) at ``field``."""
    return Cause(
        "FieldValueRequired", field, f"Required value: {detail}" if detail else "Required value"
    )


def forbidden_cause(field: str, detail: str) -> Cause:
    """``Forbidden: <detail>`` at ``field``."""
    return Cause("FieldValueForbidden", field, f"Forbidden: {detail}")


def unsupported_cause(field: str, value: Any, supported: Sequence[str]) -> Cause:
    """``Unsupported value: <value>: supported values: "a", "b"`` at ``field``."""
    listed = ", ".join(f'"{v}"' for v in supported)
    return Cause(
        "FieldValueNotSupported",
        field,
        f"Unsupported value: {go_value(value)}: supported values: {listed}",
    )


def _mapping(meta: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = meta.get(key)
    return value if isinstance(value, Mapping) else {}


def _labels(meta: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key, value in _mapping(meta, "labels").items():
        causes.extend(
            invalid_cause("metadata.labels", key, m) for m in qualified_name_errors(str(key))
        )
        if not isinstance(value, str):
            causes.append(invalid_cause("metadata.labels", value, "must be a string"))
            continue
        causes.extend(invalid_cause("metadata.labels", value, m) for m in label_value_errors(value))
    return causes


def _annotations(meta: Mapping[str, Any]) -> list[Cause]:
    annotations = _mapping(meta, "annotations")
    causes: list[Cause] = []
    for key in annotations:
        causes.extend(
            invalid_cause("metadata.annotations", key, m)
            for m in qualified_name_errors(str(key).lower())
        )
    size = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                "metadata.annotations",
                f"Too long: must have at most {_ANNOTATIONS_LIMIT} bytes",
            )
        )
    return causes


def _owner_references(meta: Mapping[str, Any]) -> list[Cause]:
    refs = meta.get("ownerReferences") or []
    causes: list[Cause] = []
    controller = ""
    path = "metadata.ownerReferences"
    for ref in refs if isinstance(refs, list) else []:
        if not isinstance(ref, Mapping):
            continue
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            causes.append(
                invalid_cause(f"{path}.apiVersion", api_version, "version must not be empty")
            )
        for key in ("kind", "name", "uid"):
            value = str(ref.get(key) or "")
            if not value:
                causes.append(invalid_cause(f"{path}.{key}", value, "must not be empty"))
        if api_version == "v1" and ref.get("kind") == "Event":
            causes.append(
                invalid_cause(path, dict(ref), "/v1, Kind=Event is disallowed from being an owner")
            )
        if ref.get("controller") is True:
            current = f"{ref.get('kind')}/{ref.get('name')}"
            if controller:
                causes.append(
                    invalid_cause(
                        path,
                        [dict(r) for r in refs if isinstance(r, Mapping)],
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {current}",
                    )
                )
            else:
                controller = current
    return causes


def _finalizers(meta: Mapping[str, Any]) -> list[Cause]:
    finalizers = meta.get("finalizers") or []
    names = [str(f) for f in finalizers] if isinstance(finalizers, list) else []
    causes = [
        invalid_cause("metadata.finalizers", name, msg)
        for name in names
        for msg in qualified_name_errors(name)
    ]
    if _FINALIZER_ORPHAN in names and _FINALIZER_FOREGROUND in names:
        causes.append(
            invalid_cause(
                "metadata.finalizers",
                names,
                f"finalizer {_FINALIZER_ORPHAN} and {_FINALIZER_FOREGROUND} cannot be both set",
            )
        )
    return causes


def validate_object_meta(
    meta: Mapping[str, Any], *, namespaced: bool, rule: NameRule
) -> list[Cause]:
    """Validate ``metadata`` of an object being created (after name generation).

    Args:
        meta: the object's metadata.
        namespaced: whether the resource lives in namespaces.
        rule: how the resource's names are validated.
    """
    causes: list[Cause] = []
    generate_name = str(meta.get("generateName") or "")
    if generate_name:
        causes.extend(
            invalid_cause("metadata.generateName", generate_name, m)
            for m in name_errors(rule, generate_name, prefix=True)
        )
    name = str(meta.get("name") or "")
    if not name:
        causes.append(required_cause("metadata.name", "name or generateName is required"))
    else:
        causes.extend(invalid_cause("metadata.name", name, m) for m in name_errors(rule, name))
    namespace = str(meta.get("namespace") or "")
    if namespaced:
        if not namespace:
            causes.append(required_cause("metadata.namespace"))
        else:
            causes.extend(
                invalid_cause("metadata.namespace", namespace, m)
                for m in name_errors(NameRule.LABEL, namespace)
            )
    elif namespace:
        causes.append(forbidden_cause("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(
            invalid_cause("metadata.generation", generation, "must be greater than or equal to 0")
        )
    return causes + _common(meta)


def _common(meta: Mapping[str, Any]) -> list[Cause]:
    return _labels(meta) + _annotations(meta) + _owner_references(meta) + _finalizers(meta)


def _immutable(new: Mapping[str, Any], old: Mapping[str, Any], key: str) -> list[Cause]:
    if new.get(key) != old.get(key):
        return [invalid_cause(f"metadata.{key}", new.get(key), "field is immutable")]
    return []


def validate_object_meta_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Validate ``metadata`` of an update against the stored object's metadata."""
    causes: list[Cause] = []
    if old.get("deletionTimestamp"):
        old_finalizers = set(_strings(old.get("finalizers")))
        extra = sorted(set(_strings(new.get("finalizers"))) - old_finalizers)
        if extra:
            causes.append(
                forbidden_cause(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {go_value(extra)}",
                )
            )
    new_generation = new.get("generation") or 0
    old_generation = old.get("generation") or 0
    ints = isinstance(new_generation, int) and isinstance(old_generation, int)
    if ints and new_generation < old_generation:
        causes.append(
            invalid_cause("metadata.generation", new_generation, "must not be decremented")
        )
    for key in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
        causes.extend(_immutable(new, old, key))
    causes.extend(_immutable(new, old, "deletionGracePeriodSeconds"))
    return causes + _common(new)


def _strings(value: Any) -> Sequence[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
