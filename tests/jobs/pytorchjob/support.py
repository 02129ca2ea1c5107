"""Small PyTorchJob documents for the unit tests."""

from __future__ import annotations

from typing import Any

from etctl.jobs.pytorchjob import PyTorchJob, with_defaults


def template(*, port: int | None = None, container: str = "pytorch") -> dict[str, Any]:
    """A pod template with one container (with a ``pytorchjob-port`` when ``port`` is given)."""
    spec: dict[str, Any] = {"name": container, "image": "pytorch:2"}
    if port is not None:
        spec["ports"] = [{"name": "pytorchjob-port", "containerPort": port}]
    return {"spec": {"containers": [spec]}}


def replica(count: int = 1, **kw: Any) -> dict[str, Any]:
    return {"replicas": count, "template": template(**kw)}


def document(
    *, master: bool = False, workers: int = 2, elastic: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    specs: dict[str, Any] = {"Worker": replica(workers)}
    if master:
        specs = {"Master": replica(1), **specs}
    body: dict[str, Any] = {"pytorchReplicaSpecs": specs, **spec}
    if elastic is not None:
        body["elasticPolicy"] = elastic
    return {"metadata": {"name": "job", "namespace": "ns"}, "spec": body}


def job(**kw: Any) -> PyTorchJob:
    """The job of :func:`document`, parsed, defaults not applied."""
    return PyTorchJob.model_validate(document(**kw))


def defaulted(**kw: Any) -> PyTorchJob:
    """The job of :func:`document` with training-operator's defaults applied."""
    return with_defaults(job(**kw))
