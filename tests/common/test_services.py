"""Finishing a plugin's service: name, labels, owner, selector."""

from __future__ import annotations

from etctl.common import ReplicaRef
from etctl.common._services import finish_service

OWNER = {
    "apiVersion": "example.com/v1",
    "kind": "Sweep",
    "name": "j",
    "uid": "u",
    "controller": True,
}
REF = ReplicaRef("Worker", 2, "j-worker-2")


def test_defaults_select_exactly_the_slots_pod() -> None:
    plugin_service = {"spec": {"clusterIP": "None", "ports": [{"port": 80}]}}
    service = finish_service(
        plugin_service, job_name="j", namespace="ns", owner_ref=OWNER, ref=REF, operator_name="op"
    )
    assert service["apiVersion"] == "v1"
    assert service["kind"] == "Service"
    assert service["metadata"]["name"] == "j-worker-2"
    assert service["metadata"]["namespace"] == "ns"
    assert service["metadata"]["ownerReferences"] == [OWNER]
    assert service["spec"]["selector"] == {
        "training.kubeflow.org/operator-name": "op",
        "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "2",
    }
    assert plugin_service == {"spec": {"clusterIP": "None", "ports": [{"port": 80}]}}


def test_plugin_name_labels_and_selector_are_kept() -> None:
    plugin_service = {
        "metadata": {"name": "j", "labels": {"team": "a"}},
        "spec": {"selector": {"team": "a"}},
    }
    service = finish_service(
        plugin_service, job_name="j", namespace="ns", owner_ref=OWNER, ref=REF, operator_name="op"
    )
    assert service["metadata"]["name"] == "j"
    assert service["metadata"]["labels"]["team"] == "a"
    assert service["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "2"
    assert service["spec"]["selector"] == {"team": "a"}
