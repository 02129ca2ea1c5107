"""One reconcile of one job: what was observed, and what the reconcile decided and did.

A :class:`Round` is created after the job's children are claimed and lives for one reconcile. The
policy steps of the JobController read it and record into it; nothing in it outlives the
reconcile (the next one observes the world again). It keeps:

* the observation: the parsed job, its raw object, its claimed pods, services, extra objects and
  PodGroup;
* the decisions: condition changes in the order they were decided, the new start time and restart
  count, whether the whole job restarted, timers to requeue for, and errors of writes that failed
  (raised only after the status is written, so a failed write never loses a recorded restart),
  and the pods the server refused as invalid (reported as the ``ReplicaFailure`` condition);
  :meth:`Round.delta` is the part of them that records what the round did to the world (restarts,
  a failure enforced by deleting every pod), which the status must carry even when the job changed
  meanwhile;
* the effects: pods created and deleted during the round, so :meth:`Round.state` describes the
  world as the round leaves it (deleted pods terminating, created pods present), which is what the
  status reports and what the plugin's verdict judges.

Invariant: :meth:`Round.state` is computed from the observation plus the effects only; hooks of the
plugin always receive a consistent view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from etctl.common._api import (
    ConditionStatus,
    ReplicaSpec,
    ReplicaStatus,
    ReplicatedJob,
    format_timestamp,
)
from etctl.common._labels import replica_selector, replica_type_of, selector_string
from etctl.common._plugin import JobSettings, JobState, PlansReplicas, ReplicaRef
from etctl.common._slots import default_plan
from etctl.common._status import ConditionChange, StatusDelta, replica_statuses
from etctl.errors import EtctlError, Invalid
from etctl.runtime import PODS, SERVICES, ObjectView, Resource, objects

__all__ = ["Round"]

JobT = TypeVar("JobT", bound=ReplicatedJob)


@dataclass(eq=False)
class Round(Generic[JobT]):
    """The observation, decisions and effects of one reconcile (see the module docstring)."""

    kind: str
    job: JobT
    raw: ObjectView
    owner_ref: dict[str, Any]
    settings: JobSettings
    now: datetime
    pods: list[ObjectView]
    services: list[ObjectView]
    extras: dict[Resource, list[ObjectView]] = field(default_factory=dict)
    podgroup: ObjectView | None = None
    changes: list[ConditionChange] = field(default_factory=list)
    acted: list[ConditionChange] = field(default_factory=list)
    restarting: ConditionChange | None = None
    start_time: datetime | None = None
    restart_count: int = 0
    restarted_whole: bool = False
    judge: bool = True
    requeue: list[float] = field(default_factory=list)
    errors: list[EtctlError] = field(default_factory=list)
    restarts: int = 0
    refused: list[tuple[str, Invalid]] = field(default_factory=list)
    created: int = 0
    planner: PlansReplicas[Any] | None = None
    _plans: dict[str, tuple[ReplicaRef, ...]] | None = field(default=None, init=False)
    _deleted: set[str] = field(default_factory=set, init=False)
    _specs: dict[str, ReplicaSpec] = field(default_factory=dict, init=False)
    _by_lower: dict[str, str] = field(default_factory=dict, init=False)
    _positions: dict[str, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._positions = {objects.name(pod): i for i, pod in enumerate(self.pods)}
        self._specs = dict(self.job.replica_specs())
        self._by_lower = {rtype.lower(): rtype for rtype in self._specs}
        self.start_time = self.job.status.start_time
        self.restart_count = self.job.status.restart_count

    # -- identity

    @property
    def name(self) -> str:
        """The job's name."""
        return objects.name(self.raw)

    @property
    def namespace(self) -> str:
        """The job's namespace."""
        return objects.namespace(self.raw)

    @property
    def uid(self) -> str:
        """The job's uid."""
        return objects.uid(self.raw)

    @property
    def specs(self) -> Mapping[str, ReplicaSpec]:
        """The replica specs by type, in the model's creation order."""
        return self._specs

    def replica_type(self, obj: ObjectView) -> str | None:
        """The replica type (spelled as in the spec) an object's label names, or None."""
        label = replica_type_of(obj)
        return self._by_lower.get(label.lower()) if label else None

    # -- decisions

    def change(self, cond_type: str, status: ConditionStatus, reason: str, message: str) -> None:
        """Record a condition change (applied in the order recorded)."""
        self.changes.append(ConditionChange(cond_type, status, reason, message))

    def fail(self, reason: str, message: str, *, acted: bool = False) -> None:
        """Record that the job failed; the plugin's verdict is no longer asked.

        Args:
            reason: the condition's reason.
            message: the condition's message.
            acted: the round deletes the job's pods because of this failure, so the failure is
                part of :meth:`delta`: once the pods are gone, nothing else would show it.
        """
        self.change("Failed", ConditionStatus.TRUE, reason, message)
        if acted:
            self.acted.append(self.changes[-1])
        self.judge = False

    def wake_in(self, seconds: float | None) -> None:
        """Ask for a reconcile after ``seconds`` (ignored when None)."""
        if seconds is not None:
            self.requeue.append(max(seconds, 0.001))

    def delta(self) -> StatusDelta:
        """What the round did that only the status will remember (restarts, enforced failures)."""
        conditions = [*self.acted]
        if self.restarting is not None:
            conditions.append(self.restarting)
        return StatusDelta(
            restarts=self.restart_count - self.job.status.restart_count,
            conditions=tuple(conditions),
            forget_completions=self.restarted_whole,
        )

    # -- effects

    def pod_deleted(self, pod: ObjectView) -> None:
        """A pod was deleted during the round: it counts as terminating from now on.

        Its name stays taken for the rest of the round, so its slot is refilled by a later
        reconcile, once the deletion is observed (a graceful deletion may take a while).
        """
        name = objects.name(pod)
        self._deleted.add(name)
        at = self._positions.get(name)
        if at is not None:
            # In place: rebuilding the list per deletion would make deleting every pod quadratic.
            found = self.pods[at]
            stamp = format_timestamp(self.now)
            self.pods[at] = {
                **found,
                "metadata": {**objects.meta(found), "deletionTimestamp": stamp},
            }

    def pod_created(self, pod: ObjectView) -> None:
        """A pod was created during the round."""
        self._positions[objects.name(pod)] = len(self.pods)
        self.pods.append(pod)
        self.created += 1

    def pod_refused(self, name: str, error: Invalid) -> None:
        """The server refused to create pod ``name`` as invalid (a 422: retrying cannot heal it)."""
        self.refused.append((name, error))

    def service_deleted(self, service: ObjectView) -> None:
        """A service was deleted during the round."""
        name = objects.name(service)
        self.services = [s for s in self.services if objects.name(s) != name]

    def service_created(self, service: ObjectView) -> None:
        """A service was created during the round."""
        self.services.append(service)

    # -- views

    def live_pods(self) -> list[ObjectView]:
        """Pods not being deleted."""
        return [pod for pod in self.pods if not objects.is_terminating(pod)]

    def pods_of(self, replica_type: str, *, live: bool = True) -> list[ObjectView]:
        """The pods of one replica type (terminating ones too when ``live`` is False)."""
        pods = self.live_pods() if live else self.pods
        return [pod for pod in pods if self.replica_type(pod) == replica_type]

    def stray_pods(self) -> list[ObjectView]:
        """Live pods whose replica type the job no longer has (or that carry none)."""
        return [pod for pod in self.live_pods() if self.replica_type(pod) is None]

    def selector(self, replica_type: str) -> str:
        """The label selector of one replica type's pods, in string form."""
        labels = replica_selector(self.name, self.settings.operator_name, replica_type)
        return selector_string(labels)

    def plans(self) -> dict[str, tuple[ReplicaRef, ...]]:
        """The slots of every replica type, planned once per round (see :mod:`.slots`)."""
        if self._plans is None:
            if self.planner is None:
                self._plans = {
                    rtype: default_plan(self.name, rtype, spec.replicas)
                    for rtype, spec in self._specs.items()
                }
            else:
                state = self._state(planned=False)
                self._plans = {
                    rtype: tuple(self.planner.plan(self.job, rtype, state)) for rtype in self._specs
                }
        return self._plans

    def replica_statuses(self, *, planned: bool = True) -> dict[str, ReplicaStatus]:
        """The replica statuses as the round leaves the pods."""
        plans: dict[str, tuple[ReplicaRef, ...] | None] = (
            dict(self.plans()) if planned else dict.fromkeys(self._specs)
        )
        counted = [pod for pod in self.pods if objects.name(pod) not in self._deleted]
        return replica_statuses(
            {rtype: [p for p in counted if self.replica_type(p) == rtype] for rtype in self._specs},
            plans=plans,
            recorded=self.job.status.replica_statuses,
            selectors={rtype: self.selector(rtype) for rtype in self._specs},
            restarted=self.restarted_whole,
            suspended=self.job.run_policy().suspend,
        )

    def state(self) -> JobState[JobT]:
        """What the plugin's hooks see: the world as the round leaves it so far."""
        return self._state(planned=True)

    def _state(self, *, planned: bool) -> JobState[JobT]:
        live_services = {
            objects.name(svc): svc for svc in self.services if not objects.is_terminating(svc)
        }
        children = {
            res: {objects.name(obj): obj for obj in found if not objects.is_terminating(obj)}
            for res, found in self.extras.items()
        }
        return JobState(
            job=self.job,
            pods={rtype: tuple(self.pods_of(rtype)) for rtype in self._specs},
            services=live_services,
            children=children,
            replica_statuses=self.replica_statuses(planned=planned),
            now=self.now,
            settings=self.settings,
        )

    def children_of(self, res: Resource) -> list[ObjectView]:
        """The claimed children of ``res`` (pods, services or an extra resource)."""
        if res == PODS:
            return self.pods
        if res == SERVICES:
            return self.services
        return self.extras.get(res, [])
