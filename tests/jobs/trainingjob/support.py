"""Builders shared by the TrainingJob unit tests: jobs, pods and the state hooks receive."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from etctl.common import JobSettings, JobState, ReplicaStatus
from etctl.jobs.trainingjob._api import TrainingJob
from etctl.runtime import KubeObject, ObjectView, Resource

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def job_document(
    *,
    name: str = "tj",
    replicas: int = 2,
    attach: str = "ssh",
    status: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    worker: Mapping[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": "ns", "uid": "uid-1"},
        "spec": {
            "launcherAttachMode": attach,
            "etReplicaSpecs": {
                "launcher": {
                    "template": {
                        "spec": {"containers": [{"name": "main", "image": "horovod"}]},
                    }
                },
                "worker": {
                    "replicas": replicas,
                    "template": {"spec": {"containers": [{"name": "w", "image": "horovod"}]}},
                    **(worker or {}),
                },
            },
            **spec,
        },
    }
    if status is not None:
        document["status"] = dict(status)
    if annotations:
        document["metadata"]["annotations"] = dict(annotations)
    return document


def parse(document: Mapping[str, Any]) -> TrainingJob:
    return TrainingJob.model_validate(copy.deepcopy(dict(document)))


def pod(
    name: str,
    phase: str = "Running",
    *,
    reason: str = "",
    exit_code: int | None = None,
    annotations: Mapping[str, str] | None = None,
    container: str = "main",
) -> KubeObject:
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if exit_code is not None:
        status["containerStatuses"] = [
            {"name": container, "state": {"terminated": {"exitCode": exit_code}}}
        ]
    metadata: dict[str, Any] = {"name": name, "namespace": "ns"}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "metadata": metadata,
        "spec": {"containers": [{"name": container}]},
        "status": status,
    }


def state(
    job: TrainingJob,
    *,
    workers: Sequence[ObjectView] = (),
    launchers: Sequence[ObjectView] = (),
    children: Mapping[Resource, Mapping[str, ObjectView]] | None = None,
    statuses: Mapping[str, ReplicaStatus] | None = None,
    now: datetime = NOW,
) -> JobState[TrainingJob]:
    return JobState(
        job=job,
        pods={"Worker": tuple(workers), "Launcher": tuple(launchers)},
        services={},
        children=children or {},
        replica_statuses=statuses or {},
        now=now,
        settings=JobSettings(),
    )
