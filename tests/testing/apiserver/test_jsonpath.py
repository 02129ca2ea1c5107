"""The JSONPath subset of printer columns."""

from __future__ import annotations

import pytest

from etctl.testing._apiserver.jsonpath import JSONPathError, find

OBJ = {
    "metadata": {"name": "w", "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {"replicas": 3, "ports": [{"port": 80}, {"port": 443}], "flag": True},
    "status": {
        "conditions": [
            {"type": "Ready", "status": "True", "ok": True},
            {"type": "Synced", "status": "False", "ok": False},
        ]
    },
}


@pytest.mark.parametrize(
    ("path", "found"),
    [
        (".spec.replicas", [3]),
        ("{.metadata.name}", ["w"]),
        (".spec.ports[1].port", [443]),
        (".spec.ports[-1].port", [443]),
        (".spec.ports[*].port", [80, 443]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".status.conditions[?(@.type!='Ready')].type", ["Synced"]),
        ('.status.conditions[?(@.ok=="true")].type', ["Ready"]),
        (".metadata.labels['app.kubernetes.io/name']", ["web"]),
        (".metadata.labels.app\\.kubernetes\\.io/name", ["web"]),
        (".spec.missing.deeper", []),
        (".spec.ports[5].port", []),
        (".spec[*]", [3, [{"port": 80}, {"port": 443}], True]),
        (".status.conditions[-1:].type", ["Synced"]),
        (".spec.ports[0:1].port", [80]),
        (".spec.ports[::-1].port", [443, 80]),
        (".status.missing[-1:].type", []),
    ],
)
def test_paths(path: str, found: list[object]) -> None:
    assert find(OBJ, path) == found


@pytest.mark.parametrize(
    "path", [".spec[", ".spec[x]", "spec", ".a[?(@.b>1)]", ".a[1:2:3:4]", ".a[::0]"]
)
def test_unsupported_syntax(path: str) -> None:
    with pytest.raises(JSONPathError):
        find(OBJ, path)
