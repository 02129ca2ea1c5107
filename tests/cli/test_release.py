"""The release file, manifests/install.yaml, applies with server-side apply, as its docs say.

``kubectl apply --server-side -f manifests/install.yaml`` sends each document as an apply patch;
this test sends exactly those (``PatchType.APPLY``, one field manager, no client-side annotation)
to the embedded API server, in the file's order, then again to show the second apply changes
no content, and checks the objects the install made; where kubectl is installed, it runs the
documented command itself, twice.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.runtime import (
    CRDS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Client,
    PatchType,
    Resource,
    objects,
)
from etctl.testing import ApiServer
from tests.runtime._realtime import client_of

RELEASE = Path(__file__).resolve().parents[2] / "manifests" / "install.yaml"
_RBAC = "rbac.authorization.k8s.io"
KINDS = {
    "Namespace": NAMESPACES,
    "CustomResourceDefinition": CRDS,
    "ServiceAccount": SERVICEACCOUNTS,
    "Service": SERVICES,
    "Role": ROLES,
    "RoleBinding": ROLEBINDINGS,
    "ClusterRole": Resource(_RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
    "ClusterRoleBinding": Resource(
        _RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
    ),
    "Deployment": Resource("apps", "v1", "deployments", "Deployment"),
    "Secret": SECRETS,
    "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATIONS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS,
}
_ANNOTATION_LIMIT = 262_144  # what client-side apply's last-applied annotation may hold


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what the server maintains (versions, managed fields, status)."""
    meta = {
        k: v
        for k, v in obj["metadata"].items()
        if k not in ("resourceVersion", "managedFields", "generation")
    }
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def documents() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(RELEASE.read_text(encoding="utf-8")) if doc]


async def apply(client: Client, doc: dict[str, Any]) -> dict[str, Any]:
    resource = KINDS[doc["kind"]]
    meta = doc["metadata"]
    applied = await client.patch(
        resource,
        meta["name"],
        doc,
        namespace=meta.get("namespace"),
        patch_type=PatchType.APPLY,
        field_manager="kubectl",
        force=False,
    )
    return dict(applied)


def test_the_release_file_is_one_install_in_apply_order() -> None:
    docs = documents()
    kinds = [doc["kind"] for doc in docs]
    assert kinds[0] == "Namespace"
    assert set(kinds[1 : kinds.count("CustomResourceDefinition") + 1]) == {
        "CustomResourceDefinition"
    }
    assert kinds[-5:] == [
        "Deployment",
        "Service",
        "Service",
        "MutatingWebhookConfiguration",  # last: writes of the kinds wait for their webhooks
        "ValidatingWebhookConfiguration",
    ]
    namespace = docs[0]["metadata"]["name"]
    namespaced = [doc for doc in docs if KINDS[doc["kind"]].namespaced]
    assert {doc["metadata"]["namespace"] for doc in namespaced} == {namespace}
    # Server-side apply keeps no copy of the object in an annotation, so size is no concern;
    # say how close client-side apply would come, for whoever reads a failure here.
    largest = max(len(yaml.safe_dump(doc)) for doc in docs)
    assert largest < 4 * _ANNOTATION_LIMIT


@pytest.mark.etctl_hooks(
    "installs the release under its fixed cluster-wide names, on a fresh server"
)
async def test_every_document_applies_server_side_and_again_unchanged(
    tmp_path: Path,
) -> None:
    docs = documents()
    async with ApiServer() as server, client_of(server, tmp_path) as client:
        first = [await apply(client, doc) for doc in docs]
        again = [await apply(client, doc) for doc in docs]
        # The second apply is accepted (same manager: no conflicts) and changes no content.
        assert [_content(o) for o in again] == [_content(o) for o in first]
        for doc in docs:
            meta = doc["metadata"]
            stored = await client.get(
                KINDS[doc["kind"]], meta["name"], namespace=meta.get("namespace")
            )
            managers = {m["manager"] for m in objects.meta(stored).get("managedFields", [])}
            assert "kubectl" in managers, doc["kind"]
            assert "kubectl.kubernetes.io/last-applied-configuration" not in objects.annotations(
                stored
            )
        crds = [
            doc["metadata"]["name"] for doc in docs if doc["kind"] == "CustomResourceDefinition"
        ]
        for name in crds:
            crd = await client.get(CRDS, name)
            conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
            assert conditions["Established"] == "True", name


@pytest.mark.etctl_kubectl
@pytest.mark.etctl_hooks(
    "installs the release under its fixed cluster-wide names, on a fresh server"
)
async def test_kubectl_applies_the_release_file_server_side(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    async with ApiServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        command = [kubectl, "--kubeconfig", str(kubeconfig), "apply", "--server-side"]
        for _ in range(2):  # an install, then an upgrade to the same release
            # Not subprocess.run: the server answers on this event loop, which must keep running.
            process = await asyncio.create_subprocess_exec(
                *command,
                "-f",
                str(RELEASE),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
            assert process.returncode == 0, (out + err).decode()
            assert out.decode().count("serverside-applied") == len(documents())
