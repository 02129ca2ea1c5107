"""Generates the OpenAPI schemas of the built-in kinds the embedded server publishes.

The schemas come from the typed models of kubernetes_asyncio (generated from Kubernetes' own
OpenAPI): each model's fields, their JSON names, types, descriptions and whether they are
required. The embedded server may not import kubernetes_asyncio (only the runtime's client does),
so the result is committed as ``etctl/testing/_apiserver/builtin_schemas.json``;
``test_openapi`` checks it is what this module generates. Regenerate with::

    python -m tests.testing.apiserver.builtin_schemas
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import kubernetes_asyncio
from kubernetes_asyncio.client import models

TARGET = (
    Path(__file__).resolve().parents[3]
    / "etctl"
    / "testing"
    / "_apiserver"
    / "builtin_schemas.json"
)
CORE = "io.k8s.api.core.v1"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_META_TYPES = frozenset(
    {
        "ObjectMeta",
        "ListMeta",
        "OwnerReference",
        "ManagedFieldsEntry",
        "LabelSelector",
        "LabelSelectorRequirement",
        "Condition",
    }
)
KINDS: tuple[tuple[str, str, str, str, str], ...] = (
    # group, version, kind, model, definition package
    ("", "v1", "Namespace", "V1Namespace", CORE),
    ("", "v1", "Pod", "V1Pod", CORE),
    ("", "v1", "Service", "V1Service", CORE),
    ("", "v1", "Endpoints", "V1Endpoints", CORE),
    ("", "v1", "ConfigMap", "V1ConfigMap", CORE),
    ("", "v1", "Secret", "V1Secret", CORE),
    ("", "v1", "ServiceAccount", "V1ServiceAccount", CORE),
    ("", "v1", "Event", "CoreV1Event", CORE),
    ("", "v1", "Node", "V1Node", CORE),
    ("rbac.authorization.k8s.io", "v1", "Role", "V1Role", "io.k8s.api.rbac.v1"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "V1RoleBinding", "io.k8s.api.rbac.v1"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "V1ClusterRole", "io.k8s.api.rbac.v1"),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "V1ClusterRoleBinding",
        "io.k8s.api.rbac.v1",
    ),
    ("coordination.k8s.io", "v1", "Lease", "V1Lease", "io.k8s.api.coordination.v1"),
    ("events.k8s.io", "v1", "Event", "EventsV1Event", "io.k8s.api.events.v1"),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "V1CustomResourceDefinition",
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
    ),
    ("scheduling.k8s.io", "v1", "PriorityClass", "V1PriorityClass", "io.k8s.api.scheduling.v1"),
    ("apps", "v1", "Deployment", "V1Deployment", "io.k8s.api.apps.v1"),
    ("apps", "v1", "ReplicaSet", "V1ReplicaSet", "io.k8s.api.apps.v1"),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "V2HorizontalPodAutoscaler",
        "io.k8s.api.autoscaling.v2",
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "V1MutatingWebhookConfiguration",
        "io.k8s.api.admissionregistration.v1",
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "V1ValidatingWebhookConfiguration",
        "io.k8s.api.admissionregistration.v1",
    ),
)
# What the models leave out: each kind's own description (from k8s.io/api's doc comments).
KIND_DESCRIPTIONS = {
    "MutatingWebhookConfiguration": "MutatingWebhookConfiguration describes the configuration "
    "of and admission webhook that accept or reject and may change the object.",
    "ValidatingWebhookConfiguration": "ValidatingWebhookConfiguration describes the "
    "configuration of and admission webhook that accept or reject and object without changing "
    "it.",
    "Namespace": "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
    "Pod": "Pod is a collection of containers that can run on a host. This resource is created "
    "by clients and scheduled onto hosts.",
    "Service": "Service is a named abstraction of software service (for example, mysql) "
    "consisting of local port (for example 3306) that the proxy listens on, and the selector "
    "that determines which pods will answer requests sent through the proxy.",
    "Endpoints": "Endpoints is a collection of endpoints that implement the actual service.",
    "ConfigMap": "ConfigMap holds configuration data for pods to consume.",
    "Secret": "Secret holds secret data of a certain type. The total bytes of the values in the "
    "Data field must be less than MaxSecretSize bytes.",
    "ServiceAccount": "ServiceAccount binds together: * a name, understood by users, and perhaps "
    "by peripheral systems, for an identity * a principal that can be authenticated and "
    "authorized * a set of secrets",
    "Event": "Event is a report of an event somewhere in the cluster.",
    "Node": "Node is a worker node in Kubernetes. Each node will have a unique identifier in the "
    "cache (i.e. in etcd).",
    "Role": "Role is a namespaced, logical grouping of PolicyRules that can be referenced as a "
    "unit by a RoleBinding.",
    "RoleBinding": "RoleBinding references a role, but does not contain it.  It can reference a "
    "Role in the same namespace or a ClusterRole in the global namespace.",
    "ClusterRole": "ClusterRole is a cluster level, logical grouping of PolicyRules that can be "
    "referenced as a unit by a RoleBinding or ClusterRoleBinding.",
    "ClusterRoleBinding": "ClusterRoleBinding references a ClusterRole, but not contain it.  It "
    "can reference a ClusterRole in the global namespace, and adds who information via Subject.",
    "Lease": "Lease defines a lease concept.",
    "CustomResourceDefinition": "CustomResourceDefinition represents a resource that should be "
    "exposed on the API server.  Its name MUST be in the format <.spec.name>.<.spec.group>.",
    "PriorityClass": "PriorityClass defines mapping from a priority class name to the priority "
    "integer value. The value can be any valid integer.",
    "Deployment": "Deployment enables declarative updates for Pods and ReplicaSets.",
    "ReplicaSet": "ReplicaSet ensures that a specified number of pod replicas are running at any "
    "given time.",
    "HorizontalPodAutoscaler": "HorizontalPodAutoscaler is the configuration for a horizontal pod "
    "autoscaler, which automatically manages the replica count of any resource implementing the "
    "scale subresource based on the metrics specified.",
}
_PREFIX = re.compile(r"^(?:Core|Events|Rbac|Storage|Discovery|Authentication)?V[12]")
_NOQA = re.compile(r"\s*# noqa: E501\s*$")


def _definition(class_name: str, package: str) -> str:
    short = _PREFIX.sub("", class_name)
    return f"{META if short in _META_TYPES else package}.{short}"


def _description(prop: property) -> str:
    doc = (prop.fget.__doc__ or "") if prop.fget else ""
    lines = [_NOQA.sub("", line).strip() for line in doc.splitlines()]
    body: list[str] = []
    for line in lines[1:]:
        if line.startswith(":return:"):
            break
        if line:
            body.append(line)
    return " ".join(body)


def _required(prop: property) -> bool:
    if prop.fset is None:
        return False
    return "must not be `None`" in inspect.getsource(prop.fset)


class _Generator:
    def __init__(self) -> None:
        self.definitions: dict[str, dict[str, Any]] = {}

    def type_schema(self, text: str, package: str) -> dict[str, Any]:
        if text.startswith("list["):
            return {"type": "array", "items": self.type_schema(text[5:-1], package)}
        if text.startswith("dict("):
            value = text[5:-1].split(",", 1)[1].strip()
            return {"type": "object", "additionalProperties": self.type_schema(value, package)}
        simple = {
            "str": {"type": "string"},
            "int": {"type": "integer", "format": "int64"},
            "float": {"type": "number", "format": "double"},
            "bool": {"type": "boolean"},
            "datetime": {"type": "string", "format": "date-time"},
            "date": {"type": "string", "format": "date"},
            "object": {},
        }
        if text in simple:
            return dict(simple[text])
        return {"allOf": [{"$ref": f"#/components/schemas/{self.model(text, package)}"}]}

    def model(self, class_name: str, package: str) -> str:
        name = _definition(class_name, package)
        if name in self.definitions:
            return name
        cls = getattr(models, class_name)
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        self.definitions[name] = schema
        required = []
        for attr, type_text in cls.openapi_types.items():
            json_name = cls.attribute_map[attr]
            prop = getattr(cls, attr)
            field = self.type_schema(type_text, package)
            description = _description(prop)
            if description:
                field["description"] = description
            schema["properties"][json_name] = field
            if _required(prop):
                required.append(json_name)
        if required:
            schema["required"] = required
        return name


def generate() -> dict[str, Any]:
    """The schemas of every built-in kind the server serves, and which one is each kind's."""
    generator = _Generator()
    kinds = {}
    for group, version, kind, model, package in KINDS:
        name = generator.model(model, package)
        kinds[f"{group}/{version}/{kind}"] = name
        generator.definitions[name]["description"] = KIND_DESCRIPTIONS[kind]
    return {
        "definitions": generator.definitions,
        "kinds": kinds,
        "source": {"kubernetes_asyncio": kubernetes_asyncio.__version__},
    }


def render() -> str:
    """The committed file's text."""
    return json.dumps(generate(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render())
