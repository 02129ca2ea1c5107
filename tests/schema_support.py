"""Test support for schema-driven checks: schema defaulting and example manifests.

``apply_defaults`` mirrors what the API server does with a CRD schema's defaults (missing fields
with a default get a copy of it, recursively, including inside map values and list items), so
tests can compare the server's defaults with the models' defaults. :func:`admitted` and
:func:`refused` put a document to the cluster under test itself, whose admission has the last word.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from etctl._apimachinery.validator import validate_object
from etctl.common import CustomResource, crd_manifest
from etctl.errors import Invalid
from etctl.runtime import Client, KubeObject, Resource
from etctl.testing import ClusterTarget

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CRD_DIR = ROOT / "manifests" / "base" / "crds"


def load_yaml(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict), path
    return loaded


def load_document(path: Path, kind: str) -> dict[str, Any]:
    """The one document of ``kind`` in a YAML file of one or more documents."""
    found = [
        doc
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("kind") == kind
    ]
    assert len(found) == 1, f"{path}: {len(found)} documents of kind {kind}"
    return found[0]


def as_created(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` named as the API server names it (``generateName`` plus 5 characters)."""
    out = copy.deepcopy(document)
    metadata = out.setdefault("metadata", {})
    if not metadata.get("name"):
        metadata["name"] = metadata.get("generateName", "") + "x7k2q"
    return out


def conformance_problems(document: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Where ``document`` breaks a CRD's schema, as the API server's validation words it."""
    return [str(error) for error in validate_object(document, schema)]


def crd_schema(resource: CustomResource) -> dict[str, Any]:
    version = crd_manifest(resource)["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def apply_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` with the schema's defaults filled in, as the API server defaults a CR."""
    value = copy.deepcopy(value)
    _default(value, schema)
    return value


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for name, sub in properties.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for name, item in value.items():
                if name not in properties:
                    _default(item, extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            _default(item, schema["items"])


async def admitted(target: ClusterTarget, res: Resource, document: Mapping[str, Any]) -> KubeObject:
    """``document`` created in the target's namespace: what the cluster stored, defaults applied.

    The cluster's admission is the judge here: its structural schema validation and defaulting,
    on the embedded server or on a real kube-apiserver.
    """
    metadata = {**document.get("metadata", {}), "namespace": target.namespace}
    async with await Client.from_kubeconfig(target.kubeconfig) as client:
        return await client.create(res, {**document, "metadata": metadata})


async def refused(target: ClusterTarget, res: Resource, document: Mapping[str, Any]) -> Invalid:
    """The cluster's 422 for ``document``, created in the target's namespace (it must refuse)."""
    try:
        await admitted(target, res, document)
    except Invalid as refusal:
        return refusal
    msg = f"the cluster admitted an invalid {res.kind}"
    raise AssertionError(msg)
