"""Every job plugin's webhooks, and the scalers' once, whatever number of plugins bring them."""

from __future__ import annotations

from pathlib import Path

from etctl.cli._registry import discover
from etctl.common import setup_job_webhooks
from etctl.runtime import WebhookServer, WebhookServerOptions


def test_each_kind_gets_a_defaulting_and_a_validating_webhook_on_every_version(
    tmp_path: Path,
) -> None:
    server = WebhookServer(WebhookServerOptions(cert_dir=tmp_path))
    for entry in discover().plugins(["mpijob", "tfjob", "trainingjob"]):
        assert entry.plugin is not None
        setup_job_webhooks(server, entry.plugin)
    assert server.paths == [
        "/mutate-kai-alibabacloud-com-v1alpha1-scalein",
        "/mutate-kai-alibabacloud-com-v1alpha1-scaleout",
        "/mutate-kai-alibabacloud-com-v1alpha1-trainingjob",
        "/mutate-kubeflow-org-v1-tfjob",
        "/mutate-kubeflow-org-v2beta1-mpijob",
        "/validate-kai-alibabacloud-com-v1alpha1-scalein",
        "/validate-kai-alibabacloud-com-v1alpha1-scaleout",
        "/validate-kai-alibabacloud-com-v1alpha1-trainingjob",
        "/validate-kubeflow-org-v1-tfjob",
        "/validate-kubeflow-org-v2beta1-mpijob",
    ]
    by_name = {spec.name: spec for spec in server.specs}
    mpijobs = by_name["validate.mpijobs.kubeflow.org"]
    assert mpijobs.versions == ("v2beta1", "v1")  # each request judged in its own version
    assert mpijobs.operations == ("CREATE", "UPDATE")  # deletes never wait for the operator
    assert by_name["mutate.scaleins.kai.alibabacloud.com"].versions == ("v1alpha1",)
    assert all(spec.failure_policy == "Fail" for spec in server.specs)
