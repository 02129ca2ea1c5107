"""Variations of the SimpleJob plugin that exercise one phase or capability each."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field

from etctl.common import (
    Gate,
    JobState,
    JobStatus,
    ReplicaRef,
    Replicas,
    get_condition,
    job_resource,
    slot_name,
)
from tests.common.simplejob import LEADER, WORKER, SimpleJob, SimpleJobPlugin


class RestartingPlugin(SimpleJobPlugin):
    """Restarts the whole job when it would fail (RestartsWholeJob)."""

    def restarts_on_failure(self, job: SimpleJob) -> bool:
        """Always restart, within the backoff limit."""
        return True


class DeadlineGatePlugin(SimpleJobPlugin):
    """The leader's gate never opens and gives up 30 s after the job was created."""

    def plan(self, job: SimpleJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """The leader waits, failing 30 s after the creation time."""
        created = job.metadata.creation_timestamp
        if planned.replica_type != LEADER or created is None:
            return planned
        return planned.waiting(
            "LeaderNeverReady",
            "the leader could not start",
            fail_at=created + timedelta(seconds=30),
        )


class RecordedGatePlugin(SimpleJobPlugin):
    """The leader's gate is open from the start and asks for its condition to be recorded."""

    def plan(self, job: SimpleJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """Open for every type; recorded for the leader."""
        return planned.gated(Gate.opened(record=planned.replica_type == LEADER))


class PhasedStatus(JobStatus):
    """A status with fields of its own."""

    phase: str | None = None
    """The latest condition type."""
    members: list[str] = Field(default_factory=list)
    """The planned worker pods."""


class PhasedJob(SimpleJob):
    """A SimpleJob whose status has a phase and a member list."""

    api_version: Literal["example.etctl.io/v1"] = "example.etctl.io/v1"
    kind: Literal["PhasedJob"] = "PhasedJob"  # type: ignore[assignment]
    status: PhasedStatus = Field(default_factory=PhasedStatus)


PHASEDJOB = job_resource(PhasedJob, plural="phasedjobs")
PHASEDJOBS = PHASEDJOB.resource()


class PhasedPlugin(SimpleJobPlugin):
    """Plans workers from an annotation (plan) and keeps a phase (extend status)."""

    resource = PHASEDJOB
    model = PhasedJob

    def plan(self, job: SimpleJob, planned: Replicas, state: JobState[Any]) -> Replicas:
        """Workers at the indexes the ``members`` annotation lists; no leader."""
        if planned.replica_type != WORKER:
            return dataclasses.replace(planned, slots=())
        wanted = job.metadata.annotations.get("members", "0")
        indexes = [int(part) for part in wanted.split(",") if part]
        slots = tuple(
            ReplicaRef(WORKER, i, slot_name(job.metadata.name, WORKER, i)) for i in indexes
        )
        return dataclasses.replace(planned, slots=slots)

    def extend_status(self, job: SimpleJob, state: JobState[Any]) -> Mapping[str, Any]:
        """The latest condition as the phase, and the planned members."""
        conditions = job.status.conditions
        latest = conditions[-1].type if conditions else None
        created = get_condition(conditions, "Created")
        planned = state.plans.get(WORKER)
        members = [ref.name for ref in planned.slots] if planned is not None else []
        return {"phase": latest if created else None, "members": members}
