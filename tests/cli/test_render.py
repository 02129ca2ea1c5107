import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.cli._crdfiles import render_manifests
from etctl.cli._registry import discover
from etctl.cli._render import DEFAULT_IMAGE, ManifestOptions, render, render_stream
from etctl.common import CustomResource, custom_resources
from etctl.errors import ConfigError

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
    # Kinds several plugins bring (ScaleIn, ScaleOut) are rendered once, as the registry lists them.
    unique = {r.name: r for p in PLUGINS for r in custom_resources(p)}
    resources: list[CustomResource] = list(unique.values())
    for name, text in render_manifests(resources).items():
        assert files[f"base/crds/{name}"] == text


def test_the_base_lists_every_file_and_the_overlays_use_it(files: dict[str, str]) -> None:
    base = one(files, "base/kustomization.yaml")
    assert base["namespace"] == "etctl-system"
    assert sorted(base["resources"]) == sorted(
        p.removeprefix("base/")
        for p in files
        if p.startswith("base/") and p != "base/kustomization.yaml"
    )
    standalone = one(files, "overlays/standalone/kustomization.yaml")
    assert standalone["namespace"] == "etctl-system"
    assert standalone["resources"] == ["namespace.yaml", "../../base"]
    assert one(files, "overlays/standalone/namespace.yaml")["metadata"]["name"] == "etctl-system"
    kubeflow = one(files, "overlays/kubeflow/kustomization.yaml")
    assert kubeflow["namespace"] == "kubeflow"
    assert kubeflow["resources"] == ["../../base"]
    # kubectl apply -k manifests/ installs the standalone overlay.
    assert one(files, "kustomization.yaml")["resources"] == ["overlays/standalone"]


def test_the_release_file_is_the_standalone_stream(files: dict[str, str]) -> None:
    assert files["install.yaml"] == render_stream(PLUGINS, ManifestOptions())
    assert files["install.yaml"] == render_stream(PLUGINS, ManifestOptions(overlay="standalone"))


def test_operator_pod_is_locked_down(files: dict[str, str]) -> None:
    deployment = one(files, "base/manager/deployment.yaml")
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
    assert ports == {"metrics": 8443, "health": 8081, "webhook": 9443}
    assert "--webhooks" in container["args"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["webhook-certs"] == {
        "name": "webhook-certs",
        "mountPath": "/tmp/k8s-webhook-server/serving-certs",
        "readOnly": True,
    }
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["webhook-certs"]["secret"]["secretName"] == "etctl-webhook-server-cert"
    assert "--metrics-bind-address=:8443" in container["args"]
    assert "--health-probe-bind-address=:8081" in container["args"]
    assert "--leader-elect" in container["args"]
    assert container["image"] == DEFAULT_IMAGE
    assert pod["serviceAccountName"] == "etctl-operator"
    # Selector labels are a subset of the pod's labels.
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_leader_election_is_namespaced(files: dict[str, str]) -> None:
    role = one(files, "base/rbac/leader-election-role.yaml")
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == "etctl-system"
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}.items() <= role["rules"][
        0
    ].items()
    cluster_role = one(files, "base/rbac/cluster-role.yaml")
    assert all("leases" not in rule["resources"] for rule in cluster_role["rules"])
    binding = one(files, "base/rbac/cluster-role-binding.yaml")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "etctl-operator", "namespace": "etctl-system"}
    ]


def test_options_reach_the_deployment_and_roles() -> None:
    options = ManifestOptions(
        namespace="ml", image="registry/etctl:dev", gang_scheduler="volcano", jobs=("tfjob",)
    )
    files = render(PLUGINS, options)
    container = one(files, "base/manager/deployment.yaml")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["image"] == "registry/etctl:dev"
    assert "--gang-scheduler=volcano" in container["args"]
    assert "--jobs=tfjob" in container["args"]
    rules = one(files, "base/rbac/cluster-role.yaml")["rules"]
    assert any(rule["resources"] == ["podgroups"] for rule in rules)
    assert one(files, "base/kustomization.yaml")["namespace"] == "ml"
    assert one(files, "overlays/standalone/kustomization.yaml")["namespace"] == "ml"
    assert one(files, "overlays/kubeflow/kustomization.yaml")["namespace"] == "kubeflow"


