"""SimpleJob: the example job plugin of docs/plugins.md, run end to end by the tests.

A SimpleJob (``example.etctl.io/v1``) has workers and an optional leader. Every pod learns its
peers from the environment and from a ConfigMap; the leader gets a headless service and is only
created once every worker runs; the job succeeds when every pod succeeded and fails when a pod
that is never restarted fails.

It implements the required core plus three capabilities: ``BuildsServices`` (the leader's
service), ``BuildsExtraObjects`` (the peers ConfigMap) and ``GatesCreation`` (leader after
workers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from etctl.common import (
    CRDVersion,
    CustomResource,
    DesiredObject,
    Gate,
    JobConditionType,
    JobState,
    JobStatus,
    KubeObjectModel,
    PrinterColumn,
    ReplicaRef,
    ReplicaSpec,
    RestartPolicy,
    RunPolicy,
    ValueModel,
    Verdict,
    canonical_keys,
    validate_name,
    validate_replica_spec,
    validate_run_policy,
)
from etctl.runtime import CONFIGMAPS, KubeObject, Resource, podview

LEADER = "Leader"
WORKER = "Worker"


class SimpleJobSpec(ValueModel):
    """Desired state of a SimpleJob."""

    replica_specs: Annotated[dict[str, ReplicaSpec], canonical_keys([LEADER, WORKER])] = Field(
        default_factory=dict
    )
    """Replica specs by type: Worker (required) and Leader (optional, at most one pod)."""
    run_policy: RunPolicy = Field(default_factory=RunPolicy)
    """Cleanup, time limits, retries, gang scheduling and suspension."""


class SimpleJob(KubeObjectModel):
    """Workers and an optional leader that start once the workers run."""

    api_version: Literal["example.etctl.io/v1"] = "example.etctl.io/v1"
    kind: Literal["SimpleJob"] = "SimpleJob"
    spec: SimpleJobSpec = Field(default_factory=SimpleJobSpec)
    status: JobStatus = Field(default_factory=JobStatus)

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """Workers first, then the leader: the order pods are created in."""
        specs = self.spec.replica_specs
        return {rtype: specs[rtype] for rtype in (WORKER, LEADER) if rtype in specs}

    def run_policy(self) -> RunPolicy:
        """The run policy as written."""
        return self.spec.run_policy


SIMPLEJOB = CustomResource(
    group="example.etctl.io",
    kind="SimpleJob",
    plural="simplejobs",
    versions=(
        CRDVersion(
            name="v1",
            model=SimpleJob,
            printer_columns=(
                PrinterColumn(name="State", json_path=".status.conditions[-1:].type"),
                PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
            ),
        ),
    ),
)
SIMPLEJOBS = SIMPLEJOB.resource()


def peers(job: SimpleJob) -> list[str]:
    """Every pod name of the job, workers first (what each pod is told about the others)."""
    return [
        f"{job.metadata.name}-{rtype.lower()}-{index}"
        for rtype, spec in job.replica_specs().items()
        for index in range(spec.replicas)
    ]


class SimpleJobPlugin:
    """The SimpleJob kind."""

    owned_resources: Sequence[Resource] = (CONFIGMAPS,)

    @property
    def resource(self) -> CustomResource:
        """The SimpleJob CRD."""
        return SIMPLEJOB

    @property
    def custom_resources(self) -> Sequence[CustomResource]:
        """Only the SimpleJob CRD."""
        return (SIMPLEJOB,)

    @property
    def model(self) -> type[SimpleJob]:
        """Jobs parse into SimpleJob."""
        return SimpleJob

    def validate(self, job: SimpleJob) -> list[str]:
        """A worker spec is required and a leader is a single pod."""
        problems = validate_name(job.metadata.name, longest_suffix="-worker-99")
        specs = job.spec.replica_specs
        if WORKER not in specs:
            problems.append("spec.replicaSpecs.Worker: missing; a SimpleJob needs workers")
        for rtype, spec in specs.items():
            path = f"spec.replicaSpecs.{rtype}"
            if rtype not in (LEADER, WORKER):
                problems.append(f"{path}: unknown replica type; use Leader or Worker")
                continue
            maximum = 1 if rtype == LEADER else None
            problems.extend(validate_replica_spec(spec, path=path, maximum=maximum))
        problems.extend(validate_run_policy(job.spec.run_policy))
        return problems

    def decorate_pod(
        self, job: SimpleJob, pod: KubeObject, ref: ReplicaRef, state: JobState[SimpleJob]
    ) -> None:
        """Tell every container its role and peers, and mount the peers ConfigMap."""
        env = [
            {"name": "SIMPLEJOB_ROLE", "value": ref.replica_type.lower()},
            {"name": "SIMPLEJOB_INDEX", "value": str(ref.index)},
            {"name": "SIMPLEJOB_PEERS", "value": ",".join(peers(job))},
        ]
        spec = pod["spec"]
        for container in spec["containers"]:
            container["env"] = [*container.get("env", []), *env]
            mounts = container.setdefault("volumeMounts", [])
            mounts.append({"name": "peers", "mountPath": "/etc/simplejob"})
        volume = {"name": "peers", "configMap": {"name": f"{job.metadata.name}-peers"}}
        spec["volumes"] = [*spec.get("volumes", []), volume]

    def verdict(self, job: SimpleJob, state: JobState[SimpleJob]) -> Verdict | None:
        """Failed on an unrestarted failure, Succeeded when all pods succeeded, else Running."""
        who = f"SimpleJob {job.metadata.name}"
        specs = job.replica_specs()
        for rtype, spec in specs.items():
            counts = state.replica_statuses.get(rtype)
            if counts and counts.failed and spec.restart_policy is RestartPolicy.NEVER:
                message = f"{who} failed: {counts.failed} {rtype} pod(s) failed"
                return Verdict(JobConditionType.FAILED, "SimpleJobFailed", message)
        if all(
            (counts := state.replica_statuses.get(rtype)) is not None
            and counts.succeeded >= spec.replicas
            for rtype, spec in specs.items()
        ):
            return Verdict(JobConditionType.SUCCEEDED, "SimpleJobSucceeded", f"{who} succeeded")
        if any(counts.active for counts in state.replica_statuses.values()):
            return Verdict(JobConditionType.RUNNING, "SimpleJobRunning", f"{who} is running")
        return None

    def build_service(
        self, job: SimpleJob, ref: ReplicaRef, state: JobState[Any]
    ) -> KubeObject | None:
        """A headless service for the leader, so workers can reach it by name."""
        if ref.replica_type != LEADER:
            return None
        return {"spec": {"clusterIP": "None", "ports": [{"name": "rpc", "port": 7777}]}}

    def extra_objects(self, job: SimpleJob, state: JobState[Any]) -> Sequence[DesiredObject]:
        """The peers ConfigMap, kept in line with the spec."""

        def build() -> KubeObject:
            return {"data": {"peers": "\n".join(peers(job)) + "\n"}}

        return [DesiredObject(CONFIGMAPS, f"{job.metadata.name}-peers", build)]

    def gate(self, job: SimpleJob, replica_type: str, state: JobState[Any]) -> Gate:
        """The leader waits until every worker runs."""
        if replica_type != LEADER:
            return Gate.opened()
        wanted = job.replica_specs()[WORKER].replicas
        running = sum(1 for pod in state.pods_of(WORKER) if podview.phase(pod) == "Running")
        if running >= wanted:
            return Gate.opened()
        return Gate(
            open=False,
            reason="WaitingForWorkers",
            message=f"{running} of {wanted} workers are running",
        )
