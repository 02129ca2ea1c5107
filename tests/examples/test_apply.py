"""Every example applies as examples/README.md says, on the embedded API server.

The README's steps: install the CRDs (``kubectl apply -f manifests/base/crds/``, or the operator
example's own CRD), then ``kubectl apply -f`` each example into the current namespace. Each
example is sent as ``kubectl apply --server-side --dry-run=server`` sends it (an apply patch,
admitted, defaulted and validated, stored nowhere), and, where kubectl is installed, through
kubectl itself, client-side as written in the README, with a server-side dry run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.cli._registry import discover
from etctl.runtime import CRDS, PatchType, objects
from etctl.testing import ApiServer, cluster_target
from tests._kubectl import kubectl
from tests.examples._files import (
    CRD_DIR,
    FILES,
    OPERATOR_CRD,
    RESOURCES,
    crds,
    load,
    needs,
    resource_of,
)
from tests.runtime._realtime import client_of


def test_every_example_is_named_and_namespace_free() -> None:
    # kubectl apply needs a name; a namespace in the file would fight ``-n`` and need creating.
    for path in FILES:
        for doc in load(path):
            meta = doc["metadata"]
            assert meta.get("name"), f"{path.name}: kubectl apply needs metadata.name"
            assert "namespace" not in meta, f"{path.name}: applies into the current namespace"
            assert doc["kind"] in RESOURCES, f"{path.name}: a kind this test does not know"


def test_no_two_examples_share_a_name() -> None:
    # ``kubectl apply -f examples/<kind>/`` creates each example; two of one name would overwrite
    # each other (one "created", the other "configured" over it).
    seen: dict[tuple[str, str], str] = {}
    for path in FILES:
        for doc in load(path):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in seen, f"{path.name} and {seen[key]} both define {key[0]} {key[1]}"
            seen[key] = path.name


def test_what_an_example_needs_first_exists() -> None:
    # A "# needs:" line names a file under examples/ that the example cannot work without.
    for path in FILES:
        for need in needs(path):
            assert need.is_file(), f"{path.name} needs {need}, which does not exist"
            assert need != path


def test_the_committed_crds_are_every_registered_kinds() -> None:
    names = {doc["metadata"]["name"] for doc in crds()}
    assert names == {resource.name for resource in discover().custom_resources()}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
async def test_the_example_applies_server_side(tmp_path: Path, path: Path) -> None:
    async with cluster_target(tmp_path, crds=[*crds(), *load(OPERATOR_CRD)]) as target:
        ns = target.namespace
        async with client_of(target) as client:
            for doc in load(path):
                applied = await client.patch(
                    resource_of(doc),
                    doc["metadata"]["name"],
                    doc,
                    namespace=ns,
                    patch_type=PatchType.APPLY,
                    field_manager="kubectl",
                    dry_run=True,
                )
                assert applied["metadata"]["namespace"] == ns
                assert applied.get("spec") or applied.get("data")  # admitted, then not stored
            listed = await client.list(resource_of(load(path)[0]), namespace=ns)
            # Nothing applied was stored (the namespace's own kube-root-ca.crt aside).
            assert {objects.name(o) for o in listed.items} <= {"kube-root-ca.crt"}


@pytest.mark.etctl_kubectl
@pytest.mark.etctl_hooks(
    "a fresh embedded server, whose default namespace the README's commands use"
)
async def test_kubectl_applies_every_example_as_the_readme_says(tmp_path: Path) -> None:
    async with ApiServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")

        async def run(*args: str) -> str:
            done = await kubectl(kubeconfig, *args)
            assert done.returncode == 0, done.stdout + done.stderr
            return done.stdout

        await run("apply", "-f", str(CRD_DIR))
        await run("apply", "-f", str(OPERATOR_CRD))
        async with client_of(server, tmp_path) as client:
            for doc in [*crds(), *load(OPERATOR_CRD)]:
                await server_established(client, doc["metadata"]["name"])
        for directory in ("tfjob", "trainingjob", "mpijob", "operator"):
            files = [p for p in FILES if p.parent.name == directory]
            paths = (arg for p in files for arg in ("-f", str(p)))
            out = await run("apply", "--dry-run=server", *paths)
            assert out.count("(server dry run)") == sum(len(load(p)) for p in files), out


async def server_established(client: Any, name: str) -> None:
    crd = await client.get(CRDS, name)
    conditions = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
    assert conditions.get("Established") == "True", name
