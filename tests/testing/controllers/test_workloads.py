"""Deployments and ReplicaSets: validated, rolled out into pods the simulated kubelet runs."""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from etctl.errors import Invalid
from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from etctl.testing._controllers.workloads import DEPLOYMENTS, template_hash
from etctl.testing._kubelet import Kubelet, KubeletConfig
from tests.testing.apiserver._client import Api
from tests.testing.apiserver.test_kubectl import Kubectl
from tests.testing.kubelet._helpers import condition, wait_for, wait_gone

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
RS = "/apis/apps/v1/namespaces/default/replicasets"
PODS = "/api/v1/namespaces/default/pods"


def deployment(name: str = "web", replicas: int = 2, image: str = "nginx:1.25") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


@pytest.fixture
async def kubelet(server: ApiServer, clock: FakeClock) -> Kubelet:
    running = Kubelet(server, KubeletConfig.uniform(1))
    running.start()
    return running


async def _pods(api: Api) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await api.get(PODS)).body["items"]
    return items


def _available(replicas: int) -> Any:
    def check(obj: dict[str, Any]) -> bool:
        status = obj.get("status") or {}
        return (
            status.get("availableReplicas") == replicas
            and status.get("updatedReplicas") == replicas
            and condition(obj, "Available").get("status") == "True"
            and condition(obj, "Progressing").get("reason") == "NewReplicaSetAvailable"
        )

    return check


