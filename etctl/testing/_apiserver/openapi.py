"""A minimal OpenAPI v3 description of the served resources, enough for ``kubectl``.

``kubectl`` reads ``/openapi/v3`` to decide, per group-version-kind, whether the server does
field validation (it looks for the ``fieldValidation`` parameter of the kind's PATCH operation)
and whether a client-side apply may send a strategic merge patch computed from the schema (it
looks for that media type in the PATCH request body). This module publishes, for every served
resource, the object path's PATCH operation with the ``x-kubernetes-group-version-kind``
extension, the query parameters the server honours, and the patch media types *without*
strategic merge: ``kubectl`` then computes strategic merge patches for built-in kinds from its
compiled-in types and JSON merge patches for custom resources, exactly as against a cluster
whose schema it cannot use. Object schemas are not published (``kubectl explain`` has nothing
to show); the CRD's own schema still validates on the server.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from etctl.testing._apiserver.discovery import SERVER_VERSION
from etctl.testing._apiserver.registry import Registry, ResourceInfo

__all__ = ["OpenAPI"]

_PARAMETERS = [
    {"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": True}}
    for name, kind in (
        ("dryRun", "string"),
        ("fieldManager", "string"),
        ("fieldValidation", "string"),
        ("force", "boolean"),
        ("pretty", "string"),
    )
]
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


def _digest(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest()[:64].upper()


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


class OpenAPI:
    """OpenAPI v3 documents for one registry, cached per registry revision."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._docs: dict[str, bytes] = {}
        self._revision = -1

    def _refresh(self) -> None:
        if self._revision == self.registry.revision:
            return
        self._docs.clear()
        for group, versions in self.registry.groups().items():
            for version in versions:
                infos = self.registry.resources_in(group, version)
                doc = self._document(group, version, infos)
                self._docs[_gv_path(group, version)] = json.dumps(
                    doc, separators=(",", ":")
                ).encode()
        self._revision = self.registry.revision

    def root(self) -> bytes:
        """``/openapi/v3``: the group-versions and where their documents are."""
        self._refresh()
        paths = {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={_digest(body)}"}
            for path, body in sorted(self._docs.items())
        }
        return json.dumps({"paths": paths}, separators=(",", ":")).encode()

    def document(self, path: str) -> bytes | None:
        """``/openapi/v3/<api/v1 | apis/<group>/<version>>``, or None if not served."""
        self._refresh()
        return self._docs.get(path.strip("/"))

    @staticmethod
    def _document(group: str, version: str, infos: list[ResourceInfo]) -> dict[str, Any]:
        paths: dict[str, Any] = {}
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        for info in infos:
            base = (
                f"{prefix}/namespaces/{{namespace}}/{info.plural}"
                if info.namespaced
                else f"{prefix}/{info.plural}"
            )
            gvk = {"group": info.group, "version": version, "kind": info.kind}
            content = {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES}
            operation = {
                "operationId": f"patch{info.kind}",
                "parameters": _PARAMETERS,
                "requestBody": {"content": content, "required": True},
                "responses": {"200": {"description": "OK"}, "201": {"description": "Created"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
            }
            paths[f"{base}/{{name}}"] = {"patch": operation}
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
            "paths": paths,
            "components": {"schemas": {}},
        }
