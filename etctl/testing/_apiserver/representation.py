"""What the server answers with: JSON bodies, error Status bodies, and the representation asked for.

``Accept`` decides the representation of reads: plain objects, ``meta.k8s.io`` Tables
(``as=Table``, what ``kubectl get`` asks for) or PartialObjectMetadata (metadata-only clients);
only JSON is produced (a client that accepts nothing else gets 406). Warnings of a write travel as
``Warning: 299 - "<text>"`` headers, as the real server sends them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from etctl.errors import ApiError
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.store import dumps

__all__ = [
    "JSON",
    "Representation",
    "error_response",
    "json_response",
    "list_items",
    "partial",
    "query_values",
    "warning_headers",
]

JSON = "application/json"
_TYPE_META = ("apiVersion", "kind")
_AS = frozenset({"Table", "PartialObjectMetadata", "PartialObjectMetadataList"})


@dataclass(frozen=True, slots=True)
class Representation:
    """What the client accepts back: ``object``, ``Table`` or ``PartialObjectMetadata``."""

    kind: str = "object"
    api_version: str = ""

    @classmethod
    def from_accept(cls, accept: str) -> Representation:
        """Pick the first representation in ``Accept`` the server can produce.

        Raises:
            etctl.errors.ApiError: 406 when only protobuf or unknown types are acceptable.
        """
        if not accept:
            return cls()
        for entry in accept.split(","):
            fields = [f.strip() for f in entry.split(";")]
            media = fields[0]
            params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
            if media not in (JSON, "application/*", "*/*", "application/yaml"):
                continue
            wanted = params.get("as")
            if not wanted:
                return cls()
            meta_group = params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", "v1beta1")
            if meta_group and wanted in _AS:
                kind = "Table" if wanted == "Table" else "PartialObjectMetadata"
                return cls(kind, f"meta.k8s.io/{params['v']}")
        raise st.not_acceptable(
            "only the following media types are accepted: application/json, application/yaml"
        )


def json_response(
    body: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON response (``body`` already encoded, or encoded here)."""
    data = body if isinstance(body, bytes) else dumps(body)
    return web.Response(body=data, status=status, content_type=JSON, headers=headers)


def error_response(error: ApiError) -> web.Response:
    """The Status response of an error (with ``Retry-After`` when it has one).

    A 404 no API handler would answer is Go's plain ``404 page not found`` instead.
    """
    if getattr(error, "plain_text", False):
        return web.Response(
            status=error.status,
            text=f"{error.message}\n",
            headers={
                "Content-Type": "text/plain; charset=utf-8",
                "X-Content-Type-Options": "nosniff",
            },
        )
    headers = {}
    if error.retry_after:
        headers["Retry-After"] = str(int(error.retry_after))
    return json_response(st.status_body(error), error.status, headers)


def _warnings(warnings: list[str]) -> list[tuple[str, str]]:
    return [
        ("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"') for w in warnings
    ]


def warning_headers(warnings: list[str]) -> Mapping[str, str] | None:
    """``Warning`` headers for a write's warnings, or None when there are none."""
    if not warnings:
        return None
    return CIMultiDict(_warnings(warnings))


def partial(obj: KubeObject, api_version: str) -> dict[str, Any]:
    """The PartialObjectMetadata of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata") or {},
    }


def list_items(items: list[KubeObject], *, custom: bool) -> list[KubeObject]:
    """Items as a list body carries them: built-in kinds' items have no ``apiVersion``/``kind``.

    The real server encodes built-in lists from typed objects, whose items omit their type
    meta; custom resource lists are unstructured and keep it.
    """
    if custom:
        return items
    return [{k: v for k, v in item.items() if k not in _TYPE_META} for item in items]


def query_values(query: Mapping[str, str], name: str) -> list[str]:
    """Every value of a repeated query parameter."""
    getall = getattr(query, "getall", None)
    if getall is not None:
        return list(getall(name, []))
    return [query[name]] if name in query else []
