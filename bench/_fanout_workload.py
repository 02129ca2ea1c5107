"""The fanout workload, shared by the benchmark and its two operators (no etctl, no kopf here).

A ``Fanout`` parent needs :data:`CHILDREN` ConfigMaps it controls, named ``<parent>-<index>``,
and a status saying so (``configMaps`` and ``observedGeneration``): 5 writes per parent.
"""

from __future__ import annotations

from typing import Any

GROUP = "bench.etctl.dev"
VERSION = "v1"
PLURAL = "fanouts"
KIND = "Fanout"
NAMESPACE = "fanout"
CHILDREN = 4
WORKERS = 4
"""Concurrent reconciles of the etctl operator (client-go's usual 4 workers)."""

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "fanout", "kind": KIND, "listKind": "FanoutList"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def parent(index: int) -> dict[str, Any]:
    """Parent number ``index``, as the benchmark creates it."""
    name = f"parent-{index:05d}"
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {"data": {"owner": name, "size": str(CHILDREN)}},
    }


def child_name(parent_name: str, index: int) -> str:
    """The deterministic name of a parent's ConfigMap number ``index``."""
    return f"{parent_name}-{index}"


def child(owner: dict[str, Any], index: int) -> dict[str, Any]:
    """ConfigMap ``index`` of ``owner`` (a parent with its uid), controlled by it."""
    meta = owner["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": child_name(meta["name"], index),
            "namespace": meta["namespace"],
            "labels": {"fanout": meta["name"]},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": KIND,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": {"index": str(index), **(owner.get("spec") or {}).get("data", {})},
    }
