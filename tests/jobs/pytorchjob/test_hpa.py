"""The HorizontalPodAutoscaler of elasticPolicy.metrics (training-operator's desiredHPA)."""

from __future__ import annotations

from etctl.jobs.pytorchjob import desired_hpa
from tests.jobs.pytorchjob.support import defaulted

UTILIZATION = {"type": "Utilization", "averageUtilization": 80}
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": UTILIZATION}}


def test_an_hpa_targets_the_jobs_scale_with_its_bounds_and_metrics() -> None:
    job = defaulted(elastic={"minReplicas": 1, "maxReplicas": 3, "metrics": [CPU]})
    assert desired_hpa(job, operator_name="op") == {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "job",
            "namespace": "ns",
            "labels": {
                "training.kubeflow.org/operator-name": "op",
                "training.kubeflow.org/job-name": "job",
            },
        },
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "job",
            },
            "maxReplicas": 3,
            "metrics": [CPU],
            "minReplicas": 1,
        },
    }


def test_the_defaulted_bounds_are_the_hpas() -> None:
    hpa = desired_hpa(defaulted(workers=2, elastic={"metrics": [CPU]}), operator_name="op")
    assert hpa is not None
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 2)


def test_no_metrics_or_no_policy_means_no_hpa_and_a_suspended_job_keeps_it() -> None:
    assert desired_hpa(defaulted(elastic={"maxReplicas": 3}), operator_name="op") is None
    assert desired_hpa(defaulted(), operator_name="op") is None
    suspended = defaulted(elastic={"maxReplicas": 3, "metrics": [CPU]}, runPolicy={"suspend": True})
    assert desired_hpa(suspended, operator_name="op") is not None


def test_an_empty_metrics_list_still_makes_an_hpa_as_training_operator_does() -> None:
    hpa = desired_hpa(defaulted(elastic={"maxReplicas": 3, "metrics": []}), operator_name="op")
    assert hpa is not None
    assert hpa["spec"]["metrics"] == []