def key(doc: dict[str, Any]) -> tuple[str, str, str]:
    return (doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"])


def test_stream_holds_every_object_of_the_base_and_the_namespace(files: dict[str, str]) -> None:
    streamed = docs(render_stream(PLUGINS, ManifestOptions()))
    tree = [
        doc
        for path, text in files.items()
        if path.startswith("base/") and path != "base/kustomization.yaml"
        for doc in docs(text)
    ]

    def names(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return sorted((k, n) for k, _, n in map(key, found))

    assert names(streamed) == sorted([*names(tree), ("Namespace", "etctl-system")])
    assert streamed[0]["kind"] == "Namespace"
    assert [d["kind"] for d in streamed].index("CustomResourceDefinition") == 1


def test_the_job_kinds_are_aggregated_into_the_users_roles(files: dict[str, str]) -> None:
    edit = one(files, "base/rbac/etctl-trainingjobs-edit-role.yaml")
    labels = edit["metadata"]["labels"]
    assert labels["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert not any("kubeflow" in label for label in labels)
    grants = {(r["resources"][0], tuple(r["verbs"])) for r in edit["rules"]}
    write = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
    assert {
        ("trainingjobs", write),
        ("trainingjobs/status", ("get",)),
        ("trainingjobs/scale", ("get", "update", "patch")),
        ("scaleins", write),
        ("scaleouts", write),
    } <= grants
    view = one(files, "base/rbac/etctl-tfjobs-view-role.yaml")
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert {(r["resources"][0], tuple(r["verbs"])) for r in view["rules"]} == {
        ("tfjobs", ("get", "list", "watch")),
        ("tfjobs/status", ("get",)),
    }
    admin = one(files, "base/rbac/etctl-tfjobs-admin-role.yaml")
    assert admin["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    # Kubeflow's overlay aggregates them into kubeflow-<role> too.
    kubeflow = docs(render_stream(PLUGINS, ManifestOptions(overlay="kubeflow")))
    roles = {d["metadata"]["name"]: d for d in kubeflow if d["kind"] == "ClusterRole"}
    base_edit = one(files, "base/rbac/etctl-tfjobs-edit-role.yaml")
    assert roles["etctl-tfjobs-edit"]["metadata"]["labels"] == {
        **base_edit["metadata"]["labels"],
        "rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit": "true",
    }
    assert roles["etctl-tfjobs-edit"]["rules"] == base_edit["rules"]
    assert "Namespace" not in {d["kind"] for d in kubeflow}
    namespaced = {d["metadata"].get("namespace") for d in kubeflow if d["kind"] != "ClusterRole"}
    assert namespaced - {None} == {"kubeflow"}


def test_an_unknown_overlay_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown overlay 'dev'"):
        render_stream(PLUGINS, ManifestOptions(overlay="dev"))


@pytest.mark.etctl_kubectl
@pytest.mark.parametrize("overlay", ["standalone", "kubeflow", "cert-manager"])
def test_kustomize_renders_each_overlay_as_the_generator_does(overlay: str) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    out = subprocess.run(
        [kubectl, "kustomize", str(MANIFESTS / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    built = {key(doc): doc for doc in docs(out)}
    rendered = {
        key(doc): doc for doc in docs(render_stream(PLUGINS, ManifestOptions(overlay=overlay)))
    }
    assert sorted(built) == sorted(rendered)
    for found, doc in built.items():
        assert doc == rendered[found], found


@pytest.mark.etctl_kubectl
def test_kustomize_of_the_root_is_the_release_file() -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    out = subprocess.run(
        [kubectl, "kustomize", str(MANIFESTS)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    release = (MANIFESTS / "install.yaml").read_text(encoding="utf-8")
    assert {key(d): d for d in docs(out)} == {key(d): d for d in docs(release)}


def test_the_webhooks_are_configured_for_every_kind_and_reached_through_the_service(
    files: dict[str, str],
) -> None:
    validating = one(files, "base/webhook/validating-webhook-configuration.yaml")
    mutating = one(files, "base/webhook/mutating-webhook-configuration.yaml")
    resources = {hook["rules"][0]["resources"][0] for hook in validating["webhooks"]}
    assert resources == {
        "mpijobs",
        "pytorchjobs",
        "scaleins",
        "scaleouts",
        "tfjobs",
        "trainingjobs",
    }
    assert {h["name"] for h in mutating["webhooks"]} == {
        f"mutate.{resource}.{group}"
        for resource, group in (
            ("mpijobs", "kubeflow.org"),
            ("pytorchjobs", "kubeflow.org"),
            ("tfjobs", "kubeflow.org"),
            ("scaleins", "kai.alibabacloud.com"),
            ("scaleouts", "kai.alibabacloud.com"),
            ("trainingjobs", "kai.alibabacloud.com"),
        )
    }
    for hook in (*validating["webhooks"], *mutating["webhooks"]):
        service = hook["clientConfig"]["service"]
        assert (service["name"], service["namespace"], service["port"]) == (
            "etctl-webhook-service",
            "etctl-system",
            443,
        )
        assert "caBundle" not in hook["clientConfig"]  # the operator injects its CA
        assert hook["failurePolicy"] == "Fail"
        assert hook["sideEffects"] == "None"
    service = one(files, "base/webhook/service.yaml")
    assert service["spec"]["ports"] == [
        {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
    ]
    secret = one(files, "base/webhook/secret.yaml")
    assert (secret["metadata"]["name"], secret.get("data")) == ("etctl-webhook-server-cert", None)
    rules = one(files, "base/rbac/cluster-role.yaml")["rules"]
    injecting = [r for r in rules if r["apiGroups"] == ["admissionregistration.k8s.io"]]
    assert injecting == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations"],
            "verbs": ["get", "list", "watch", "update"],
            "resourceNames": ["etctl-mutating-webhooks"],
        },
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "verbs": ["get", "list", "watch", "update"],
            "resourceNames": ["etctl-validating-webhooks"],
        },
    ]
    kubeflow = docs(render_stream(PLUGINS, ManifestOptions(overlay="kubeflow")))
    hooks = [d for d in kubeflow if d["kind"].endswith("WebhookConfiguration")]
    assert {h["clientConfig"]["service"]["namespace"] for d in hooks for h in d["webhooks"]} == {
        "kubeflow"
    }


def test_the_cert_manager_overlay_hands_the_certificate_to_cert_manager() -> None:
    stream = docs(render_stream(PLUGINS, ManifestOptions(overlay="cert-manager")))
    by_kind = {d["kind"]: d for d in stream}
    certificate = by_kind["Certificate"]
    assert certificate["spec"]["secretName"] == "etctl-webhook-server-cert"
    assert certificate["spec"]["dnsNames"] == [
        "etctl-webhook-service.etctl-system.svc",
        "etctl-webhook-service.etctl-system.svc.cluster.local",
    ]
    assert by_kind["Issuer"]["spec"] == {"selfSigned": {}}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        annotations = by_kind[kind]["metadata"]["annotations"]
        assert annotations == {"cert-manager.io/inject-ca-from": "etctl-system/etctl-serving-cert"}
    args = by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--webhook-certs=external" in args
    assert "--webhooks" in args


def test_a_webhook_url_points_the_configurations_at_an_operator_outside_the_cluster() -> None:
    stream = docs(render_stream(PLUGINS, ManifestOptions(webhook_url="https://192.0.2.10:9443")))
    hooks = [h for d in stream if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]]
    assert {h["clientConfig"]["url"].rsplit("/", 1)[0] for h in hooks} == {
        "https://192.0.2.10:9443"
    }
    assert all("service" not in h["clientConfig"] for h in hooks)
