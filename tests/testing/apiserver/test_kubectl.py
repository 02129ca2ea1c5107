"""kubectl works against the embedded server: get, apply (client- and server-side), wait, scale,
delete. Skipped where no kubectl is installed."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.runtime import PODS
from etctl.testing import ApiServer
from tests._kubectl import kubectl as run_kubectl
from tests.testing.apiserver._client import WIDGET_CRD

pytestmark = pytest.mark.etctl_kubectl

CRDS_DIR = Path(__file__).resolve().parents[3] / "manifests" / "base" / "crds"

WIDGET: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w1", "namespace": "default"},
    "spec": {"color": "red"},
}
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
}


class Kubectl:
    """Runs kubectl against one server with a private cache directory."""

    def __init__(self, server: ApiServer, tmp_path: Path) -> None:
        self.kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        self.cache = tmp_path / "cache"
        self.tmp = tmp_path

    async def __call__(
        self, *args: str, ok: bool = True, stdin: bytes | None = None
    ) -> tuple[int, str]:
        done = await run_kubectl(
            self.kubeconfig, f"--cache-dir={self.cache}", *args, stdin=stdin, timeout=20
        )
        text = done.stdout + done.stderr
        if ok:
            assert done.returncode == 0, text
        return done.returncode, text

    def manifest(self, name: str, *docs: Mapping[str, Any]) -> str:
        path = self.tmp / name
        path.write_text(yaml.safe_dump_all(docs))
        return str(path)


@pytest.fixture
def kubectl(server: ApiServer, tmp_path: Path) -> Kubectl:
    return Kubectl(server, tmp_path)


async def test_get_prints_the_server_side_table(kubectl: Kubectl) -> None:
    _, out = await kubectl("get", "namespaces")
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "AGE"]
    assert any(line.split()[:2] == ["default", "Active"] for line in lines[1:])


async def test_apply_create_label_and_delete_a_pod(kubectl: Kubectl, server: ApiServer) -> None:
    path = kubectl.manifest("pod.yaml", POD)
    _, out = await kubectl("apply", "-f", path)
    assert "pod/web created" in out
    _, out = await kubectl("get", "pods", "-o", "wide")
    header = out.splitlines()[0].split()
    assert header[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["web", "0/1", "Pending"]
    _, out = await kubectl("label", "pod", "web", "tier=front")
    assert "labeled" in out
    _, out = await kubectl("get", "pods", "-l", "tier=front", "-o", "name")
    assert out.strip() == "pod/web"
    _, out = await kubectl("apply", "-f", path)
    assert "unchanged" in out or "configured" in out
    await kubectl("delete", "pod", "web")
    code, _ = await kubectl("get", "pod", "web", ok=False)
    assert code != 0


async def test_crd_flow_with_printer_columns_scale_wait_and_server_side_apply(
    kubectl: Kubectl, server: ApiServer
) -> None:
    await kubectl("apply", "-f", kubectl.manifest("crd.yaml", WIDGET_CRD))
    await kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=10s")
    _, out = await kubectl("apply", "-f", kubectl.manifest("w.yaml", WIDGET))
    assert "widget.example.com/w1 created" in out
    _, out = await kubectl("get", "widgets")
    assert out.splitlines()[0].split() == ["NAME", "REPLICAS", "PHASE", "AGE"]
    assert out.splitlines()[1].split()[:2] == ["w1", "1"]
    _, out = await kubectl("scale", "widget", "w1", "--replicas=3")
    assert "scaled" in out
    await kubectl("wait", "--for=jsonpath={.spec.replicas}=3", "widget/w1", "--timeout=10s")
    stored = server.store.get(("example.com", "widgets"), "default/w1")
    assert stored is not None
    assert stored["spec"]["replicas"] == 3
    blue = {**WIDGET, "spec": {"color": "blue"}}
    _, out = await kubectl("apply", "--server-side", "-f", kubectl.manifest("w2.yaml", blue))
    assert "serverside-applied" in out
    stored = server.store.get(("example.com", "widgets"), "default/w1")
    assert stored is not None
    assert stored["spec"]["color"] == "blue"
    await kubectl("delete", "widget", "w1")
    _, out = await kubectl("get", "widgets", "-o", "name")
    assert out.strip() == ""
    await kubectl("delete", "crd", "widgets.example.com")
    assert server.registry.get("example.com", "widgets") is None


async def test_wait_for_delete_follows_a_finalized_deletion(
    kubectl: Kubectl, server: ApiServer
) -> None:
    held = {**POD, "metadata": {**POD["metadata"], "finalizers": ["example.com/hold"]}}
    await kubectl("apply", "-f", kubectl.manifest("pod.yaml", held))
    await kubectl("delete", "pod", "web", "--wait=false")
    waiting = asyncio.create_task(
        kubectl("wait", "--for=delete", "pod/web", "--timeout=15s"), name="kubectl-wait"
    )
    async with asyncio.timeout(10):
        while not server.requests.find(verb="watch", resource="pods"):
            await asyncio.sleep(0.01)
    stored = server.storage.get(PODS, "web", namespace="default")
    released = {**stored, "metadata": {**stored["metadata"], "finalizers": []}}
    server.storage.update(PODS, released, namespace="default")
    _, out = await waiting
    assert "condition met" in out


async def test_strict_validation_reports_unknown_fields(
    kubectl: Kubectl, server: ApiServer
) -> None:
    server.load_crds(WIDGET_CRD)
    bogus = {**WIDGET, "spec": {"color": "red", "bogus": 1}}
    code, out = await kubectl("apply", "-f", kubectl.manifest("bad.yaml", bogus), ok=False)
    assert code != 0
    assert 'strict decoding error: unknown field "spec.bogus"' in out


async def test_apply_of_an_invalid_pod_prints_the_servers_causes(kubectl: Kubectl) -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 99999}]
    code, out = await kubectl("apply", "-f", kubectl.manifest("bad.yaml", pod), ok=False)
    assert code == 1
    assert (
        'The Pod "web" is invalid: \n'
        "* spec.containers[0].ports[0].containerPort: Invalid value: 99999: must be between 1 and "
        "65535, inclusive\n"
        '* spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
        "to cpu limit of 1"
    ) in out
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "lots"}}
    pod["spec"]["containers"][0].pop("ports")
    code, out = await kubectl("apply", "-f", kubectl.manifest("bad.yaml", pod), ok=False)
    assert code == 1
    assert 'Pod in version "v1" cannot be handled as a Pod: quantities must match' in out


async def test_explain_shows_a_crds_schema_and_a_built_in_kinds(
    kubectl: Kubectl, server: ApiServer
) -> None:
    server.load_crds(CRDS_DIR / "kai.alibabacloud.com_trainingjobs.yaml")
    _, out = await kubectl("explain", "trainingjob.spec")
    assert "GROUP:      kai.alibabacloud.com" in out
    assert "KIND:       TrainingJob" in out
    assert "FIELD: spec <Object>" in out
    assert "slotsPerWorker\t<integer>" in out
    assert "Slots per worker in the hostfile" in out
    _, out = await kubectl("explain", "trainingjob.spec.etReplicaSpecs.worker.minReplicas")
    assert "FIELD: minReplicas <integer>" in out
    _, out = await kubectl("explain", "trainingjob.metadata.labels")
    assert "Map of string keys and values" in out
    _, out = await kubectl("explain", "pod.spec.containers.resources")
    assert "KIND:       Pod" in out
    assert "limits\t<map[string]string>" in out
    assert "Limits describes the maximum amount of compute resources allowed." in out
    _, out = await kubectl("explain", "pods.spec.restartPolicy")
    assert "FIELD: restartPolicy <string>" in out


async def test_an_hpa_applies_and_lists_as_on_a_cluster(
    kubectl: Kubectl, server: ApiServer
) -> None:
    # autoscaling/v2 only: kubectl autoscale posts autoscaling/v1, which this server does not serve.
    server.load_crds(WIDGET_CRD)
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1"},
            "minReplicas": 2,
            "maxReplicas": 5,
        },
    }
    _, out = await kubectl("apply", "-f", kubectl.manifest("hpa.yaml", hpa))
    assert "horizontalpodautoscaler.autoscaling/w1 created" in out
    stored = server.store.get(("autoscaling", "horizontalpodautoscalers"), "default/w1")
    assert stored is not None
    assert stored["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    _, out = await kubectl("get", "hpa")
    header, row = out.splitlines()[:2]
    assert header.split() == [
        "NAME",
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ]
    assert row.split()[:7] == ["w1", "Widget/w1", "cpu:", "<unknown>/80%", "2", "5", "0"]
