"""One voice for the operator's Events, across every kind, through a life of each on the sandbox.

The reasons are training-operator's; the sentences are etctl's own, and read alike whatever the
kind: ``<Kind> <name> <what happened>[: why].``, the job named without its namespace (the Event
is in it), counts that agree with their nouns, and a pod that failed "failed".
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from etctl.cli import Sandbox, run_sandbox
from etctl.cli._sandbox_options import SandboxOptions
from etctl.jobs.mpijob import MPIJOB
from etctl.jobs.tfjob import TFJOBS
from etctl.runtime import EVENTS, Client, ClientOptions
from etctl.testing import eventually
from tests.schema_support import EXAMPLES, load_yaml

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

NS = "default"
JOB_KINDS = ("MPIJob", "TFJob", "TrainingJob")
LIFECYCLE = ("Created", "Running", "Succeeded", "Failed", "Restarting", "Suspended", "Resumed")


def tfjob(name: str, **sim: str) -> dict[str, Any]:
    annotations = {f"sim.etctl.io/{key.replace('_', '-')}": value for key, value in sim.items()}
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}
    template = {"metadata": {"annotations": annotations}, "spec": {"containers": [container]}}
    worker = {"replicas": 1, "restartPolicy": "Never", "template": template}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"Worker": worker}},
    }


async def operator_events(client: Client) -> list[dict[str, Any]]:
    """The Events about jobs and scalers (the operator's), oldest first."""
    listed = await client.list(EVENTS, namespace=NS)
    kinds = (*JOB_KINDS, "ScaleIn", "ScaleOut")
    return [dict(e) for e in listed.items if e["involvedObject"]["kind"] in kinds]


async def a_life_of_each_kind(sandbox: Sandbox) -> list[dict[str, Any]]:
    client = await Client.from_kubeconfig(
        sandbox.kubeconfig, options=ClientOptions(request_timeout=10)
    )
    async with client:
        elastic = load_yaml(EXAMPLES / "mpijob" / "tensorflow-mnist-elastic.yaml")
        elastic["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
        mpijobs = MPIJOB.resource("v1")
        await client.create(mpijobs, elastic, namespace=NS)
        await client.create(TFJOBS, tfjob("fine", run_seconds="1"), namespace=NS)
        await client.create(TFJOBS, tfjob("broken", run_seconds="0.5", exit_code="3"), namespace=NS)
        job = "tensorflow-mnist-elastic"

        async def reasons(*wanted: str) -> bool:
            seen = {e["reason"] for e in await operator_events(client)}
            return set(wanted) <= seen

        await eventually(
            lambda: reasons("MPIJobRunning", "TFJobSucceeded", "TFJobFailed"),
            what="running",
            timeout=60,
        )
        scale = {"spec": {"replicas": 3}}
        await client.patch(mpijobs, job, scale, namespace=NS, subresource="scale")
        await eventually(lambda: reasons("ScalingOutSucceeded"), what="grown", timeout=60)
        sandbox.kubelet.evict(NS, f"{job}-worker-1")  # failed for good: replaced
        await eventually(lambda: reasons("MPIJobWorkerFailed"), what="replaced", timeout=60)
        await client.patch(
            mpijobs, job, {"spec": {"replicas": 1}}, namespace=NS, subresource="scale"
        )
        await eventually(lambda: reasons("ScalingInSucceeded"), what="shrunk", timeout=60)
        return await operator_events(client)


async def test_every_event_about_a_job_reads_in_one_voice() -> None:
    options = SandboxOptions(pod_start_delay=0, metrics_bind_address="0")
    events = await run_sandbox(options, a_life_of_each_kind)
    assert events is not None
    messages = [e["message"] for e in events]
    for event in events:
        kind, name = event["involvedObject"]["kind"], event["involvedObject"]["name"]
        message = event["message"]
        # The Event is in the namespace (et-operator's Kind:ns/name of a scaler aside).
        assert not re.search(rf"(?<!:){NS}/{re.escape(name)}(?![-\w])", message), message
        assert "(s)" not in message, message
        assert not re.search(r"\b1 workers\b|\bworkers [^,;]+$", message), message
        assert not re.search(r"\bis (failed|succeeded)\b|has failed because", message), message
        if kind in JOB_KINDS and event["reason"] in {f"{kind}{what}" for what in LIFECYCLE}:
            assert message.startswith(f"{kind} {name} "), message
            assert message.endswith("."), message
    job = "tensorflow-mnist-elastic"
    assert f"MPIJob {job} is created." in messages
    assert f"MPIJob {job} is running." in messages
    assert "TFJob fine succeeded." in messages
    assert "TFJob broken failed: 1 Worker replica failed." in messages
    grown = f"MPIJob {job} has 3 workers: {job}-worker-0, {job}-worker-1, {job}-worker-2"
    assert any(m.endswith(grown) for m in messages), messages
    assert any(m.endswith(f"MPIJob {job} has 1 worker: {job}-worker-0") for m in messages), messages
    assert any(
        re.fullmatch(
            rf"worker {job}-worker-1 of MPIJob {job} failed; replaced by {job}-worker-\d+", m
        )
        for m in messages
    ), messages
