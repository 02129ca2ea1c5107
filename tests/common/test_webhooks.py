"""Every job plugin's webhooks, and the scalers' once, whatever number of plugins bring them."""

from __future__ import annotations

from pathlib import Path

from etctl.cli._registry import discover
from etctl.common import setup_job_webhooks
from etctl.runtime import WebhookServer, WebhookServerOptions
from tests.common._harness import harness, simplejob
from tests.common.simplejob import SimpleJobPlugin
from tests.runtime._webhooks import admission_review, make_certs, server_on, serving


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


async def test_the_webhook_and_the_controller_run_one_validate_and_default_phase(
    tmp_path: Path,
) -> None:
    # SimpleJob has no validate of its own: what refuses this name is JobModel's generic check,
    # which only the framework's phase runs. The webhook refuses with the very lines the
    # controller's Failed condition then gives the job that got past a missing webhook.
    name = "n" * 60  # its pods' names ("<job>-worker-<index>") would pass 63 characters
    bad = simplejob(name)
    certs = make_certs(tmp_path / "certs")
    server = server_on(certs.directory)
    setup_job_webhooks(server, SimpleJobPlugin())
    review = admission_review(
        "CREATE",
        {**bad, "metadata": {"name": name, "namespace": "default"}},
        group="example.etctl.io",
        kind="SimpleJob",
        plural="simplejobs",
    )
    async with serving(server, certs) as client:
        status, body = await client.post("/validate-example-etctl-io-v1-simplejob", review)
    assert status == 200
    answer = body["response"]
    assert answer["allowed"] is False
    problems = [f"{c['field']}: {c['message']}" for c in answer["status"]["details"]["causes"]]
    assert problems
    async with harness(tmp_path) as h:
        await h.submit(bad)
        await h.step(name)
        job = await h.job(name)
    (failed,) = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed["reason"] == "SimpleJobInvalid"
    assert failed["message"] == f"SimpleJob {name} is invalid: " + "; ".join(problems)
