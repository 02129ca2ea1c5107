"""What one reconcile observed of a job, built once, and the states its phases are shown.

An :class:`Observed` is read once per reconcile, after the job's children are claimed: the parsed
job, its raw object, its pods, services, extra children and PodGroup, and the time. It never
changes; every step of the reconcile reads it and returns what it wants (:mod:`etctl.common._plan`),
and the world as those writes leave it is described by :class:`Effects`, once they are applied.

The plugin's phases see a :class:`~etctl.common.JobState`, built from an observation by
:meth:`Observed.state`, at two moments only:

* **as observed** (no effects), for planning replicas and building the desired objects;
* **as the reconcile leaves it** (the effects of the writes that succeeded: deleted pods counted as
  terminating, created pods present), for judging the outcome and extending the status, which is
  what the status reports.

Invariant: a state is computed from the observation plus effects only, so a phase always gets a
consistent view, and the observation is never mutated (objects from the cache are shared).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from etctl.common._api import ReplicaSpec, ReplicatedJob, format_timestamp
from etctl.common._labels import replica_selector, replica_type_of, selector_string
from etctl.common._plugin import JobSettings, JobState, Replicas
from etctl.common._status import replica_statuses
from etctl.runtime import ObjectView, Resource, objects

__all__ = ["Effects", "Observed", "Plans"]

JobT = TypeVar("JobT", bound=ReplicatedJob)

Plans = Mapping[str, Replicas]
"""The plan of every replica type (what the plan phase returned)."""


@dataclass(frozen=True, slots=True)
class Effects:
    """The world as a reconcile's writes left it, next to what it observed.

    Attributes:
        deleted: names of the pods deleted (they count as terminating from now on).
        created: the pods created (as the API server returned them).
        services_deleted: names of the services deleted.
        services_created: the services created.
        extras_created: the extra children created, by resource.
        restarted: every pod was deleted for a whole-job restart (recorded completions go).
    """

    deleted: frozenset[str] = frozenset()
    created: tuple[ObjectView, ...] = ()
    services_deleted: frozenset[str] = frozenset()
    services_created: tuple[ObjectView, ...] = ()
    extras_created: Mapping[Resource, tuple[ObjectView, ...]] = field(default_factory=dict)
    restarted: bool = False

    @property
    def unchanged(self) -> bool:
        """Whether the writes changed nothing the phases see."""
        return not (
            self.deleted
            or self.created
            or self.services_deleted
            or self.services_created
            or any(self.extras_created.values())
            or self.restarted
        )


NO_EFFECTS = Effects()


@dataclass(frozen=True, slots=True)
class Observed(Generic[JobT]):
    """One job as one reconcile read it (see the module docstring).

    Attributes:
        kind: the job's kind.
        job: the parsed job.
        raw: the job as read (the version every write of the reconcile is guarded by).
        owner_ref: the job's controller owner reference, as children carry it.
        settings: operator-wide settings.
        now: the reconcile's time.
        pods: the job's claimed pods, terminating ones included.
        services: the job's claimed services.
        extras: the job's claimed extra children, by resource.
        podgroup: the job's PodGroup, when gang scheduling is on and it controls one.
    """

    kind: str
    job: JobT
    raw: ObjectView
    owner_ref: Mapping[str, Any]
    settings: JobSettings
    now: datetime
    pods: tuple[ObjectView, ...]
    services: tuple[ObjectView, ...] = ()
    extras: Mapping[Resource, tuple[ObjectView, ...]] = field(default_factory=dict)
    podgroup: ObjectView | None = None
    specs: Mapping[str, ReplicaSpec] = field(init=False)
    _by_lower: Mapping[str, str] = field(init=False)
    _states: dict[int, tuple[Plans | None, JobState[JobT]]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        specs = dict(self.job.replica_specs())
        object.__setattr__(self, "specs", specs)
        object.__setattr__(self, "_by_lower", {rtype.lower(): rtype for rtype in specs})
        object.__setattr__(self, "_states", {})

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

    def replica_type(self, obj: ObjectView) -> str | None:
        """The replica type (spelled as in the spec) an object's label names, or None."""
        label = replica_type_of(obj)
        return self._by_lower.get(label.lower()) if label else None

    def selector(self, replica_type: str) -> str:
        """The label selector of one replica type's pods, in string form."""
        labels = replica_selector(self.name, self.settings.operator_name, replica_type)
        return selector_string(labels)

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

    def live_services(self) -> list[ObjectView]:
        """Services not being deleted."""
        return [svc for svc in self.services if not objects.is_terminating(svc)]

    # -- what the phases see

    def pods_after(self, effects: Effects) -> list[ObjectView]:
        """The pods as ``effects`` leave them: deleted ones terminating, created ones present."""
        if not effects.deleted and not effects.created:
            return list(self.pods)
        stamp = format_timestamp(self.now)
        out: list[ObjectView] = []
        for found in self.pods:
            if objects.name(found) in effects.deleted and not objects.is_terminating(found):
                meta = {**objects.meta(found), "deletionTimestamp": stamp}
                out.append({**found, "metadata": meta})
            else:
                out.append(found)
        out.extend(effects.created)
        return out

    def state(self, plans: Plans | None = None, effects: Effects = NO_EFFECTS) -> JobState[JobT]:
        """What the plugin's phases see: the job as observed, or as ``effects`` leave it.

        Args:
            plans: the plan of every replica type, once planned (replica statuses then count
                completions of planned slots only).
            effects: what the reconcile's writes did.

        A state the writes did not change is built once per plan and then shared: a reconcile
        that deletes and creates nothing shows its phases one state, not one per step.
        """
        unchanged = effects.unchanged
        if unchanged and (found := self._states.get(id(plans))) is not None and found[0] is plans:
            return found[1]
        built = self._build_state(plans, effects)
        if unchanged:
            self._states[id(plans)] = (plans, built)
        return built

    def _build_state(self, plans: Plans | None, effects: Effects) -> JobState[JobT]:
        pods = self.pods_after(effects)
        live = [pod for pod in pods if not objects.is_terminating(pod)]
        by_type = {
            rtype: tuple(p for p in live if self.replica_type(p) == rtype) for rtype in self.specs
        }
        counted = [pod for pod in pods if objects.name(pod) not in effects.deleted]
        services = {
            objects.name(svc): svc
            for svc in (*self.services, *effects.services_created)
            if not objects.is_terminating(svc) and objects.name(svc) not in effects.services_deleted
        }
        children = {
            res: {
                objects.name(o): o
                for o in (*found, *effects.extras_created.get(res, ()))
                if not objects.is_terminating(o)
            }
            for res, found in self.extras.items()
        }
        slots = {rtype: planned.slots for rtype, planned in (plans or {}).items()}
        statuses = replica_statuses(
            {rtype: [p for p in counted if self.replica_type(p) == rtype] for rtype in self.specs},
            plans={rtype: slots.get(rtype) for rtype in self.specs},
            recorded=self.job.status.replica_statuses,
            selectors={rtype: self.selector(rtype) for rtype in self.specs},
            restarted=effects.restarted,
            suspended=self.job.run_policy().suspend,
        )
        return JobState(
            job=self.job,
            pods=by_type,
            services=services,
            children=children,
            replica_statuses=statuses,
            now=self.now,
            settings=self.settings,
            plans=plans or {},
        )


def by_name(found: Iterable[ObjectView]) -> dict[str, ObjectView]:
    """Objects keyed by name."""
    return {objects.name(obj): obj for obj in found}
