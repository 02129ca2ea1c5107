"""What a reconcile decided: the writes to make, in order, and the facts its status is judged from.

The steps of a reconcile (:mod:`etctl.common._runpolicy`, :mod:`etctl.common._podgroups`,
:mod:`etctl.common._children`, :mod:`etctl.common._replicas`) are functions of the observation
(:class:`~etctl.common._observe.Observed`): each returns a :class:`Step`, the writes it wants and
the facts it established, and never writes anything itself. :func:`decide` strings them into one
:class:`Decision`; one place applies it (:mod:`etctl.common._apply`), and the status is judged
from the decision's facts and what the writes did (:mod:`etctl.common._judge`).

Writes come in :class:`Stage` s, applied in the order the steps gave them, each in the manner of
the controller: ``sequential`` (deletes, one after another), ``concurrent`` (a job's few extra
objects at once) or ``slow_start`` (pods and services, in growing batches, the two streams at the
same time); a stage that ``joins_next`` is applied at the same time as the stage after it. A
write may carry an :class:`Announcement`, an Event and a log line made once it succeeded (a
restart's Warning follows the delete that restarted the pod).

Facts are what the status records, as typed values, in the order the steps established them:
:class:`Change` (a condition set as decided), :class:`Suspension` (recorded once every delete of
the suspension went through), :class:`Restart` and :class:`WholeRestart` (counted once their
deletes went through), :class:`Created` (``<Type>Created`` True once pods of the type exist).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal

from etctl.common._plugin import Gate
from etctl.common._status import ConditionChange
from etctl.runtime import EventType, KubeObject, ObjectView, Resource

__all__ = [
    "Announcement",
    "Change",
    "Create",
    "Created",
    "Decision",
    "Delete",
    "Fact",
    "JobEvent",
    "Restart",
    "Stage",
    "Step",
    "Suspension",
    "Update",
    "WholeRestart",
    "Write",
]


@dataclass(frozen=True, slots=True)
class Announcement:
    """A Warning Event on the job, and a warning log line ``what``, made once a write succeeded."""

    what: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class JobEvent:
    """An Event on the job."""

    type: EventType
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Create:
    """Create ``obj`` (a child of the job); ``replica_type`` for a slot's pod or service."""

    res: Resource
    obj: KubeObject
    replica_type: str | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete exactly ``obj`` (its uid), then announce it (a restart).

    ``first``, when given, is deleted before it (a finished job's pod and its service: the
    service first, and the pod only if that went, since a service whose pod is gone would never be
    found again).
    """

    res: Resource
    obj: ObjectView
    then: Announcement | None = None
    first: ObjectView | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """Merge ``patch`` into the child ``obj`` (an extra object drifted, the PodGroup changed)."""

    res: Resource
    obj: ObjectView
    patch: KubeObject


Write = Create | Delete | Update


@dataclass(frozen=True, slots=True)
class Stage:
    """Writes applied together, in one manner (see the module docstring).

    Attributes:
        mode: ``sequential``, ``concurrent`` or ``slow_start``.
        writes: the writes (for ``slow_start``: the pods, one stream per replica type in
            ``streams``, sharing the burst budget already applied).
        services: for ``slow_start``: the services, created at the same time as the pods.
        streams: for ``slow_start``: the pods by replica type, in creation order, each with the
            announcement to make once any pod of the type was created (a vanished pod's).
        name: names the stage's tasks.
        events: Events on the job the step decided on (a name taken by a stranger, a template
            overridden), made when the stage is reached, before its writes.
        joins_next: the stage is applied at the same time as the next one (extra objects the
            pods do not need, with the pods), each keeping its own index and failures.
    """

    mode: Literal["sequential", "concurrent", "slow_start"]
    writes: tuple[Write, ...] = ()
    services: tuple[Create, ...] = ()
    streams: tuple[tuple[str, tuple[Create, ...], Announcement | None], ...] = ()
    name: str = ""
    events: tuple[JobEvent, ...] = ()
    joins_next: bool = False

    @property
    def deletes(self) -> tuple[Delete, ...]:
        """The stage's deletes."""
        return tuple(w for w in self.writes if isinstance(w, Delete))


@dataclass(frozen=True, slots=True)
class Change:
    """A condition set as decided."""

    change: ConditionChange


@dataclass(frozen=True, slots=True)
class Suspension:
    """The job is suspended: Running False and Suspended True once its deletes went through."""

    changes: tuple[ConditionChange, ...]
    stage: int


@dataclass(frozen=True, slots=True)
class Restart:
    """A failed pod deleted to be created again: one restart (plus its in-place ones) if it went."""

    pod: str
    extra: int
    replica_type: str


@dataclass(frozen=True, slots=True)
class WholeRestart:
    """Every pod deleted for a whole-job restart: one restart plus the in-place ones if all went.

    Once they went, ``announce`` is made and Restarting is set with ``change``.
    """

    extra: int
    change: ConditionChange
    stage: int
    announce: Announcement


@dataclass(frozen=True, slots=True)
class Created:
    """``<Type>Created`` follows the pods of the type that exist once creation is over."""

    replica_type: str
    gate: Gate


Fact = Change | Suspension | Restart | WholeRestart | Created


@dataclass(frozen=True, slots=True)
class Step:
    """What one step of the reconcile wants.

    Attributes:
        stages: the writes, in order.
        facts: what the status records, in order.
        timers: seconds after which the job wants a reconcile (a deadline, a gate's).
        halt: later steps are not run (the job failed, was suspended or restarts whole).
        judged: the plugin's judgement may be asked of the outcome (False once the step decided
            the job's fate itself).
        start_time: the job's start time, when the step set it.
        delete_job: the job is deleted (its TTL after finishing ran out).
        acted: facts that record what the writes did to the world (a failure enforced by deleting
            every pod), which the status must carry even when the job changed meanwhile.
    """

    stages: tuple[Stage, ...] = ()
    facts: tuple[Fact, ...] = ()
    timers: tuple[float, ...] = ()
    halt: bool = False
    judged: bool = True
    start_time: datetime | None = None
    delete_job: bool = False
    acted: tuple[ConditionChange, ...] = ()


@dataclass(frozen=True, slots=True)
class Decision:
    """Every step's wants, in order (see the module docstring).

    Attributes:
        stages: the writes, in order.
        facts: what the status records, in order.
        timers: when the job wants a reconcile.
        judged: the plugin's judgement is asked of the outcome.
        start_time: the job's start time.
        delete_job: the job is deleted.
        acted: facts recording what was done (see :class:`Step`).
    """

    stages: tuple[Stage, ...] = ()
    facts: tuple[Fact, ...] = ()
    timers: tuple[float, ...] = ()
    judged: bool = True
    start_time: datetime | None = None
    delete_job: bool = False
    acted: tuple[ConditionChange, ...] = field(default=())

    def then(self, step: Step) -> Decision:
        """This decision followed by ``step`` (its stages renumbered after these)."""
        offset = len(self.stages)
        facts = tuple(_shifted(fact, offset) for fact in step.facts)
        return Decision(
            stages=self.stages + step.stages,
            facts=self.facts + facts,
            timers=self.timers + step.timers,
            judged=self.judged and step.judged,
            start_time=step.start_time if step.start_time is not None else self.start_time,
            delete_job=self.delete_job or step.delete_job,
            acted=self.acted + step.acted,
        )


def _shifted(fact: Fact, offset: int) -> Fact:
    if isinstance(fact, Suspension | WholeRestart):
        return replace(fact, stage=fact.stage + offset)
    return fact


def wake_in(seconds: float | None) -> tuple[float, ...]:
    """The timer of ``seconds`` (none when None)."""
    return () if seconds is None else (max(seconds, 0.001),)


def sequential(writes: Sequence[Write], name: str = "") -> tuple[Stage, ...]:
    """One sequential stage of ``writes`` (none when there are none)."""
    return (Stage("sequential", tuple(writes), name=name),) if writes else ()