async def test_a_deployment_runs_its_pods_through_a_replicaset(
    api: Api, server: ApiServer, kubelet: Kubelet
) -> None:
    created = await api.create(DEPLOY, deployment())
    assert created["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert created["spec"]["revisionHistoryLimit"] == 10
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    done = await wait_for(api, DEPLOY, "web", _available(2))
    assert done["status"]["observedGeneration"] == 1
    assert condition(done, "Available")["message"] == "Deployment has minimum availability."
    pod_hash = template_hash(created["spec"]["template"])
    rs = (await api.get(f"{RS}/web-{pod_hash}")).body
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["status"]["readyReplicas"] == 2
    pods = await _pods(api)
    assert len(pods) == 2
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{pod_hash}-")
        assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert pod["metadata"]["ownerReferences"][0]["name"] == f"web-{pod_hash}"
        assert pod["status"]["phase"] == "Running"


async def test_scaling_and_a_new_template_roll_the_pods(
    api: Api, server: ApiServer, kubelet: Kubelet
) -> None:
    await api.create(DEPLOY, deployment(replicas=1))
    first = await wait_for(api, DEPLOY, "web", _available(1))
    scaled = copy.deepcopy(first)
    scaled["spec"]["replicas"] = 3
    await api.put(f"{DEPLOY}/web", scaled)
    current = await wait_for(api, DEPLOY, "web", _available(3))
    assert len(await _pods(api)) == 3
    changed = copy.deepcopy(current)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    await api.put(f"{DEPLOY}/web", changed)
    rolled = await wait_for(api, DEPLOY, "web", _available(3))
    assert rolled["status"]["observedGeneration"] == 3
    new_hash = template_hash(rolled["spec"]["template"])
    sets = {rs["metadata"]["name"]: rs for rs in (await api.get(RS)).body["items"]}
    assert (
        sets[f"web-{new_hash}"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        == "2"
    )
    old = [rs for name, rs in sets.items() if name != f"web-{new_hash}"]
    assert [rs["spec"]["replicas"] for rs in old] == [0]
    for pod in await _pods(api):
        if not pod["metadata"].get("deletionTimestamp"):
            assert pod["spec"]["containers"][0]["image"] == "nginx:1.27"


async def test_deleting_a_deployment_deletes_its_replicasets_and_pods(
    api: Api, server: ApiServer, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(DEPLOY, deployment())
    await wait_for(api, DEPLOY, "web", _available(2))
    await api.delete(f"{DEPLOY}/web")
    listed = (await api.get(RS)).body["items"]
    for rs in listed:
        await wait_gone(api, RS, rs["metadata"]["name"])
    await clock.advance(60)  # the pods' grace period
    for pod in await _pods(api):
        await wait_gone(api, PODS, pod["metadata"]["name"])


VALIDATION_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        "a selector that does not match the template",
        {"selector": {"matchLabels": {"app": "other"}}},
        [
            (
                "spec.template.metadata.labels",
                'Invalid value: map[string]string{"app":"web"}: `selector` does not match '
                "template `labels`",
            )
        ],
    ),
    (
        "no selector",
        {"selector": None},
        [("spec.selector", "Required value")],
    ),
    (
        "a template that does not always restart",
        {"template": {"restartPolicy": "Never"}},
        [
            (
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            )
        ],
    ),
    (
        "negative replicas",
        {"replicas": -1},
        [("spec.replicas", "Invalid value: -1: must be greater than or equal to 0")],
    ),
    (
        "a pod spec problem, under the template's path",
        {"template": {"port": 70000}},
        [
            (
                "spec.template.spec.containers[0].ports[0].containerPort",
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("change", "causes"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES]
)
async def test_an_invalid_deployment_is_refused(
    server: ApiServer, change: dict[str, Any], causes: list[tuple[str, str]]
) -> None:
    body = deployment()
    spec = body["spec"]
    if "selector" in change:
        if change["selector"] is None:
            del spec["selector"]
        else:
            spec["selector"] = change["selector"]
    if "replicas" in change:
        spec["replicas"] = change["replicas"]
    template = change.get("template") or {}
    if "restartPolicy" in template:
        spec["template"]["spec"]["restartPolicy"] = template["restartPolicy"]
    if "port" in template:
        spec["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": template["port"]}]
    with pytest.raises(Invalid) as raised:
        server.storage.create(DEPLOYMENTS, body, namespace="default")
    assert [(c["field"], c["message"]) for c in raised.value.causes] == causes
    assert raised.value.message.startswith('Deployment.apps "web" is invalid: ')


async def test_the_selector_of_a_deployment_never_changes(server: ApiServer) -> None:
    created = server.storage.create(DEPLOYMENTS, deployment(), namespace="default")
    changed = copy.deepcopy(created)
    changed["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    with pytest.raises(Invalid) as raised:
        server.storage.update(DEPLOYMENTS, changed, namespace="default")
    assert [c["field"] for c in raised.value.causes] == ["spec.selector"]
    assert raised.value.causes[0]["message"].endswith("field is immutable")


MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"


async def _operator_runs(api: Api) -> dict[str, Any]:
    path = "/apis/apps/v1/namespaces/etctl-system/deployments"
    return await wait_for(api, path, "etctl-operator", _available(1))


@pytest.mark.etctl_kubectl
async def test_kubectl_apply_k_of_the_manifests_runs_the_operators_deployment(
    api: Api, server: ApiServer, kubelet: Kubelet, tmp_path: Path
) -> None:
    kubectl = Kubectl(server, tmp_path)
    _, out = await kubectl("apply", "-k", str(MANIFESTS))
    assert "deployment.apps/etctl-operator created" in out
    deployment = await _operator_runs(api)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "etctl-operator"
    pods = (await api.get("/api/v1/namespaces/etctl-system/pods")).body["items"]
    assert [p["status"]["phase"] for p in pods] == ["Running"]
    _, out = await kubectl("get", "deployments,replicasets", "-n", "etctl-system")
    assert "etctl-operator" in out


@pytest.mark.etctl_kubectl
async def test_etctl_manifests_piped_to_a_server_side_apply_runs_the_operator(
    api: Api, server: ApiServer, kubelet: Kubelet, tmp_path: Path
) -> None:
    rendered = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "etctl.cli", "manifests", stdout=asyncio.subprocess.PIPE
    )
    stream, _ = await rendered.communicate()
    assert rendered.returncode == 0
    kubectl = Kubectl(server, tmp_path)
    _, out = await kubectl("apply", "--server-side", "-f", "-", stdin=stream)
    assert "deployment.apps/etctl-operator serverside-applied" in out
    await _operator_runs(api)
    # Applying again changes nothing: the controllers' own writes do not conflict with kubectl's.
    _, out = await kubectl("apply", "--server-side", "-f", "-", stdin=stream)
    assert "deployment.apps/etctl-operator serverside-applied" in out
