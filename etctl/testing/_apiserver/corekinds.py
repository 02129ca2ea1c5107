"""Strategies of the smaller built-in kinds (namespaces, nodes, secrets, config maps, events...).

The kinds are namespaces, nodes, secrets, config maps, events, RBAC bindings and priority classes.
Each keeps to what the real server does that a client can observe: namespaces start ``Active``
with the ``kubernetes`` finalizer and the ``kubernetes.io/metadata.name`` label; secrets get a
type and have ``stringData`` folded into ``data``; immutable secrets and config maps refuse data
changes; config maps and secrets refuse more data than ``MaxSecretSize`` (1 MiB by default,
counted as the real server counts it: the bytes of the values, a secret's once decoded); role
bindings keep their ``roleRef``; events, secrets, nodes and namespaces accept their extra field
selectors.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.limits import MAX_DATA_BYTES
from etctl.testing._apiserver.status import Cause, bad_request
from etctl.testing._apiserver.strategy import Strategy, WriteContext, mapping
from etctl.testing._apiserver.validation import (
    forbidden_cause,
    go_value,
    required_cause,
    unsupported_cause,
)

__all__ = [
    "ConfigMapStrategy",
    "EventStrategy",
    "NamespaceStrategy",
    "NodeStrategy",
    "PriorityClassStrategy",
    "RoleBindingStrategy",
    "SecretStrategy",
]

_KEY_FMT = "[-._a-zA-Z0-9]+"
_KEY_RE = re.compile(f"^{_KEY_FMT}$")
_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    f"'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '{_KEY_FMT}')"
)
_NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceStrategy(Strategy):
    """Behaviour of ``namespaces``."""

    field_labels = frozenset({"metadata.name", "status.phase"})
    default_field_error = False

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name and phase."""
        name = str(mapping(obj.get("metadata")).get("name") or "")
        return {
            "metadata.name": name,
            "status.phase": str(mapping(obj.get("status")).get("phase") or ""),
        }

    def defaults(self, obj: KubeObject) -> None:
        """The namespace's own name as the ``kubernetes.io/metadata.name`` label."""
        meta = obj["metadata"]
        name = meta.get("name")
        if name:
            labels = meta.get("labels")
            if not isinstance(labels, dict):
                labels = meta["labels"] = {}
            labels[_NAME_LABEL] = name

    def prepare_create(self, obj: KubeObject, ctx: WriteContext) -> None:
        """The ``kubernetes`` finalizer that the namespace controller removes."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = spec["finalizers"] = []
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """A new namespace is Active."""
        obj["status"] = {"phase": "Active"}

    def prepare_update(self, new: KubeObject, old: ObjectView, ctx: WriteContext) -> None:
        """``spec.finalizers`` only change through ``/finalize``."""
        if ctx.subresource != "finalize":
            new["spec"] = dict(mapping(old.get("spec")))


class NodeStrategy(Strategy):
    """Behaviour of ``nodes``: the kubelet registers them with their status."""

    field_labels = frozenset({"metadata.name", "spec.unschedulable"})
    default_field_error = False

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name and schedulability."""
        name = str(mapping(obj.get("metadata")).get("name") or "")
        unschedulable = bool(mapping(obj.get("spec")).get("unschedulable"))
        return {"metadata.name": name, "spec.unschedulable": "true" if unschedulable else "false"}

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """Nodes keep the status they are created with."""


def _validate_keys(obj: ObjectView, *sections: str) -> list[Cause]:
    causes: list[Cause] = []
    for section in sections:
        for key in mapping(obj.get(section)):
            text = str(key)
            problems = []
            if len(text) > 253:
                problems.append("must be no more than 253 characters")
            if not _KEY_RE.match(text):
                problems.append(_KEY_MSG)
            if text == ".":
                problems.append("must not be '.'")
            elif text == "..":
                problems.append("must not be '..'")
            elif text.startswith(".."):
                problems.append("must not start with '..'")
            causes.extend(
                Cause("FieldValueInvalid", section, f"Invalid value: {go_value(text)}: {p}")
                for p in problems
            )
    return causes


