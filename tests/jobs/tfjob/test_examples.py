"""kubeflow's own TFJob manifests (``examples/tfjob/``) apply unchanged and run to success."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.jobs.tfjob import TFJobPlugin
from etctl.runtime import KubeObject, objects
from etctl.testing import eventually
from etctl.testing._kubelet import KubeletConfig, NodeConfig
from tests._cluster import Cluster, cluster
from tests.jobs.tfjob._manifests import tf_config
from tests.runtime._realtime import running
from tests.schema_support import EXAMPLES

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet plays the TFJob containers (image tf:2) and their exits"
)

TF_EXAMPLES = sorted((EXAMPLES / "tfjob").glob("*.yaml"))
# Room for every example at once, GPUs included (the estimator examples ask for them).
NODES = KubeletConfig(nodes=(NodeConfig(name="gpu-0", cpu="64", memory="256Gi", gpus=16),))


def load(path: Path) -> KubeObject:
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return document


def expected_pods(name: str, manifest: KubeObject) -> list[str]:
    return sorted(
        f"{name}-{rtype.lower()}-{i}"
        for rtype, spec in manifest["spec"]["tfReplicaSpecs"].items()
        for i in range(spec.get("replicas", 1))
    )


def decider(name: str, manifest: KubeObject) -> str:
    """The pod whose success finishes the job: the chief (or master), else worker 0."""
    types = {t.lower() for t in manifest["spec"]["tfReplicaSpecs"]}
    for chief in ("chief", "master"):
        if chief in types:
            return f"{name}-{chief}-0"
    return f"{name}-worker-0"


def finishers(name: str, manifest: KubeObject) -> list[str]:
    """The pods that must exit 0 for the job to succeed under its success policy."""
    if manifest["spec"].get("successPolicy") == "AllWorkers" and "chief" not in {
        t.lower() for t in manifest["spec"]["tfReplicaSpecs"]
    }:
        workers = manifest["spec"]["tfReplicaSpecs"]["Worker"].get("replicas", 1)
        return [f"{name}-worker-{i}" for i in range(workers)]
    return [decider(name, manifest)]


def all_running(c: Cluster, namespace: str, names: list[str]) -> bool:
    phases = c.phases(namespace)
    return sorted(phases) == names and set(phases.values()) == {"Running"}


@pytest.mark.parametrize("path", TF_EXAMPLES, ids=lambda p: p.stem)
async def test_example_runs_to_success(tmp_path: Path, path: Path) -> None:
    manifest = load(path)
    namespace = manifest["metadata"].get("namespace", "default")
    async with cluster(tmp_path, TFJobPlugin(), kubelet=NODES) as c:
        if namespace != "default":
            c.namespace(namespace)
        op = c.operator()
        async with running(op):
            body = dict(manifest)
            body["metadata"] = {"namespace": namespace, **manifest["metadata"]}
            created = await c.submit(body)
            name = objects.name(created)
            names = expected_pods(name, manifest)
            await eventually(lambda: all_running(c, namespace, names))
            await eventually(lambda: c.state(name, namespace=namespace) == "Running")
            distributed = len(names) > 1
            for pod in c.pods(namespace).values():
                config = tf_config(pod)
                assert (config is not None) is distributed
                if config is not None:
                    assert (
                        sorted(
                            address.split(".")[0]
                            for addresses in config["cluster"].values()
                            for address in addresses
                        )
                        == names
                    )
            assert sorted(c.services(namespace)) == names
            for pod_name in finishers(name, manifest):
                c.exit(pod_name, 0, namespace=namespace)
            await eventually(lambda: c.state(name, namespace=namespace) == "Succeeded")
        assert op.error is None


@pytest.mark.etctl_kubectl
async def test_kubectl_applies_an_example_unchanged(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    async with cluster(tmp_path, TFJobPlugin(), kubelet=KubeletConfig()) as c:
        kubeconfig = c.server.write_kubeconfig(tmp_path / "kubeconfig")
        op = c.operator()
        async with running(op):
            process = await asyncio.create_subprocess_exec(
                kubectl,
                f"--kubeconfig={kubeconfig}",
                "apply",
                "-f",
                str(EXAMPLES / "tfjob" / "dist-mnist.yaml"),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
            assert process.returncode == 0, err.decode()
            assert b"tfjob.kubeflow.org/dist-mnist-for-e2e-test created" in out
            name = "dist-mnist-for-e2e-test"
            names = expected_pods(name, load(EXAMPLES / "tfjob" / "dist-mnist.yaml"))
            await eventually(lambda: all_running(c, "default", names))
            await eventually(lambda: c.state(name) == "Running")
        assert op.error is None
