"""CRD validation rules (x-kubernetes-validations) on the embedded server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from etctl.testing import ApiServer
from etctl.testing._apiserver.celrules import compile_rules, evaluate
from tests.testing.apiserver._client import Api

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"

SPEC: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.minReplicas <= self.maxReplicas", "message": "min must be <= max"},
        {
            "rule": "!has(self.size) || self.size.matches('^[0-9]+$')",
            "messageExpression": "'size ' + self.size + ' is not a number'",
            "fieldPath": ".size",
        },
        {
            "rule": "!has(oldSelf.managedBy) || has(self.managedBy)",
            "message": "managedBy may not be removed",
            "reason": "FieldValueForbidden",
        },
        {
            "rule": "oldSelf.hasValue() || !has(self.frozen) || !self.frozen",
            "optionalOldSelf": True,
            "message": "a gadget is not created frozen",
        },
    ],
    "properties": {
        "minReplicas": {"type": "integer", "default": 1},
        "maxReplicas": {"type": "integer", "default": 1},
        "size": {"type": "string"},
        "frozen": {"type": "boolean"},
        "managedBy": {
            "type": "string",
            "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "managedBy is immutable"}
            ],
        },
        "roles": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"replicas": {"type": "integer"}},
                "x-kubernetes-validations": [
                    {"rule": "self.replicas >= 0", "message": "replicas must not be negative"}
                ],
            },
        },
    },
}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {
                                "rule": "self.metadata.name.size() <= 20",
                                "message": "name too long",
                            }
                        ],
                        "properties": {
                            "spec": SPEC,
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


def gadget(name: str = "g", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.fixture
def gadgets(server: ApiServer) -> ApiServer:
    server.load_crds(CRD)
    return server


def causes(reply: Any) -> list[tuple[str, str]]:
    return [(c.get("field", ""), c["message"]) for c in reply.body["details"]["causes"]]


async def test_a_false_rule_is_a_422_with_the_field_and_message(
    api: Api, gadgets: ApiServer
) -> None:
    reply = await api.post(GADGETS, gadget(minReplicas=3, maxReplicas=2))
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == (
        'Gadget.example.com "g" is invalid: spec: Invalid value: "object": min must be <= max'
    )
    assert causes(reply) == [("spec", 'Invalid value: "object": min must be <= max')]
    assert (await api.post(GADGETS, gadget(minReplicas=1, maxReplicas=2))).status == 201


async def test_message_expression_field_path_and_the_root(api: Api, gadgets: ApiServer) -> None:
    reply = await api.post(GADGETS, gadget(size="big"))
    assert causes(reply) == [("spec.size", 'Invalid value: "object": size big is not a number')]
    reply = await api.post(GADGETS, gadget("a-name-longer-than-twenty"))
    assert causes(reply) == [("<nil>", 'Invalid value: "object": name too long')]


async def test_transition_rules_run_only_on_update(api: Api, gadgets: ApiServer) -> None:
    created = await api.create(GADGETS, gadget(managedBy="me"))
    changed = copy.deepcopy(created)
    changed["spec"]["managedBy"] = "you"
    reply = await api.put(f"{GADGETS}/g", changed)
    assert causes(reply) == [("spec.managedBy", 'Invalid value: "string": managedBy is immutable')]
    del changed["spec"]["managedBy"]
    reply = await api.put(f"{GADGETS}/g", changed)
    assert causes(reply) == [("spec", "Forbidden: managedBy may not be removed")]


async def test_optional_old_self_runs_on_create_too(api: Api, gadgets: ApiServer) -> None:
    reply = await api.post(GADGETS, gadget(frozen=True))
    assert causes(reply) == [("spec", 'Invalid value: "object": a gadget is not created frozen')]
    created = await api.create(GADGETS, gadget(frozen=False))
    created["spec"]["frozen"] = True
    assert (await api.put(f"{GADGETS}/g", created)).status == 200


async def test_rules_below_maps_and_evaluation_errors(api: Api, gadgets: ApiServer) -> None:
    reply = await api.post(GADGETS, gadget(roles={"a": {"replicas": -1}, "b": {"replicas": 1}}))
    assert causes(reply) == [
        ("spec.roles[a]", 'Invalid value: "object": replicas must not be negative')
    ]
    reply = await api.post(GADGETS, gadget(roles={"a": {}}))
    assert causes(reply) == [
        (
            "spec.roles[a]",
            'Invalid value: "object": no such key: replicas evaluating rule: replicas must not '
            "be negative",
        )
    ]


async def test_an_unchanged_invalid_value_is_ratcheted(
    api: Api, gadgets: ApiServer, server: ApiServer
) -> None:
    stored = gadget(minReplicas=3, maxReplicas=2)
    server.store.commit(
        ("example.com", "gadgets"),
        "default/g",
        {
            **stored,
            "metadata": {
                "name": "g",
                "namespace": "default",
                "uid": "u",
                "resourceVersion": "1",
                "generation": 1,
            },
        },
    )
    current = (await api.get(f"{GADGETS}/g")).body
    current["metadata"]["labels"] = {"touched": "yes"}
    assert (await api.put(f"{GADGETS}/g", current)).status == 200
    current = (await api.get(f"{GADGETS}/g")).body
    current["spec"]["maxReplicas"] = 1
    assert (await api.put(f"{GADGETS}/g", current)).status == 422


async def test_a_crd_with_a_bad_rule_is_refused(api: Api) -> None:
    bad = copy.deepcopy(CRD)
    schema = bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.minReplicas <=", "reason": "Nope"},
        {"rule": "self.x > 0", "optionalOldSelf": True},
        {"rule": "true", "fieldPath": ".nothing"},
    ]
    reply = await api.post(CRDS, bad)
    assert reply.status == 422
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    found = dict(causes(reply))
    assert found[f"{base}[0].rule"].startswith(
        'Invalid value: "self.minReplicas <=": compilation failed: ERROR: <input>:1:'
    )
    assert found[f"{base}[0].reason"].startswith('Unsupported value: "Nope": supported values: ')
    assert found[f"{base}[1].optionalOldSelf"] == (
        "Forbidden: may not be set if rule does not use oldSelf"
    )
    assert found[f"{base}[2].fieldPath"] == (
        'Invalid value: ".nothing": fieldPath must be a valid path: does not refer to a valid field'
    )


@pytest.mark.parametrize(
    "rule",
    [
        "self.items.isSorted()",
        "self.items.sum() == 6",
        "self.items.min() == 1 && self.items.max() == 3",
        "self.items.indexOf(2) == 1 && self.items.lastIndexOf(9) == -1",
        "self.name.find('[0-9]+') == '42' && self.name.findAll('[a-z]').size() == 3",
        "self.name.lowerAscii() == 'node42' && self.name.split('4').size() == 2",
        "self.?missing.orValue('none') == 'none'",
        "self.name.matches('^[A-Za-z]+[0-9]+$')",
    ],
)
def test_the_kubernetes_library_functions(rule: str) -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": rule}]}
    node, causes = compile_rules(schema, "schema")
    assert causes == []
    assert node is not None
    assert evaluate(node, {"items": [1, 2, 3], "name": "Node42"}) == []


async def test_a_crd_whose_rule_would_cost_too_much_is_refused(api: Api) -> None:
    costly = copy.deepcopy(CRD)
    schema = costly["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["groups"] = {
        "type": "array",
        "items": {"type": "array", "items": {"type": "string"}},
    }
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.groups.all(g, g.all(n, n.size() < 10))"}
    ]
    reply = await api.post(CRDS, costly)
    assert reply.status == 422
    field = (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )
    assert (
        field,
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x "
        "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
        "arrays, maps, and strings are declared)",
    ) in causes(reply)
    groups = schema["properties"]["spec"]["properties"]["groups"]
    groups["maxItems"] = 10
    groups["items"]["maxItems"] = 10
    assert (await api.post(CRDS, costly)).status == 201
