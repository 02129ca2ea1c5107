"""The OpenAPI v3 documents of the served resources: schemas for ``kubectl explain``, and more.

``kubectl`` reads ``/openapi/v3`` (the group-versions, each with a hashed URL) and then one
document per group-version. This module publishes, per group-version:

* the schema of every kind served there, found by its ``x-kubernetes-group-version-kind``: for a
  built-in kind, its schema from ``builtin_schemas.json`` (Kubernetes' own fields, types,
  descriptions and required fields) with every definition it refers to; for a custom resource,
  its CRD's structural schema at that version, named as the real server names it
  (``org.kubeflow.v1.TFJob``), with ``apiVersion``, ``kind`` and ``metadata`` added;
* the object path's PATCH operation, with the query parameters the server honours (so kubectl
  knows it does field validation) and the patch media types *without* strategic merge: kubectl
  then computes strategic merge patches for built-in kinds from its compiled-in types and JSON
  merge patches for custom resources, as it does against any server whose patch metadata it
  cannot use.

Documents are rebuilt when the registry changes (a CRD registered, updated or removed).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from etctl.testing._apiserver.discovery import SERVER_VERSION
from etctl.testing._apiserver.registry import Registry, ResourceInfo

__all__ = ["OpenAPI", "custom_schema_name"]

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


_REF = "#/components/schemas/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_API_VERSION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources"
)
_KIND = (
    "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds"
)
_METADATA = (
    "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#metadata"
)


@cache
def _builtin() -> Mapping[str, Any]:
    """The committed schemas of the built-in kinds (read once)."""
    text = resources.files(__package__).joinpath("builtin_schemas.json").read_text()
    data: Mapping[str, Any] = json.loads(text)
    return data


def _refs(value: Any) -> list[str]:
    """The definitions a schema refers to, directly."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF):
                found.append(ref[len(_REF) :])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _with_closure(schemas: dict[str, Any], names: list[str]) -> None:
    """Add ``names`` and every built-in definition they refer to, transitively."""
    definitions = _builtin()["definitions"]
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in schemas or name not in definitions:
            continue
        schemas[name] = definitions[name]
        pending.extend(_refs(definitions[name]))


def custom_schema_name(group: str, version: str, kind: str) -> str:
    """What the real server names a custom resource's schema: ``org.kubeflow.v1.TFJob``."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _custom_schema(info: ResourceInfo, version: str) -> dict[str, Any]:
    served = info.version(version)
    schema = copy.deepcopy(dict(served.schema)) if served is not None and served.schema else {}
    schema.setdefault("type", "object")
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"description": _API_VERSION, "type": "string"}
    properties["kind"] = {"description": _KIND, "type": "string"}
    properties["metadata"] = {"allOf": [{"$ref": _REF + _OBJECT_META}], "description": _METADATA}
    return schema


def _digest(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest()[:64].upper()


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


class OpenAPI:
    """OpenAPI v3 documents for one registry, cached per registry revision."""

    def __init__(
        self, registry: Registry, *, git_version: str = SERVER_VERSION["gitVersion"]
    ) -> None:
        self.registry = registry
        self.git_version = git_version
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

    def _document(self, group: str, version: str, infos: list[ResourceInfo]) -> dict[str, Any]:
        paths: dict[str, Any] = {}
        schemas: dict[str, Any] = {}
        prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
        for info in infos:
            gvk_list = [{"group": info.group, "kind": info.kind, "version": version}]
            if info.custom:
                name = custom_schema_name(info.group, version, info.kind)
                schemas[name] = {
                    **_custom_schema(info, version),
                    "x-kubernetes-group-version-kind": gvk_list,
                }
                _with_closure(schemas, [_OBJECT_META])
            else:
                name = _builtin()["kinds"].get(f"{info.group}/{version}/{info.kind}", "")
                if name:
                    _with_closure(schemas, [name])
                    schemas[name] = {**schemas[name], "x-kubernetes-group-version-kind": gvk_list}
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
            "info": {"title": "Kubernetes", "version": self.git_version},
            "paths": paths,
            "components": {"schemas": dict(sorted(schemas.items()))},
        }
