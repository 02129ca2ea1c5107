"""Variations of the SimpleJob plugin that exercise one optional capability each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field

from etctl.common import (
    CRDVersion,
    CustomResource,
    Gate,
    JobState,
    JobStatus,
    ReplicaRef,
    get_condition,
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

    def gate(self, job: SimpleJob, replica_type: str, state: JobState[Any]) -> Gate:
        """Closed for the leader, failing 30 s after the creation time."""
        created = job.metadata.creation_timestamp
        if replica_type != LEADER or created is None:
            return Gate.opened()
        return Gate(
            open=False,
            reason="LeaderNeverReady",
            message="the leader could not start",
            fail_at=created + timedelta(seconds=30),
        )


class RecordedGatePlugin(SimpleJobPlugin):
    """The leader's gate is open from the start and asks for its condition to be recorded."""

    def gate(self, job: SimpleJob, replica_type: str, state: JobState[Any]) -> Gate:
        """Open for every type; recorded for the leader."""
        return Gate.opened(record=replica_type == LEADER)


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


PHASEDJOB = CustomResource(
    group="example.etctl.io",
    kind="PhasedJob",
    plural="phasedjobs",
    versions=(CRDVersion(name="v1", model=PhasedJob),),
)
PHASEDJOBS = PHASEDJOB.resource()


class PhasedPlugin(SimpleJobPlugin):
    """Plans workers from an annotation (PlansReplicas) and keeps a phase (ExtendsStatus)."""

    @property
    def resource(self) -> CustomResource:
        """The PhasedJob CRD."""
        return PHASEDJOB

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """Only PhasedJob."""
        return (PHASEDJOB,)

    @property
    def model(self) -> type[PhasedJob]:
        """Jobs parse into PhasedJob."""
        return PhasedJob

    def plan(self, job: SimpleJob, replica_type: str, state: JobState[Any]) -> Sequence[ReplicaRef]:
        """Workers at the indexes the ``members`` annotation lists."""
        if replica_type != WORKER:
            return []
        wanted = job.metadata.annotations.get("members", "0")
        indexes = [int(part) for part in wanted.split(",") if part]
        return [ReplicaRef(WORKER, i, slot_name(job.metadata.name, WORKER, i)) for i in indexes]

    def extend_status(self, job: SimpleJob, state: JobState[Any]) -> Mapping[str, Any]:
        """The latest condition as the phase, and the planned members."""
        conditions = job.status.conditions
        latest = conditions[-1].type if conditions else None
        created = get_condition(conditions, "Created")
        members = [ref.name for ref in self.plan(job, WORKER, state)]
        return {"phase": latest if created else None, "members": members}
