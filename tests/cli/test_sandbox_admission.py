"""``kubectl apply`` in the sandbox: bad jobs refused at the door with the field and the reason.

The sandbox runs the operator's webhooks as the release installs them. Each kind's invalid
manifests are refused by ``kubectl apply``; on a cluster without validation rules in its CRDs
(before 1.25, or rules removed) the webhooks alone refuse them, with the checks the controllers
run. Every file of ``examples/`` applies, and is stored exactly as it would be with no webhook.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
import yaml

from etctl.cli import Sandbox, SandboxOptions, run_sandbox
from etctl.cli._registry import discover
from etctl.jobs.pytorchjob import PYTORCHJOBS
from etctl.runtime import CRDS
from etctl.testing import eventually
from tests._kubectl import kubectl, kubectl_apply
from tests.examples._files import FILES, load, resource_of
from tests.jobs.pytorchjob._manifests import echo
from tests.schema_support import EXAMPLES

pytestmark = [
    pytest.mark.etctl_kubectl,
    pytest.mark.etctl_hooks("the sandbox runs its own embedded server"),
]

QUICK = SandboxOptions(pod_start_delay=0, metrics_bind_address="0")

_CONTAINER = {"name": "main", "image": "busybox:1.36"}


def _template(name: str = "main") -> dict[str, Any]:
    return {"spec": {"containers": [{**_CONTAINER, "name": name}]}}


def mpijob(name: str = "pi", **spec: Any) -> dict[str, Any]:
    specs = {
        "Launcher": {"replicas": 1, "template": _template()},
        "Worker": {"replicas": 2, "template": _template()},
    }
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {"mpiReplicaSpecs": specs, **spec},
    }


def _without_launcher() -> dict[str, Any]:
    job = mpijob()
    del job["spec"]["mpiReplicaSpecs"]["Launcher"]
    return job


def _lower_case_worker() -> dict[str, Any]:
    job = mpijob()
    job["spec"]["mpiReplicaSpecs"]["worker"] = job["spec"]["mpiReplicaSpecs"].pop("Worker")
    return job


def _two_chiefs() -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "chiefs"},
        "spec": {
            "tfReplicaSpecs": {
                "Chief": {"replicas": 1, "template": _template("tensorflow")},
                "Master": {"replicas": 1, "template": _template("tensorflow")},
                "Worker": {"replicas": 1, "template": _template("tensorflow")},
            }
        },
    }


def _trainingjob_min_above_max() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(
        (EXAMPLES / "trainingjob" / "training-job.yaml").read_text()
    )
    job["spec"]["etReplicaSpecs"]["worker"].update(minReplicas=5, maxReplicas=3)
    return job


def _pytorchjob_rdzv_backend() -> dict[str, Any]:
    return echo(rdzvBackend="zookeeper")


def _scalein_naming_no_job() -> dict[str, Any]:
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "ScaleIn",
        "metadata": {"name": "nameless"},
        "spec": {"selector": {"name": ""}, "toDelete": {"count": 1}},
    }


INVALID = {
    "mpijob-without-launcher": (_without_launcher, "spec.mpiReplicaSpecs.Launcher", "missing"),
    "mpijob-name-of-70": (
        lambda: mpijob("p" * 70),
        "metadata.name",
        "DNS-1035 label",
    ),
    "mpijob-min-above-max": (
        lambda: mpijob(elasticPolicy={"minReplicas": 4, "maxReplicas": 2}),
        "spec.elasticPolicy",
        "greater than maxReplicas",
    ),
    "mpijob-lower-case-worker": (
        _lower_case_worker,
        "spec.mpiReplicaSpecs.worker",
        "unknown replica type",
    ),
    "tfjob-chief-and-master": (_two_chiefs, "spec.tfReplicaSpecs", "both Chief and Master"),
    "trainingjob-min-above-max": (
        _trainingjob_min_above_max,
        "spec.etReplicaSpecs.worker",
        "greater than maxReplicas",
    ),
    "pytorchjob-above-max": (
        lambda: echo(minReplicas=1, maxReplicas=1),
        "spec.pytorchReplicaSpecs.Worker.replicas",
        "above elasticPolicy.maxReplicas 1",
    ),
    "pytorchjob-unknown-rdzv-backend": (
        _pytorchjob_rdzv_backend,
        "spec.elasticPolicy.rdzvBackend",
        "zookeeper",
    ),
}
"""The webhook's refusals: what the controller's own checks say, field and reason."""


async def apply(sandbox: Sandbox, document: dict[str, Any]) -> tuple[int, str]:
    return await kubectl_apply(sandbox.kubeconfig, document)


def strip_rules(node: Any) -> Any:
    """A CRD without its ``x-kubernetes-validations``: a cluster that does not run CEL rules."""
    if isinstance(node, dict):
        return {k: strip_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [strip_rules(item) for item in node]
    return node


async def test_without_validation_rules_the_webhooks_refuse_each_bad_job_alone() -> None:
    async def main(sandbox: Sandbox) -> dict[str, tuple[int, str]]:
        for resource in discover().custom_resources():
            crd = sandbox.server.storage.get(CRDS, resource.name)
            sandbox.server.storage.update(CRDS, strip_rules(crd))
        return {case: await apply(sandbox, make()) for case, (make, _, _) in INVALID.items()}

    answers = await run_sandbox(QUICK, main)
    assert answers is not None
    for case, (_, field, reason) in INVALID.items():
        status, text = answers[case]
        assert status != 0, (case, text)
        assert f"{field}: " in text, (case, text)
        assert reason in text, (case, text)
        assert "is invalid" in text, (case, text)


async def test_in_the_sandbox_every_bad_job_and_a_nameless_scalein_are_refused() -> None:
    cases = {**{case: make for case, (make, _, _) in INVALID.items()}}
    cases["scalein-naming-no-job"] = _scalein_naming_no_job

    async def main(sandbox: Sandbox) -> dict[str, tuple[int, str]]:
        answers = {case: await apply(sandbox, make()) for case, make in cases.items()}
        listed = await kubectl(
            sandbox.kubeconfig, "get", "mpijobs,tfjobs,trainingjobs,pytorchjobs,scaleins", "-A"
        )
        answers["listed"] = (0, listed.stdout + listed.stderr)
        return answers

    answers = await run_sandbox(QUICK, main)
    assert answers is not None
    for case in cases:
        status, text = answers[case]
        assert status != 0, (case, text)
        assert "is invalid" in text, (case, text)
    assert "spec.selector.name" in answers["scalein-naming-no-job"][1]
    assert answers["listed"][1] == "No resources found\n"  # nothing of them was stored


def _scaleout(job: str) -> dict[str, Any]:
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "ScaleOut",
        "metadata": {"name": f"{job}-more"},
        "spec": {"selector": {"name": job, "kind": "PyTorchJob"}, "toAdd": {"count": 1}},
    }


async def test_a_scaler_naming_a_static_pytorchjob_is_refused_and_an_elastic_ones_admitted() -> (
    None
):
    static: dict[str, Any] = yaml.safe_load((EXAMPLES / "pytorchjob" / "simple.yaml").read_text())
    elastic = echo(maxReplicas=3)
    jobs = [static["metadata"]["name"], elastic["metadata"]["name"]]

    def seen(sandbox: Sandbox, name: str) -> bool:
        # The operator wrote the job's status: its cache, which the webhook reads, holds the job.
        job = sandbox.server.storage.get(PYTORCHJOBS, name, namespace="default")
        return bool((job or {}).get("status", {}).get("conditions"))

    async def main(sandbox: Sandbox) -> list[tuple[int, str]]:
        for job in (static, elastic):
            await apply(sandbox, job)
        await eventually(lambda: all(seen(sandbox, name) for name in jobs))
        return [await apply(sandbox, _scaleout(name)) for name in jobs]

    answers = await run_sandbox(QUICK, main)
    assert answers is not None
    (refused, refusal), (admitted, text) = answers
    assert refused != 0
    assert "is invalid" in refusal
    assert f"spec.selector.name: PyTorchJob {jobs[0]} is not elastic" in refusal
    assert "no spec.elasticPolicy" in refusal
    assert admitted == 0, text


def _examples() -> list[dict[str, Any]]:
    """Every document of the operator's examples (not the runtime examples' own kinds)."""
    return [doc for path in FILES if path.parent.name != "operator" for doc in load(path)]


def _content(obj: dict[str, Any]) -> Any:
    return copy.deepcopy({key: obj.get(key) for key in ("spec", "data")})


async def test_every_example_applies_and_is_stored_as_without_webhooks() -> None:
    documents = _examples()

    async def main(sandbox: Sandbox) -> list[tuple[int, str, Any]]:
        stored = []
        for doc in documents:
            status, text = await apply(sandbox, doc)
            name = doc["metadata"]["name"]
            obj = sandbox.server.storage.get(resource_of(doc), name, namespace="default")
            stored.append((status, text, _content(obj)))
        return stored

    admitted = await run_sandbox(QUICK, main)
    plain = await run_sandbox(dataclasses.replace(QUICK, webhooks=False), main)
    assert admitted is not None
    assert plain is not None
    for doc, (status, text, content), (_, _, expected) in zip(
        documents, admitted, plain, strict=True
    ):
        assert status == 0, text
        assert "created" in text
        assert content == expected, doc["metadata"]["name"]
