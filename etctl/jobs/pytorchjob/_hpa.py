"""The HorizontalPodAutoscaler of a PyTorchJob with ``elasticPolicy.metrics``.

training-operator's ``desiredHPA`` (``hpa.go``): an ``autoscaling/v2`` HorizontalPodAutoscaler
named after the job, in its namespace, owned by it, whose ``scaleTargetRef`` is the job itself
(so the HPA writes ``Worker.replicas`` through the job's ``/scale`` subresource), with
``minReplicas`` and ``maxReplicas`` the elastic bounds (training-operator's defaults applied) and
the policy's ``metrics`` as written. It exists while the job has metrics. A suspended job keeps
it, as it keeps every child but its pods (training-operator deletes it): with no pods it has no
metrics to act on, and while the job is suspended the scaling machinery leaves the count it
writes alone until the job resumes. etctl labels it with the job's selector labels, as every
child, so a restarted operator finds it.

What the HPA writes reaches the workers through the shared scaling machinery: a count outside
the bounds is clamped with a Warning Event, added workers get new names, removed ones are the
highest indices.

Invariants: pure; ``None`` exactly when the job should have no HPA.
"""

from __future__ import annotations

from etctl.common import job_selector
from etctl.jobs.pytorchjob._api import API_VERSION, KIND, PyTorchJob
from etctl.jobs.pytorchjob._names import hpa_name
from etctl.runtime import KubeObject, Resource

__all__ = ["HORIZONTALPODAUTOSCALERS", "HPA_API_VERSION", "desired_hpa"]

HPA_API_VERSION = "autoscaling/v2"
HORIZONTALPODAUTOSCALERS = Resource(
    "autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"
)
"""The HPA resource (``autoscaling/v2``)."""


def desired_hpa(job: PyTorchJob, *, operator_name: str) -> KubeObject | None:
    """The HPA ``job`` (defaulted) should have now, or None (no metrics)."""
    policy = job.spec.elastic_policy
    if policy is None or policy.metrics is None:
        return None
    if policy.max_replicas is None:
        return None  # only a job without a Worker has no bounds; validation refuses it
    name = job.metadata.name
    spec: dict[str, object] = {
        "scaleTargetRef": {"apiVersion": API_VERSION, "kind": KIND, "name": name},
        "maxReplicas": policy.max_replicas,
        "metrics": [metric.to_dict() for metric in policy.metrics],
    }
    if policy.min_replicas is not None:
        spec["minReplicas"] = policy.min_replicas
    return {
        "apiVersion": HPA_API_VERSION,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": hpa_name(name),
            "namespace": job.metadata.namespace,
            "labels": job_selector(name, operator_name),
        },
        "spec": spec,
    }
