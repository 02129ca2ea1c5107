"""The generic JobController: one reconcile for every job kind, driven by a plugin.

:meth:`JobController.reconcile` reads as the table of contents of what happens to a job:

1. **Read** the job (:mod:`etctl.common._writer`: the cache, read-your-writes). Gone: forget its
   expectations. Being deleted: nothing (garbage collection removes what it owns). Parse it into
   the plugin's model once. A job whose ``runPolicy.managedBy`` names another controller is left
   alone entirely (no condition, no child, no event), as mpi-operator and training-operator do;
   a parse error or a problem from ``plugin.validate`` fails the job
   (``<Kind>Invalid``, an Event) without retrying: the operator keeps running, the user fixes the
   manifest.
2. **Observe** its children (:mod:`etctl.common._claim`): pods, services, extra objects and the
   PodGroup it controls; adopt matching orphans, release strays. While writes of the job are
   not yet visible in the cache (:mod:`etctl.common._tracking`), stop: acting on a stale cache
   double-creates. The informer events requeue it; the expectations' TTL bounds the wait.
3. **Finished**: clean up per cleanPodPolicy, drop the PodGroup, and delete the job once its TTL
   expires (:mod:`etctl.common._runpolicy`).
4. **Suspended**: no pods, services or PodGroup, extra objects made and kept (as mpi-operator
   does); **resumed**: start again.
5. **Limits**: the active deadline and the backoff limit fail the job (everything deleted);
   a :class:`~etctl.common.RestartsWholeJob` plugin restarts every pod instead.
6. **Gang**: the PodGroup (:mod:`etctl.common._podgroups`); volcano holds pods until admitted.
7. **Extra objects** (:mod:`etctl.common._children`).
8. **Replicas** (:mod:`etctl.common._replicas`): scale, restart, create pods and services.
9. **Status** (:mod:`etctl.common._status`): computed by pure functions, the plugin's verdict
   included, and written once as a guarded merge patch when it changed. A pod the server refused
   as invalid (a 422: the template is wrong, and no retry heals it) sets the condition
   ``ReplicaFailure`` (reason ``PodInvalid``, the server's message) and a Warning Event, while the
   create keeps being retried with backoff; the condition goes once pods are created again.
   Transient errors (5xx, 429, timeouts) only back off. When that write conflicts
   with a change of the job, what the reconcile did (restarts, a failure enforced by deleting
   every pod) is applied to the job as it is now (:meth:`~etctl.common._writer.JobWriter.record`);
   the rest is judged again by the next reconcile.

The reconcile returns ``Result(requeue_after=...)`` for the earliest timer (deadline, TTL, gate
deadline, expectation expiry), so time-based policies fire with no other event. Errors of writes
are raised after the status is written, so the controller retries with backoff without losing
what the reconcile recorded.

**Stopping.** A reconcile in flight when its controller begins to stop starts no further creation
batch (:mod:`etctl.common._batches`), and its status records only what exists and what it did: a
pod's creation is recorded from the pod (the create's answer or the cache), never from the
decision to create it, so a creation the stop cut short leaves nothing claiming it happened, and
the next process creates it.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, ValidationError

from etctl.common import _gang as gang
from etctl.common._api import ConditionStatus, JobConditionType, JobStatus, ReplicatedJob
from etctl.common._children import ExtraObjectSync
from etctl.common._claim import claim
from etctl.common._conditions import get_condition, is_finished
from etctl.common._control import ChildControl, ChildReader, Recorder
from etctl.common._jobmetrics import JOB_RECONCILE_TIME
from etctl.common._labels import BY_JOB, by_job, job_selector
from etctl.common._plugin import Capabilities, JobPlugin, JobSettings, JobState
from etctl.common._podgroups import PodGroupSync
from etctl.common._replicas import ReplicaSync
from etctl.common._round import Round
from etctl.common._runpolicy import RunPolicyEnforcer
from etctl.common._status import (
    ConditionChange,
    compute_status,
    parse_status,
    status_patch,
    stored_status,
)
from etctl.common._tracking import ChildEventHandler, child_key, job_prefix, replica_key
from etctl.common._validation import parse_problems
from etctl.common._writer import JobWriter
from etctl.errors import ConfigError
from etctl.log import get_logger
from etctl.runtime import (
    DEFAULT_TTL,
    PODS,
    PRIORITYCLASSES,
    SERVICES,
    Client,
    Clock,
    Expectations,
    ObjectView,
    Request,
    Resource,
    Result,
    objects,
)

__all__ = ["JobController"]

log = get_logger(__name__)

JobT = TypeVar("JobT", bound=ReplicatedJob)

# After a status write conflicts, the job's own watch event normally requeues it; this bounds the
# wait if that event is lost.
_CONFLICT_REQUEUE = 1.0


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
        self.settings = settings or JobSettings()
        self.resource = plugin.resource.resource()
        self.kind = plugin.resource.kind
        self.expectations = Expectations(clock=clock, ttl=expectations_ttl)
        self._check_plugin()
        self._client = client
        self._cache = cache
        self._clock = clock
        self._ttl = expectations_ttl
        control = self._control = ChildControl(client, recorder, self.expectations)
        scheduler = gang.scheduler_for(self.settings.gang_scheduler)
        self._podgroups = PodGroupSync(scheduler, control, cache) if scheduler else None
        self._policy = RunPolicyEnforcer(plugin, self.capabilities, control, self._podgroups)
        self._replicas = ReplicaSync(plugin, self.capabilities, control, cache, scheduler)
        extras = self.capabilities.extra_objects
        self._extras = ExtraObjectSync[JobT](extras, control, cache) if extras else None
        self._writer = JobWriter(self.resource, client, cache, recorder)
        for res in self.child_resources:
            _index_by_job(cache, res)

    def _check_plugin(self) -> None:
        model: object = self.plugin.model
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            msg = f"{self.kind}: the plugin's model must be a pydantic model, not {model!r}"
            raise ConfigError(msg)
        slot_services = self.capabilities.services is not None
        for res in self.capabilities.owned_resources:
            if not res.namespaced or res == PODS or (res == SERVICES and slot_services):
                msg = (
                    f"{self.kind}: extra objects must be namespaced, not pods, and not services "
                    f"when the plugin builds the slots' services: {res}"
                )
                raise ConfigError(msg)

    # -- wiring

    @property
    def child_resources(self) -> tuple[Resource, ...]:
        """The resources of the children the controller observes."""
        found = [PODS]
        if self.capabilities.services is not None:
            found.append(SERVICES)
        found.extend(self.capabilities.owned_resources)
        if self._podgroups is not None:
            found.append(self._podgroups.scheduler.podgroups)
        return tuple(found)

    def child_label_selector(self, res: Resource) -> str | None:
        """The label selector of the informer of child resource ``res`` (None: unselected).

        Pods, services and extra objects carry the operator's ``operator-name`` label (every
        version of the controller created them so), and only those can be claimed, so their
        informers select on it. PodGroups never carried it: theirs stays unselected (one object per
        gang-scheduled job of the cluster, not one per pod).
        """
        if self._podgroups is not None and res == self._podgroups.scheduler.podgroups:
            return None
        return self.settings.child_selector

    @property
    def lookup_resources(self) -> tuple[Resource, ...]:
        """Resources the controller only reads (their informers must exist, nothing enqueues)."""
        return (PRIORITYCLASSES,) if self._podgroups is not None else ()

    def child_handler(self, res: Resource) -> ChildEventHandler:
        """The event handler of one child resource's informer (observes writes, enqueues jobs)."""
        per_replica = res == PODS or (res == SERVICES and self.capabilities.services is not None)
        return ChildEventHandler(self.resource, res, self.expectations, per_replica=per_replica)

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
        if not is_finished(job.status.conditions) and (problems := self.plugin.validate(job)):
            return await self._reject(raw, job, problems)
        rnd = await self._observe(raw, job)
        if (wait := self._pending_writes(rnd)) is not None:
            return Result(requeue_after=wait)
        if is_finished(job.status.conditions):
            return await self._finish(rnd)
        await self._sync(rnd)
        return await self._write_status(rnd)

    async def _sync(self, rnd: Round[JobT]) -> None:
        if rnd.job.run_policy().suspend:
            await self._policy.suspend(rnd)
            if self._extras is not None:
                # As mpi-operator: a suspended job's extra children are made and kept.
                await self._extras.run(rnd, prune=False)
            return
        self._policy.start(rnd)
        if await self._policy.enforce_limits(rnd):
            return
        if self._podgroups is not None and not await self._podgroups.sync(rnd):
            return
        if self._extras is not None:
            await self._extras.run(rnd)
        await self._replicas.run(rnd)

    # -- 1. read

    def _forget(self, request: Request) -> None:
        self.expectations.forget_prefix(job_prefix(request.namespace, request.name))
        self._writer.forget(request)

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

    # -- 2. observe

    async def _observe(self, raw: ObjectView, job: JobT) -> Round[JobT]:
        owner_ref = objects.make_controller_ref(raw, self.resource)
        fresh: list[bool] = []

        async def can_adopt() -> bool:
            if not fresh:
                found = await self._writer.fresh(raw)
                fresh.append(found is not None and not objects.is_terminating(found))
            return fresh[0]

        async def claimed(res: Resource) -> list[ObjectView]:
            return await claim(
                self._cache,
                self._client,
                res,
                job=raw,
                owner_ref=owner_ref,
                selector=job_selector(objects.name(raw), self.settings.operator_name),
                can_adopt=can_adopt,
            )

        rnd = Round(
            kind=self.kind,
            job=job,
            raw=raw,
            owner_ref=owner_ref,
            settings=self.settings,
            now=self._clock.now(),
            pods=await claimed(PODS),
            services=await claimed(SERVICES) if self.capabilities.services else [],
            planner=self.capabilities.planner,
        )
        for res in self.capabilities.owned_resources:
            rnd.extras[res] = await claimed(res)
        if self._podgroups is not None:
            self._podgroups.observe(rnd)
        if get_condition(job.status.conditions, JobConditionType.CREATED) is None:
            message = f"{self.kind} {rnd.name} is created."
            rnd.change(
                JobConditionType.CREATED, ConditionStatus.TRUE, f"{self.kind}Created", message
            )
        return rnd

    def _pending_writes(self, rnd: Round[JobT]) -> float | None:
        keys = [
            replica_key(rnd.namespace, rnd.name, rnd.uid, rtype, res)
            for rtype in rnd.specs
            for res in (PODS, SERVICES)
        ]
        keys.extend(
            child_key(rnd.namespace, rnd.name, rnd.uid, res)
            for res in self.capabilities.owned_resources
        )
        if self.expectations.all_satisfied(keys):
            return None
        ages = [p.age for key in keys if (p := self.expectations.pending(key)) is not None]
        return max(self._ttl - max(ages, default=0.0), 0.001)

    # -- 3. finished

    async def _finish(self, rnd: Round[JobT]) -> Result:
        remaining = await self._policy.finish(rnd)
        if remaining is not None and remaining <= 0 and not rnd.errors:
            await self._delete_job(rnd)
            return Result()
        rnd.wake_in(remaining)
        return await self._write_status(rnd)

    async def _delete_job(self, rnd: Round[JobT]) -> None:
        await self._control.delete(rnd.raw, self.resource, rnd.raw, key=None)
        self._forget(Request(rnd.namespace, rnd.name))

    # -- 9. status

    async def _write_status(self, rnd: Round[JobT]) -> Result:
        state = rnd.state()
        changes = list(rnd.changes)
        if rnd.judge and (verdict := self.plugin.verdict(rnd.job, state)) is not None:
            changes.append(
                ConditionChange(
                    verdict.condition, ConditionStatus.TRUE, verdict.reason, verdict.message
                )
            )
        if rnd.restarting is not None:
            changes.append(rnd.restarting)
        if rnd.refused:
            changes.append(self._refused(rnd))
        status = compute_status(
            rnd.job.status,
            changes=changes,
            replicas=state.replica_statuses,
            start_time=rnd.start_time,
            restart_count=rnd.restart_count,
            now=rnd.now,
        )
        if rnd.created and not rnd.refused:
            status = _without(status, JobConditionType.REPLICA_FAILURE)
        extra = self._extended(rnd, status, state)
        patch = status_patch(stored_status(rnd.raw), status, extra)
        if patch is not None:
            if await self._writer.write_status(rnd.raw, patch) is None:
                if delta := rnd.delta():
                    await self._writer.record(rnd.raw, delta, now=rnd.now, restarts=rnd.restarts)
                return Result(requeue_after=_CONFLICT_REQUEUE)
            self._writer.announce(
                rnd.raw, rnd.job.status.conditions, status.conditions, restarts=rnd.restarts
            )
        if rnd.errors:
            raise rnd.errors[0]
        return Result(requeue_after=min(rnd.requeue)) if rnd.requeue else Result()

    def _refused(self, rnd: Round[JobT]) -> ConditionChange:
        """``ReplicaFailure``: the server refused a pod as invalid, which no retry can heal."""
        name, error = rnd.refused[0]
        message = (
            f"pod {name} of {self.kind} {rnd.name} cannot be created: {error.message}; the "
            "operator keeps retrying with backoff, but only a fix of the job's pod template helps"
        )
        return ConditionChange(
            JobConditionType.REPLICA_FAILURE, ConditionStatus.TRUE, "PodInvalid", message
        )

    def _extended(
        self, rnd: Round[JobT], status: JobStatus, state: JobState[JobT]
    ) -> dict[str, Any]:
        extender = self.capabilities.status
        if extender is None:
            return {}
        job: Any = rnd.job
        if isinstance(job, BaseModel):
            owned = {name: getattr(status, name) for name in JobStatus.model_fields}
            job = job.model_copy(update={"status": rnd.job.status.model_copy(update=owned)})
        return dict(extender.extend_status(job, state))


def _without(status: JobStatus, cond_type: str) -> JobStatus:
    """``status`` without the condition ``cond_type`` (the same object when it has none)."""
    kept = [c for c in status.conditions if c.type != cond_type]
    if len(kept) == len(status.conditions):
        return status
    return status.model_copy(update={"conditions": kept})


def _index_by_job(cache: ChildReader, res: Resource) -> None:
    try:
        cache.add_indexers(res, {BY_JOB: by_job})
    except ValueError:
        # Another JobController sharing the cache registered it already: the name is reserved
        # for this very function.
        return
