"""The generic JobController: one reconcile for every job kind, driven by a plugin.

:meth:`JobController.reconcile` computes, then applies:

1. **Read** the job from the cache (which shows this process's writes; :mod:`etctl.common._ledger`
   covers the ones it cannot). Gone: forget what is pending for it. Being deleted: nothing
   (garbage collection removes what it owns). Parse it into the plugin's model once. A job whose
   ``runPolicy.managedBy`` names another controller is left alone entirely (no condition, no child,
   no event), as mpi-operator and training-operator do; a parse error or a problem from the
   *validate and default* phase (:meth:`~etctl.common._phases.Phases.validate`) fails the job
   (``<Kind>Invalid``, an Event) without retrying: the operator keeps running, the user fixes
   the manifest.
2. **Observe** its children once (:mod:`etctl.common._observe`, claiming with
   :mod:`etctl.common._claim`): pods, services, extra objects and the PodGroup it controls; adopt
   matching orphans, release strays. While a write of the job's children is not in the cache yet
   (:meth:`~etctl.common._ledger.WriteLedger.pending`), stop: deciding from a cache without it
   would double-create. The children's events requeue the job; the ledger's TTL bounds the wait.
3. **Plan** the replicas (:meth:`~etctl.common._phases.Phases.plan`): every type's slots and
   gate; a plan's warning (a limit it met) is sent as a Warning Event once per job generation.
4. **Decide** (:mod:`etctl.common._decide`): the steps of the run policy, the gang, the extra
   objects and the replicas each return the writes they want and the facts they establish.
5. **Apply** (:mod:`etctl.common._apply`): the one place the writes are made, in the order and
   batches the steps gave.
6. **Judge** (:mod:`etctl.common._judge`): the status from the decision's facts and what the writes
   did, the kind's *judge the outcome* and *extend status* phases included, written once as a
   guarded merge patch when it changed. A pod the server refused as invalid (a 422: the template
   is wrong, and no retry heals it) sets the condition ``ReplicaFailure`` (reason ``PodInvalid``,
   the server's message) and a Warning Event, while the create keeps being retried with backoff;
   the condition goes once pods are created again. Transient errors (5xx, 429, timeouts) only
   back off. When the status write conflicts with a change of the job, what the writes did
   (restarts, a failure enforced by deleting every pod) is applied to the job as it is now
   (:meth:`~etctl.common._writer.JobWriter.record`); the rest is judged again by the next
   reconcile.

The reconcile returns ``Result(requeue_after=...)`` for the earliest timer (deadline, TTL, gate
deadline, a pending write's expiry), so time-based policies fire with no other event. Errors of
writes are raised after the status is written, so the controller retries with backoff without
losing what the reconcile recorded.

**Stopping.** A reconcile in flight when its controller begins to stop starts no further creation
batch (:mod:`etctl.common._batches`), and its status records only what exists and what it did: a
pod's creation is recorded from the pod (the create's answer or the cache), never from the
decision to create it, so a creation the stop cut short leaves nothing claiming it happened, and
the next process creates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, Protocol, TypeVar, cast

from pydantic import BaseModel, ValidationError

from etctl.common import _gang as gang
from etctl.common._api import ConditionStatus, JobConditionType, ReplicatedJob
from etctl.common._apply import Applier, announce
from etctl.common._claim import claim
from etctl.common._conditions import is_finished
from etctl.common._decide import Steps, decide
from etctl.common._jobmetrics import JOB_RECONCILE_TIME
from etctl.common._judge import judge
from etctl.common._labels import BY_JOB, REPLICA_INDEX, by_job, job_selector
from etctl.common._ledger import Recorder, WriteLedger
from etctl.common._observe import Observed, Plans
from etctl.common._phases import Phases
from etctl.common._plan import Announcement
from etctl.common._plugin import Capabilities, JobPlugin, JobSettings
from etctl.common._podgroups import controlled_podgroup
from etctl.common._scaling.adoption import controlled_scalers
from etctl.common._scaling.elastic import read_members, replicas_path
from etctl.common._scaling.observe import ObservedScaler, parse_scaler
from etctl.common._scaling.rendering import scaling_change
from etctl.common._status import (
    ConditionChange,
    compute_status,
    parse_status,
    status_patch,
    stored_status,
)
from etctl.common._tracking import ChildEventHandler
from etctl.common._validation import parse_problems
from etctl.common._writer import JobWriter
from etctl.errors import ConfigError, EtctlError
from etctl.log import get_logger
from etctl.runtime import (
    DEFAULT_TTL,
    PODS,
    PRIORITYCLASSES,
    SERVICES,
    CacheReader,
    Client,
    Clock,
    IndexFunc,
    ObjectView,
    Request,
    Resource,
    Result,
    objects,
)

__all__ = ["ChildReader", "JobController"]

log = get_logger(__name__)

JobT = TypeVar("JobT", bound=ReplicatedJob)

# After a status write conflicts, the job's own watch event normally requeues it; this bounds the
# wait if that event is lost.
_CONFLICT_REQUEUE = 1.0


class ChildReader(CacheReader, Protocol):
    """The cache reads of the JobController, and the indexes it adds at set-up."""

    def add_indexers(self, res: Resource, indexers: Mapping[str, IndexFunc]) -> None:
        """Index the objects of ``res`` (raises ValueError for an index name that exists)."""
        ...


class JobController(Generic[JobT]):
    """Reconciles the jobs of one kind, as its plugin describes them.

    Args:
        plugin: the job kind.
        client: the API client (writes, and the few reads that must be fresh).
        cache: the informer cache of the job resource and every resource in
            :attr:`child_resources` (and PriorityClasses when gang scheduling is on).
        recorder: where Events go.
        clock: the time of conditions, timers and expectations.
        settings: operator-wide settings.
        expectations_ttl: how long an unobserved write blocks a job at most.

    Raises:
        ConfigError: an unknown gang scheduler, an extra resource that is not namespaced, or a
            plugin model that is not a pydantic model.
    """

    def __init__(
        self,
        plugin: JobPlugin[JobT],
        *,
        client: Client,
        cache: ChildReader,
        recorder: Recorder,
        clock: Clock,
        settings: JobSettings | None = None,
        expectations_ttl: float = DEFAULT_TTL,
    ) -> None:
        self.plugin = plugin
        self.capabilities = Capabilities.of(plugin)
        self.phases = Phases(plugin, self.capabilities)
        self.settings = settings or JobSettings()
        self.resource = plugin.resource.resource()
        self.kind = plugin.resource.kind
        self._check_plugin()
        self._cache = cache
        self._clock = clock
        self.ledger = WriteLedger(
            client, cache, clock=clock, recorder=recorder, ttl=expectations_ttl
        )
        self._scheduler = gang.scheduler_for(self.settings.gang_scheduler)
        self._steps = Steps(self.phases, self._scheduler, cache, self.ledger)
        # Warnings of the plan phase already sent, by job: (generation, what was said).
        self._warned: dict[tuple[str, str], tuple[int, set[tuple[str, str]]]] = {}
        self._applier = Applier(self.ledger, self.resource)
        elastic = self.capabilities.elastic
        decided = elastic.elastic.fields.decided() if elastic is not None else ()
        self._writer = JobWriter(self.resource, self.ledger, guarded=decided)
        for res in self.child_resources:
            _index_by_job(cache, res)

    def _check_plugin(self) -> None:
        model: object = self.plugin.model
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            msg = f"{self.kind}: the plugin's model must be a pydantic model, not {model!r}"
            raise ConfigError(msg)
        for res in self.capabilities.owned_resources:
            if not res.namespaced or res == PODS:
                msg = f"{self.kind}: extra objects must be namespaced, not pods: {res}"
                raise ConfigError(msg)
        if self.capabilities.elastic is not None:
            replicas_path(self.plugin.resource)  # an elastic kind's CRD must have /scale

    # -- wiring

    @property
    def child_resources(self) -> tuple[Resource, ...]:
        """The resources of the children the controller observes."""
        found = [PODS]
        if self.capabilities.services is not None:
            found.append(SERVICES)
        found.extend(res for res in self.capabilities.owned_resources if res not in found)
        if self._scheduler is not None:
            found.append(self._scheduler.podgroups)
        return tuple(found)

    def child_label_selector(self, res: Resource) -> str | None:
        """The label selector of the informer of child resource ``res`` (None: unselected).

        Pods, services and extra objects carry the operator's ``operator-name`` label (every
        version of the controller created them so), and only those can be claimed, so their
        informers select on it. PodGroups never carried it: theirs stays unselected (one object per
        gang-scheduled job of the cluster, not one per pod).
        """
        if self._scheduler is not None and res == self._scheduler.podgroups:
            return None
        return self.settings.child_selector

    @property
    def lookup_resources(self) -> tuple[Resource, ...]:
        """Resources the controller only reads (their informers must exist, nothing enqueues)."""
        return (PRIORITYCLASSES,) if self._scheduler is not None else ()

    def child_handler(self, res: Resource) -> ChildEventHandler:
        """The event handler of one child resource's informer (enqueues the owning job)."""
        return ChildEventHandler(self.resource)

    # -- the reconcile

    async def reconcile(self, request: Request) -> Result:
        """Make one job's children and status match its spec (see the module docstring)."""
        started = self._clock.monotonic()
        try:
            return await self._reconcile(request)
        finally:
            elapsed = self._clock.monotonic() - started
            JOB_RECONCILE_TIME.labels(kind=self.kind).observe(elapsed)

    async def _reconcile(self, request: Request) -> Result:
        raw = await self._writer.read(request)
        if raw is None:
            self._forget(request)
            return Result()
        if objects.is_terminating(raw):
            return Result()
        job = self._parse(raw)
        if isinstance(job, list):
            return await self._reject(raw, None, job)
        return await self._reconcile_job(raw, job)

    async def _reconcile_job(self, raw: ObjectView, job: JobT) -> Result:
        if manager := job.run_policy().managed_by:
            # Another controller's job (runPolicy.managedBy): no status, no children, no event.
            log.debug("job managed by another controller; left alone", managed_by=manager)
            return Result()
        if not is_finished(job.status.conditions) and (problems := self.phases.validate(job)):
            return await self._reject(raw, job, problems)
        seen = await self._observe(raw, job)
        if (wait := self.ledger.pending(seen.uid)) is not None:
            return Result(requeue_after=wait)
        plans = self.phases.plan(job, seen.state)
        self._warn(seen, plans)
        decision = decide(seen, plans, self._steps)
        outcome = await self._applier.apply(seen, decision)
        if outcome.job_deleted:
            self._forget(Request(seen.namespace, seen.name))
            return Result()
        elastic = self.capabilities.elastic
        judged = judge(
            seen,
            plans,
            decision,
            outcome,
            phases=self.phases,
            ledger=self.ledger,
            scaling=self._scaling(job, raw),
            phase_field=elastic.elastic.fields.phase if elastic is not None else None,
        )
        patch = status_patch(stored_status(raw), judged.status, judged.extra)
        if patch is not None:
            if await self._writer.write_status(raw, patch) is None:
                if judged.delta:
                    await self._writer.record(
                        raw, judged.delta, now=seen.now, restarts=judged.restarts
                    )
                return Result(requeue_after=_CONFLICT_REQUEUE)
            self._writer.announce(
                raw, job.status.conditions, judged.status.conditions, restarts=judged.restarts
            )
        if outcome.errors:
            raise outcome.errors[0]
        return Result(requeue_after=min(decision.timers)) if decision.timers else Result()

    # -- read

    def _scaling(self, job: JobT, raw: ObjectView) -> ConditionChange | None:
        """The ``Scaling`` condition an elastic job should show (None: no change)."""
        elastic = self.capabilities.elastic
        if elastic is None:
            return None
        members = read_members(job.status, elastic.elastic.fields)
        name = objects.name(raw)
        return scaling_change(self.kind, name, members, job.status.conditions, self._scalers(raw))

    def _scalers(self, raw: ObjectView) -> list[ObservedScaler]:
        """The scalers the job controls, from the cache (none when scalers are not cached)."""
        try:
            controlled = [obj for _, obj in controlled_scalers(self._cache, raw)]
        except EtctlError:
            return []
        return [parsed for obj in controlled if (parsed := parse_scaler(obj)) is not None]

    def _warn(self, seen: Observed[JobT], plans: Plans) -> None:
        """Send the plan's warnings, once per job generation."""
        key = (seen.namespace, seen.name)
        generation = seen.job.metadata.generation
        said = self._warned.get(key)
        if said is None or said[0] != generation:
            said = (generation, set())
            self._warned[key] = said
        for planned in plans.values():
            if planned.warning is None or planned.warning in said[1]:
                continue
            said[1].add(planned.warning)
            reason, message = planned.warning
            announce(self.ledger, seen, Announcement("replicas limited", reason, message))

    def _forget(self, request: Request) -> None:
        self._warned.pop((request.namespace, request.name), None)
        self.ledger.forget_owner_named(request.namespace, request.name)
        self.ledger.forget(self.resource, request.namespace, request.name)

    def _parse(self, raw: ObjectView) -> JobT | list[str]:
        model = cast("type[BaseModel]", self.plugin.model)
        try:
            return cast("JobT", model.model_validate(raw))
        except ValidationError as exc:
            return parse_problems(exc)

    async def _reject(self, raw: ObjectView, job: JobT | None, problems: list[str]) -> Result:
        current = job.status if job is not None else parse_status(raw)
        message = f"{self.kind} {objects.name(raw)} is invalid: " + "; ".join(problems)
        change = ConditionChange(
            JobConditionType.FAILED, ConditionStatus.TRUE, f"{self.kind}Invalid", message
        )
        status = compute_status(
            current,
            changes=[change],
            replicas=current.replica_statuses,
            start_time=current.start_time,
            restart_count=current.restart_count,
            now=self._clock.now(),
        )
        patch = status_patch(stored_status(raw), status, {})
        if patch is not None:
            if await self._writer.write_status(raw, patch) is None:
                return Result(requeue_after=_CONFLICT_REQUEUE)
            self._writer.announce(raw, current.conditions, status.conditions)
        return Result()

    # -- observe

    async def _observe(self, raw: ObjectView, job: JobT) -> Observed[JobT]:
        owner_ref = objects.make_controller_ref(raw, self.resource)
        fresh: list[bool] = []

        async def can_adopt() -> bool:
            if not fresh:
                found = await self.ledger.fresh(self.resource, raw)
                fresh.append(found is not None and not objects.is_terminating(found))
            return fresh[0]

        async def claimed(res: Resource) -> tuple[ObjectView, ...]:
            found = await claim(
                self._cache,
                self.ledger,
                res,
                job=raw,
                owner_ref=owner_ref,
                selector=job_selector(objects.name(raw), self.settings.operator_name),
                can_adopt=can_adopt,
            )
            return tuple(found)

        pods = await claimed(PODS)
        services = await claimed(SERVICES) if self.capabilities.services else ()
        extras = {
            res: await claimed(res)
            for res in self.capabilities.owned_resources
            if res != SERVICES or not self.capabilities.services
        }
        if self.capabilities.services and SERVICES in self.capabilities.owned_resources:
            # Claimed once, told apart by label: a slot's service carries its replica index
            # (finish_service sets it), a job-level one does not.
            slot = {objects.name(s) for s in services if REPLICA_INDEX in objects.labels(s)}
            extras[SERVICES] = tuple(s for s in services if objects.name(s) not in slot)
            services = tuple(s for s in services if objects.name(s) in slot)
        podgroup = None
        if self._scheduler is not None:
            podgroup = controlled_podgroup(
                self._scheduler,
                self._cache,
                objects.name(raw),
                objects.namespace(raw),
                objects.uid(raw),
            )
        return Observed(
            kind=self.kind,
            job=job,
            raw=raw,
            owner_ref=owner_ref,
            settings=self.settings,
            now=self._clock.now(),
            pods=pods,
            services=services,
            extras=extras,
            podgroup=podgroup,
        )


def _index_by_job(cache: ChildReader, res: Resource) -> None:
    try:
        cache.add_indexers(res, {BY_JOB: by_job})
    except ValueError:
        # Another JobController sharing the cache registered it already: the name is reserved
        # for this very function.
        return
