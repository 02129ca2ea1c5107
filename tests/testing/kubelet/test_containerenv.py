"""Container environments: defaults, envFrom, env with references and valueFrom."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from etctl.runtime import ObjectView
from etctl.testing._kubelet.containerenv import ConfigError, container_env, references

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
    "spec": {"hostname": "host-p"},
    "status": {"podIP": "10.0.0.5"},
}
OBJECTS: dict[tuple[str, str], ObjectView] = {
    ("configmap", "cfg"): {"data": {"MODE": "fast", "LEVEL": "3"}},
    ("secret", "creds"): {"data": {"PASSWORD": base64.b64encode(b"pw").decode()}},
}


def _lookup(kind: str, name: str) -> ObjectView | None:
    return OBJECTS.get((kind, name))


def test_the_environment_a_container_gets() -> None:
    container = {
        "name": "main",
        "envFrom": [
            {"configMapRef": {"name": "cfg"}, "prefix": "CFG_"},
            {"secretRef": {"name": "creds"}},
        ],
        "env": [
            {"name": "A", "value": "one"},
            {"name": "B", "value": "$(A)-two $$(A) $(UNDEFINED)"},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "LEVEL"}}},
            {
                "name": "OPT",
                "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k", "optional": True}},
            },
        ],
    }
    env = container_env(POD, container, _lookup)
    assert env["HOSTNAME"] == "host-p"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["CFG_MODE"] == "fast"
    assert env["PASSWORD"] == "pw"
    assert env["B"] == "one-two $(A) $(UNDEFINED)"
    assert env["IP"] == "10.0.0.5"
    assert env["LEVEL"] == "3"
    assert "OPT" not in env
    assert references(container) == {
        ("configmap", "cfg"),
        ("secret", "creds"),
        ("configmap", "none"),
    }


@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"envFrom": [{"configMapRef": {"name": "gone"}}]}, 'configmap "gone" not found'),
        (
            {
                "env": [
                    {"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope"}}}
                ]
            },
            "couldn't find key nope in Secret ns/creds",
        ),
        (
            {
                "env": [
                    {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}
                ]
            },
            'configmap "gone" not found',
        ),
    ],
)
def test_missing_references_are_config_errors(container: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        container_env(POD, container, _lookup)
