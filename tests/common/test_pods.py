"""Building a slot's pod from its replica spec."""

from __future__ import annotations

from typing import Any

from etctl.common import ReplicaRef, ReplicaSpec, RestartPolicy
from etctl.common._pods import build_pod

OWNER = {
    "apiVersion": "example.com/v1",
    "kind": "Sweep",
    "name": "j",
    "uid": "u1",
    "controller": True,
}


def template(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "train", "training.kubeflow.org/job-name": "spoof"}},
        "spec": {"containers": [{"name": "main", "image": "img"}], **spec},
    }


def test_pod_gets_name_labels_owner_and_restart_policy() -> None:
    spec = ReplicaSpec(template=template(), restart_policy=RestartPolicy.EXIT_CODE)
    draft = build_pod(
        job_name="j",
        namespace="ns",
        owner_ref=OWNER,
        ref=ReplicaRef("Worker", 1, "j-worker-1"),
        spec=spec,
        operator_name="etctl",
    )
    pod = draft.pod
    assert pod["metadata"]["name"] == "j-worker-1"
    assert pod["metadata"]["namespace"] == "ns"
    assert pod["metadata"]["labels"] == {
        "app": "train",
        "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/operator-name": "etctl",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    assert pod["metadata"]["ownerReferences"] == [OWNER]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert not draft.overrode_restart_policy


def test_template_is_deep_copied_and_its_restart_policy_overridden() -> None:
    spec = ReplicaSpec(
        template=template(restartPolicy="Always"), restart_policy=RestartPolicy.NEVER
    )
    draft = build_pod(
        job_name="j",
        namespace="ns",
        owner_ref=OWNER,
        ref=ReplicaRef("PS", 0, "j-ps-0"),
        spec=spec,
        operator_name="etctl",
    )
    assert draft.overrode_restart_policy
    draft.pod["spec"]["containers"][0]["image"] = "changed"
    assert spec.template["spec"]["containers"][0]["image"] == "img"
    assert spec.template["spec"]["restartPolicy"] == "Always"
