"""Cost of the API machinery on the embedded API server's write and read paths.

Run: ``.venv/bin/python bench/apimachinery.py [--repeat N]``

The CEL figures evaluate the rules of the generated MPIJob CRD (``manifests/``) on the pi example
with the library the server uses (cel-expr-python).

The budget is the server's: 1,000 creates/s on one core leaves 1,000 us per write for decoding,
storage, watch fan-out and this machinery together, so each figure is compared with that budget.
Figures are the best of a few rounds on the real clock.
"""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import _report
from etctl.runtime import FieldSelector, LabelSelector
from etctl.testing._apiserver.apply import server_side_apply
from etctl.testing._apiserver.celrules import compile_rules, evaluate
from etctl.testing._apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from etctl.testing._apiserver.schema import apply_defaults, prune, validate

_BUDGET = "budget: 1,000 us per write (1,000 creates/s)"
_ROUNDS = 5

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["replicaSpecs"],
            "properties": {
                "minReplicas": {"type": "integer", "minimum": 1, "default": 1},
                "maxReplicas": {"type": "integer", "minimum": 1},
                "cleanPodPolicy": {
                    "type": "string",
                    "enum": ["All", "Running", "None"],
                    "default": "Running",
                },
                "replicaSpecs": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {
                            "replicas": {"type": "integer", "minimum": 0},
                            "restartPolicy": {
                                "type": "string",
                                "enum": ["Always", "OnFailure", "Never", "ExitCode"],
                            },
                            "template": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    },
                },
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

_CONTAINER = {
    "name": "worker",
    "image": "trainer:1",
    "args": ["--epochs", "10"],
    "env": [{"name": f"E{i}", "value": "v"} for i in range(10)],
}
_JOB: dict[str, Any] = {
    "apiVersion": "kai.example.com/v1",
    "kind": "TrainingJob",
    "metadata": {"name": "job", "namespace": "default", "labels": {"app": "train"}},
    "spec": {
        "maxReplicas": 4,
        "replicaSpecs": {
            "Worker": {
                "replicas": 2,
                "restartPolicy": "Never",
                "template": {"spec": {"containers": [_CONTAINER]}},
            },
            "Launcher": {"replicas": 1, "template": {"spec": {"containers": [_CONTAINER]}}},
        },
    },
}
_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "labels": {"app": "train"}},
    "spec": {"containers": [{**_CONTAINER, "name": f"c{i}"} for i in range(4)]},
    "status": {"phase": "Pending"},
}


def _per_call_us(fn: Callable[[], object], calls: int) -> float:
    best = float("inf")
    for _ in range(_ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def _cr_admission() -> None:
    obj = apply_defaults(prune(_JOB, _SCHEMA), _SCHEMA)
    validate(obj, _SCHEMA)


_ROOT = Path(__file__).resolve().parents[1]


def _mpijob_rules() -> tuple[Callable[[], object], Callable[[], object]]:
    """The CEL rules of the generated MPIJob CRD (v2beta1) on the pi example: create, update."""
    crd = yaml.safe_load((_ROOT / "manifests/base/crds/kubeflow.org_mpijobs.yaml").read_text())
    (schema,) = [
        v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == "v2beta1"
    ]
    node, causes = compile_rules(schema, "schema")
    assert node is not None, causes
    job = yaml.safe_load((_ROOT / "examples/mpijob/pi.yaml").read_text())
    job["spec"].setdefault("runPolicy", {})["managedBy"] = "kubeflow.org/mpi-operator"
    old = copy.deepcopy(job)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 3
    return (lambda: evaluate(node, job)), (lambda: evaluate(node, job, old))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2000, help="calls per round")
    calls = parser.parse_args().repeat
    _report.header("API machinery of the embedded API server")
    labels = LabelSelector.parse("app=train,tier in (a,b),!legacy")
    fields = FieldSelector.parse("metadata.name=p,status.phase!=Failed")
    live = server_side_apply(None, _POD, manager="m", force=False, kind="Pod", now="t")
    rules_create, rules_update = _mpijob_rules()
    cases: list[tuple[str, Callable[[], object]]] = [
        ("CR prune + defaults + validate", _cr_admission),
        ("MPIJob CRD CEL rules on create", rules_create),
        ("MPIJob CRD CEL rules on update (oldSelf)", rules_update),
        ("merge patch (status.phase)", lambda: apply_merge_patch(_POD, {"status": {"x": 1}})),
        (
            "JSON patch (replace one field)",
            lambda: apply_json_patch(
                _POD, [{"op": "replace", "path": "/status/phase", "value": 1}]
            ),
        ),
        (
            "strategic merge patch (one container)",
            lambda: apply_strategic_merge_patch(
                _POD, {"spec": {"containers": [{"name": "c1", "image": "x"}]}}, "Pod"
            ),
        ),
        (
            "server-side apply (re-apply a pod)",
            lambda: server_side_apply(live, _POD, manager="m", force=False, kind="Pod", now="t"),
        ),
        ("label selector parse (cached)", lambda: LabelSelector.parse("app=train,!legacy")),
        ("label selector match", lambda: labels.matches(_POD["metadata"]["labels"])),
        ("field selector match", lambda: fields.matches({"metadata.name": "p"})),
    ]
    for name, fn in cases:
        _report.figure(name, _per_call_us(fn, calls), "us/op", compare=_BUDGET)


if __name__ == "__main__":
    main()
