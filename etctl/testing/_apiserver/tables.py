"""``meta.k8s.io/v1`` Tables: what ``kubectl get`` prints, rendered by the server.

``kubectl get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io``; the server answers with
column definitions and one row of cells per object. Custom resources use their CRD version's
``additionalPrinterColumns`` (``Name`` first, and ``Age`` when the CRD declares none); the
built-in kinds have the columns of kube-apiserver's printers (pods: Ready, Status, Restarts, Age
and wide columns; services, nodes, namespaces, config maps, secrets, events...); any other kind
gets ``Name`` and ``Created At``. Ages are computed on the server's clock, as the real printers
compute them on the server's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.jsonpath import JSONPathError, find
from etctl.testing._apiserver.printers import (
    DEFAULT_PRINTER,
    NAME_COLUMN,
    PRINTERS,
    Column,
    Printer,
    human_duration,
)
from etctl.testing._apiserver.registry import PrinterColumn, ResourceInfo
from etctl.testing._apiserver.status import bad_request

__all__ = ["render_table"]


_NAME_DESC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATED_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created."
)


# -- custom resources -----------------------------------------------------------------------------


def _as_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _as_integer(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _as_boolean(value: Any) -> Any:
    return value if isinstance(value, bool) else None


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "string": _as_string,
    "integer": _as_integer,
    "number": _as_number,
    "boolean": _as_boolean,
}


def _as_age(value: Any, now: datetime) -> Any:
    """A ``date`` column shows an age, as the apiextensions table convertor renders it."""
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return "<invalid>"
    return human_duration((now - stamp).total_seconds())


def _cell(column: PrinterColumn, obj: ObjectView, now: datetime) -> Any:
    try:
        found = find(obj, column.json_path)
    except JSONPathError:
        return None
    if not found or found[0] is None:
        return None
    if column.type == "date":
        return _as_age(found[0], now)
    convert = _CONVERTERS.get(column.type)
    return convert(found[0]) if convert else found[0]


def _custom(columns: Sequence[PrinterColumn]) -> Printer:
    defs: tuple[Column, ...] = (
        NAME_COLUMN,
        *((c.name, c.type, c.format, c.priority) for c in columns),
    )

    def row(obj: ObjectView, now: datetime) -> list[Any]:
        name = str((obj.get("metadata") or {}).get("name") or "")
        return [name, *(_cell(c, obj, now) for c in columns)]

    return defs, row


# -- the table ------------------------------------------------------------------------------------


def _row_object(obj: KubeObject, include: str) -> Any:
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def render_table(
    info: ResourceInfo,
    version: str,
    objects: Sequence[KubeObject],
    *,
    now: datetime,
    include_object: str = "",
    headers: bool = True,
    list_meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Table of ``objects`` for ``info`` at ``version``.

    Args:
        info: the resource.
        version: the version the client reads (CRD columns are per version).
        objects: the objects, one row each.
        now: the server clock's time, for ages.
        include_object: ``Metadata`` (default), ``Object`` or ``None``: what each row carries.
        headers: include the column definitions (a watch sends them with its first event only).
        list_meta: ``resourceVersion`` and ``continue`` of the list the rows come from.

    Raises:
        etctl.errors.BadRequest: an unknown ``includeObject`` value.
    """
    include = include_object or "Metadata"
    if include not in ("Metadata", "Object", "None"):
        raise bad_request(f'unrecognized includeObject value: "{include_object}"')
    if info.custom:
        served = info.version(version)
        columns, row = _custom(served.printer_columns if served else ())
    else:
        columns, row = PRINTERS.get(info.key, DEFAULT_PRINTER)
    rows = []
    for obj in objects:
        entry: dict[str, Any] = {"cells": row(obj, now)}
        rendered = _row_object(obj, include)
        if rendered is not None:
            entry["object"] = rendered
        rows.append(entry)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_meta or {}),
    }
    if headers:
        table["columnDefinitions"] = [
            {
                "name": name,
                "type": kind,
                "format": fmt,
                "description": _NAME_DESC
                if name == "Name"
                else (_CREATED_DESC if name in ("Age", "Created At") else name),
                "priority": priority,
            }
            for name, kind, fmt, priority in columns
        ]
    table["rows"] = rows
    return table
