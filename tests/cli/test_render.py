import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.cli._render import DEFAULT_IMAGE, ManifestOptions, render, render_stream
from etctl.common import CustomResource, discover, render_manifests

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
PLUGINS = [entry.plugin for entry in discover().plugins() if entry.plugin is not None]


def docs(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def one(files: dict[str, str], path: str) -> dict[str, Any]:
    (doc,) = docs(files[path])
    return doc


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    return render(PLUGINS, ManifestOptions())


def test_committed_manifests_are_what_etctl_manifests_renders(files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = MANIFESTS / relative
        assert path.exists(), f"{path} is missing: run etctl manifests --out manifests"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} is stale: run etctl manifests --out manifests"
        )


def test_crds_are_the_crd_generators(files: dict[str, str]) -> None:
    resources: list[CustomResource] = [r for p in PLUGINS for r in p.custom_resources]
    for name, text in render_manifests(resources).items():
        assert files[f"crds/{name}"] == text


def test_kustomization_lists_every_file(files: dict[str, str]) -> None:
    kustomization = one(files, "kustomization.yaml")
    assert kustomization["namespace"] == "etctl-system"
    assert sorted(kustomization["resources"]) == sorted(
        p for p in files if p != "kustomization.yaml"
    )
    assert kustomization["resources"][0] == "namespace.yaml"


def test_operator_pod_is_locked_down(files: dict[str, str]) -> None:
    deployment = one(files, "manager/deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert "--metrics-bind-address=:8080" in container["args"]
    assert "--health-probe-bind-address=:8081" in container["args"]
    assert "--leader-elect" in container["args"]
    assert container["image"] == DEFAULT_IMAGE
    assert pod["serviceAccountName"] == "etctl-operator"
    # Selector labels are a subset of the pod's labels.
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_leader_election_is_namespaced(files: dict[str, str]) -> None:
    role = one(files, "rbac/leader-election-role.yaml")
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == "etctl-system"
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}.items() <= role["rules"][
        0
    ].items()
    cluster_role = one(files, "rbac/cluster-role.yaml")
    assert all("leases" not in rule["resources"] for rule in cluster_role["rules"])
    binding = one(files, "rbac/cluster-role-binding.yaml")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "etctl-operator", "namespace": "etctl-system"}
    ]


def test_options_reach_the_deployment_and_roles() -> None:
    options = ManifestOptions(
        namespace="ml", image="registry/etctl:dev", gang_scheduler="volcano", jobs=("tfjob",)
    )
    files = render(PLUGINS, options)
    container = one(files, "manager/deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry/etctl:dev"
    assert "--gang-scheduler=volcano" in container["args"]
    assert "--jobs=tfjob" in container["args"]
    rules = one(files, "rbac/cluster-role.yaml")["rules"]
    assert any(rule["resources"] == ["podgroups"] for rule in rules)
    assert one(files, "kustomization.yaml")["namespace"] == "ml"


def test_stream_holds_every_object_of_the_tree(files: dict[str, str]) -> None:
    streamed = docs(render_stream(PLUGINS, ManifestOptions()))
    tree = [
        doc for path, text in files.items() if path != "kustomization.yaml" for doc in docs(text)
    ]
    key = lambda d: (d["kind"], d["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, streamed)) == sorted(map(key, tree))
    assert streamed[0]["kind"] == "Namespace"
    assert [d["kind"] for d in streamed].index("CustomResourceDefinition") == 1


@pytest.mark.kubectl
def test_kustomize_builds_the_committed_tree() -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    out = subprocess.run(
        [kubectl, "kustomize", str(MANIFESTS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    objects = docs(out)
    kinds = {d["kind"] for d in objects}
    assert {"Namespace", "CustomResourceDefinition", "ClusterRole", "Role", "Deployment"} <= kinds
    namespaced = [
        d
        for d in objects
        if d["kind"] in {"Deployment", "Role", "RoleBinding", "ServiceAccount", "Service"}
    ]
    assert {d["metadata"]["namespace"] for d in namespaced} == {"etctl-system"}