def _immutable_data(new: ObjectView, old: ObjectView, sections: tuple[str, ...]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes = [
        forbidden_cause(section, "field is immutable when `immutable` is set")
        for section in sections
        if mapping(new.get(section)) != mapping(old.get(section))
    ]
    if new.get("immutable") is not True:
        causes.append(forbidden_cause("immutable", "field is immutable when `immutable` is set"))
    return causes


def _too_long(field: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", field, f"Too long: must have at most {limit} bytes")


def _decoded_size(value: Any) -> int:
    """The length of a base64 value once decoded (it decodes: defaulting checked that)."""
    text = str(value).rstrip("=")
    return len(text) * 3 // 4


class ConfigMapStrategy(Strategy):
    """Behaviour of ``configmaps``.

    Args:
        max_data_bytes: the most bytes ``data`` and ``binaryData`` values may total.
    """

    def __init__(self, *, max_data_bytes: int = MAX_DATA_BYTES) -> None:
        self.max_data_bytes = max_data_bytes

    def _size(self, obj: ObjectView) -> list[Cause]:
        total = sum(len(str(v).encode()) for v in mapping(obj.get("data")).values())
        total += sum(_decoded_size(v) for v in mapping(obj.get("binaryData")).values())
        # The real server reports this on the empty path, which it prints as "[]".
        return [_too_long("[]", self.max_data_bytes)] if total > self.max_data_bytes else []

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Keys are valid config keys; the values fit in ``max_data_bytes``."""
        return _validate_keys(obj, "data", "binaryData") + self._size(obj)

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As on create, and no data change when immutable."""
        return self.validate_create(new, ctx) + _immutable_data(new, old, ("data", "binaryData"))


_BASE64 = re.compile(r"[A-Za-z0-9+/]*")


def _base64_error(value: Any) -> int | None:
    """Where Go's standard base64 decoder fails on ``value``, or None if it decodes."""
    if not isinstance(value, str):
        return 0
    body = value.rstrip("=")
    valid = _BASE64.match(body)
    end = valid.end() if valid else 0
    if end < len(body):
        return end
    padding = len(value) - len(body)
    rest = len(body) % 4
    if rest == 0 and not padding:
        return None
    if rest == 1 or not padding:
        return len(body) - rest  # an incomplete last quantum
    return None if rest + padding == 4 else len(value)


class SecretStrategy(Strategy):
    """Behaviour of ``secrets``.

    Args:
        max_data_bytes: the most bytes the decoded ``data`` values may total.
    """

    field_labels = frozenset({"metadata.name", "metadata.namespace", "type"})
    default_field_error = False

    def __init__(self, *, max_data_bytes: int = MAX_DATA_BYTES) -> None:
        self.max_data_bytes = max_data_bytes

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name, namespace and type."""
        out = super().fields(obj)
        out["type"] = str(obj.get("type") or "")
        return out

    def defaults(self, obj: KubeObject) -> None:
        """Type ``Opaque``, and ``stringData`` folded into ``data`` (base64).

        Raises:
            etctl.errors.BadRequest: a ``data`` value is not base64, which the real server
                finds while decoding the body (before any validation).
        """
        for value in mapping(obj.get("data")).values():
            offset = _base64_error(value)
            if offset is not None:
                raise bad_request(
                    'Secret in version "v1" cannot be handled as a Secret: illegal base64 data '
                    f"at input byte {offset}"
                )
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, Mapping) and string_data:
            data = obj.get("data")
            if not isinstance(data, dict):
                data = obj["data"] = {}
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Keys are valid config keys; the decoded values fit in ``max_data_bytes``."""
        causes = _validate_keys(obj, "data")
        total = sum(_decoded_size(v) for v in mapping(obj.get("data")).values())
        if total > self.max_data_bytes:
            causes.append(_too_long("data", self.max_data_bytes))
        return causes

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As on create, the type may not change, and no data change when immutable."""
        causes = self.validate_create(new, ctx) + _immutable_data(new, old, ("data",))
        if new.get("type") != old.get("type"):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "type",
                    f"Invalid value: {go_value(new.get('type'))}: field is immutable",
                )
            )
        return causes


class EventStrategy(Strategy):
    """Behaviour of core ``events``: the involved object and the reason are selectable."""

    field_labels = frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "metadata.namespace",
            "metadata.name",
        }
    )
    default_field_error = False

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name, namespace, the involved object's fields, reason, source and type."""
        out = super().fields(obj)
        involved = mapping(obj.get("involvedObject"))
        for key in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        ):
            out[f"involvedObject.{key}"] = str(involved.get(key) or "")
        out["reason"] = str(obj.get("reason") or "")
        out["reportingComponent"] = str(obj.get("reportingComponent") or "")
        out["source"] = str(mapping(obj.get("source")).get("component") or "")
        out["type"] = str(obj.get("type") or "")
        return out

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """The involved object's namespace must be the event's ("default" for cluster scope)."""
        involved = mapping(obj.get("involvedObject"))
        event_ns = str(mapping(obj.get("metadata")).get("namespace") or "")
        involved_ns = str(involved.get("namespace") or "")
        mismatch = event_ns not in ("", "default") if not involved_ns else involved_ns != event_ns
        if mismatch:
            return [
                Cause(
                    "FieldValueInvalid",
                    "involvedObject.namespace",
                    f"Invalid value: {go_value(involved_ns)}: does not match event.namespace",
                )
            ]
        return []


class RoleBindingStrategy(Strategy):
    """Behaviour of ``rolebindings`` and ``clusterrolebindings``: ``roleRef`` is fixed."""

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """A role reference with a kind and a name."""
        ref = mapping(obj.get("roleRef"))
        causes = []
        if not ref.get("name"):
            causes.append(required_cause("roleRef.name"))
        if ref.get("kind") not in ("Role", "ClusterRole"):
            kind = ref.get("kind") or ""
            causes.append(unsupported_cause("roleRef.kind", kind, ("Role", "ClusterRole")))
        return causes

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """As on create, and the role reference cannot change."""
        causes = self.validate_create(new, ctx)
        if mapping(new.get("roleRef")) != mapping(old.get("roleRef")):
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "roleRef",
                    f"Invalid value: {go_value(dict(mapping(new.get('roleRef'))))}: "
                    "cannot change roleRef",
                )
            )
        return causes


class PriorityClassStrategy(Strategy):
    """Behaviour of ``priorityclasses``: a value, and a preemption policy by default."""

    def defaults(self, obj: KubeObject) -> None:
        """Preemption policy ``PreemptLowerPriority``."""
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """The value is required and at most one billion for user classes."""
        value: Any = obj.get("value")
        if not isinstance(value, int):
            return [required_cause("value")]
        if value > 1_000_000_000:
            return [
                forbidden_cause(
                    "value", "maximum allowed value of a user defined priority is 1000000000"
                )
            ]
        return []

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """The value cannot change."""
        if new.get("value") != old.get("value"):
            return [forbidden_cause("value", "may not be changed in an update.")]
        return self.validate_create(new, ctx)
