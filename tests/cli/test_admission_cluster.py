"""The operator's webhooks on the cluster under test: ``kubectl apply`` of bad jobs is refused.

``etctl run --webhooks --webhook-url`` as a developer runs it outside a cluster: its webhook
server on this machine, its certificate kept by itself in the test's namespace, URL-based
configurations (as ``etctl manifests --webhook-url`` renders them) into which it injects its CA.
The configurations select the test's namespace only, so nothing else on the cluster passes
through them, and are removed afterwards. This runs on the embedded API server and, with
``ETCTL_TEST_KUBECONFIG``, on a cluster whose API server runs on this machine (a separate
``python -m etctl.testing`` process, say); an API server elsewhere cannot reach this machine's
loopback address, and the test is skipped there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from etctl.cli._manifest_docs import labels
from etctl.cli._registry import discover
from etctl.cli._render_webhooks import webhook_configuration_documents
from etctl.cli._run import build_manager
from etctl.cli._settings import RunSettings
from etctl.errors import NotFound
from etctl.runtime import (
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Client,
)
from etctl.testing import ClusterTarget, cluster_target, eventually
from tests._kubectl import kubectl_apply
from tests.cli.test_sandbox_admission import INVALID
from tests.runtime._realtime import client_of, run_manager
from tests.runtime._webhooks import free_port
from tests.schema_support import EXAMPLES

pytestmark = pytest.mark.etctl_kubectl

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crds"
_KINDS = {
    "MutatingWebhookConfiguration": MUTATING_WEBHOOK_CONFIGURATIONS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOK_CONFIGURATIONS,
}


def _local(target: ClusterTarget) -> bool:
    config = yaml.safe_load(target.kubeconfig.read_text())
    servers = [cluster["cluster"]["server"] for cluster in config["clusters"]]
    return all(urlsplit(server).hostname in ("127.0.0.1", "localhost", "::1") for server in servers)


def _no_tensorflow() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((EXAMPLES / "tfjob" / "simple.yaml").read_text())
    job["metadata"]["name"] = "no-tensorflow"
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "tf"
    return job


def _no_pytorch() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load(
        (EXAMPLES / "pytorchjob" / "elastic-echo.yaml").read_text()
    )
    job["metadata"]["name"] = "no-pytorch"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "t"
    return job


async def _remove(client: Client, documents: list[dict[str, Any]]) -> None:
    for document in documents:
        with contextlib.suppress(NotFound):
            await client.delete(_KINDS[document["kind"]], document["metadata"]["name"])


async def test_the_webhooks_refuse_bad_jobs_on_the_cluster_under_test(tmp_path: Path) -> None:
    crds = [d for p in sorted(CRDS.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
    async with cluster_target(tmp_path, crds=crds) as target, client_of(target) as admin:
        if not _local(target):
            pytest.skip("the API server under test cannot reach this machine's webhook server")
        ns = target.namespace
        port = free_port()
        url = f"https://127.0.0.1:{port}"
        entries = discover().plugins()
        plugins = [entry.plugin for entry in entries if entry.plugin is not None]
        documents = webhook_configuration_documents(plugins, ns, labels(), url=url)
        for document in documents:
            for hook in document["webhooks"]:
                hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
        settings = RunSettings(
            kubeconfig=str(target.kubeconfig),
            namespaces=(ns,),
            metrics_bind_address="0",
            health_probe_bind_address="0",
            webhooks=True,
            webhook_host="127.0.0.1",
            webhook_port=port,
            webhook_url=url,
            webhook_namespace=ns,
            webhook_cert_path=str(tmp_path / "webhook-certs"),
        )
        try:
            for document in documents:
                await admin.create(_KINDS[document["kind"]], document)
            async with Client.connect(target.kubeconfig) as client:
                manager = build_manager(client, settings, entries)
                async with run_manager(manager):
                    rotator = manager.cert_rotator
                    assert rotator is not None
                    await eventually(lambda: rotator.check() is None, timeout=60)
                    await eventually(lambda: manager.webhook_server.address is not None)
                    cases: dict[str, Callable[[], dict[str, Any]]] = {
                        case: make for case, (make, _, _) in INVALID.items()
                    }
                    cases["tfjob-without-tensorflow"] = _no_tensorflow
                    cases["pytorchjob-without-pytorch"] = _no_pytorch
                    answers = {
                        case: await kubectl_apply(target.kubeconfig, make(), namespace=ns)
                        for case, make in cases.items()
                    }
                    simple = yaml.safe_load((EXAMPLES / "tfjob" / "simple.yaml").read_text())
                    valid = await kubectl_apply(target.kubeconfig, simple, namespace=ns)
        finally:
            await _remove(admin, documents)
    for case, (status, text) in answers.items():
        assert status != 0, (case, text)
        assert "is invalid" in text, (case, text)
    assert 'no container named "tensorflow"' in answers["tfjob-without-tensorflow"][1]
    assert 'no container named "pytorch"' in answers["pytorchjob-without-pytorch"][1]
    assert valid == (0, "tfjob.kubeflow.org/tfjob-simple created\n")
