"""The scaling controller: each elastic job's scalers, one at a time, and its membership.

One reconcile of a job key (one job is never reconciled twice at once; different jobs are, on
several workers):

1. **Read** the job (from the cache, which shows this process's own writes), its pods and the
   scalers it controls (the scalers' index on ``spec.selector.name``; never a cluster-wide list).
   A finished job fails its unfinished scalers (reason ``JobFinished``) and stops there.
2. **Members** (:func:`~etctl.common._scaling.roster.settle`): initial targets, replacements of
   failed or vanished members under new names, and the members in use around the active scaler,
   written to the job's status (in the fields its plugin names, :class:`~etctl.common.Members`:
   targets, current members, highest index) when they changed. The job controller creates and
   deletes pods from what is written here, only.
3. **The active scaler** (the plugin's scaler field) advances through the state machine
   (:func:`~etctl.common._scaling.machine.advance`) until it waits; when none is active and the
   job can scale, the oldest pending adopted scaler becomes active (FIFO). How each transition is
   written and acted on (decision first, then targets, desired count, script, outcome) is
   :mod:`~etctl.common._scaling.steps`.
4. **/scale**: with no scaler in flight, the desired count is clamped into its bounds or turned
   into a scaler (:mod:`~etctl.common._scaling.desired`).

Every write is guarded: a scaler's by the version read, the job's by the fields the machinery
owns (its membership, :class:`~etctl.common.MemberFields`) or the desired count as read, so the
job controller's concurrent status writes are no conflict; a Conflict ends the reconcile quietly
and the object's own event brings the job back. The reconcile asks to be requeued when the active
scaler's timeout expires, so timeouts fire without polling.

**Stopping** (SIGTERM, a rolling update): once the controller begins to stop
(:func:`~etctl.runtime.stop_requested`), no new decision is written: the reconcile ends before the
next membership write, scaler pick, transition or ``/scale`` follow-up, and logs where it paused.
The transition under way is completed with its acts (a script whose marker is stored is sent,
and its outcome recorded), so a decision and its act are written together or not at all; the next
operator resumes from what is stored.

Events: on the job (``ScalingStart``, ``Scaling<Dir>Succeeded``/``Failed``, ``<Kind>WorkerFailed``
for every replacement, ``ReplicasClamped``, ``ScalerCreated``) and on the scalers (every step:
``ScalingStart``, ``ScriptSucceeded``, ``ScriptFailed``, ``ScaleOutTimeout``, ...). Metrics:
:mod:`~etctl.common._scaling.metrics`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from etctl.common._conditions import is_finished
from etctl.common._ledger import Recorder, WriteLedger
from etctl.common._plugin import Capabilities, JobPlugin, JobSettings
from etctl.common._scaling import metrics
from etctl.common._scaling.adoption import controlled_scalers, selector_index
from etctl.common._scaling.api import scaler_targets
from etctl.common._scaling.desired import DesiredCount
from etctl.common._scaling.elastic import replicas_path
from etctl.common._scaling.machine import advance
from etctl.common._scaling.membership import NAME_MAX_LENGTH
from etctl.common._scaling.observe import (
    Observation,
    ObservedScaler,
    parse_job,
    parse_scaler,
)
from etctl.common._scaling.roster import settle
from etctl.common._scaling.scaler import Transition
from etctl.common._scaling.steps import ScalerSteps
from etctl.errors import ConfigError, Conflict
from etctl.log import get_logger
from etctl.runtime import (
    PODS,
    CacheReader,
    Client,
    Clock,
    ObjectView,
    Request,
    Result,
    objects,
    stop_requested,
)

__all__ = ["ScalingController"]

log = get_logger(__name__)

# A conflict means the job or a scaler changed; their own events requeue the job, this bounds it.
_CONFLICT_REQUEUE = 1.0
# Transitions one reconcile may apply; each one waits on the API, so this only stops a bug looping.
_MAX_STEPS = 32


class ScalingController:
    """Runs the scalers and keeps the membership of one elastic job kind.

    Args:
        plugin: the job kind; it must be :class:`~etctl.common.ScalesElastically`.
        client: the API client (writes and execs).
        cache: the informer cache of jobs, pods, ScaleIns and ScaleOuts, with
            :data:`~etctl.common._scaling.adoption.SELECTOR_INDEX` on both scaler resources.
        recorder: where Events go.
        clock: the time of decisions and timeouts.
        settings: operator-wide settings.

    Raises:
        ConfigError: the plugin is not elastic.
    """

    def __init__(
        self,
        plugin: JobPlugin[Any],
        *,
        client: Client,
        cache: CacheReader,
        recorder: Recorder,
        clock: Clock,
        settings: JobSettings | None = None,
    ) -> None:
        capabilities = Capabilities.of(plugin)
        if capabilities.elastic is None:
            msg = f"{plugin.resource.kind} is not elastic: it does not implement bounds()"
            raise ConfigError(msg)
        replicas_path(plugin.resource)  # an elastic kind's CRD must have /scale
        self._capabilities = capabilities
        self._crd = plugin.resource
        self._model: type[Any] = plugin.model
        self.jobs = plugin.resource.resource()
        self.kind = plugin.resource.kind
        self._client = client
        self._cache = cache
        self._writer = WriteLedger(client, cache, clock=clock)
        self._recorder = recorder
        self._clock = clock
        self._settings = settings or JobSettings()
        self._desired = DesiredCount(
            kind=self.kind,
            jobs=self.jobs,
            cache=cache,
            writer=self._writer,
            recorder=recorder,
        )
        self._steps = ScalerSteps(
            kind=self.kind,
            jobs=self.jobs,
            client=client,
            writer=self._writer,
            recorder=recorder,
            clock=clock,
            desired=self._desired,
            settle=self._settle,
        )

    # -- wiring

    def requests_for_scaler(self, obj: ObjectView) -> Iterable[Request]:
        """The job a scaler names, if of this kind (maps scaler events to job keys)."""
        if not scaler_targets(obj, self.jobs):
            return []
        return [Request(*key.split("/", 1)) for key in selector_index(obj)]

    # -- the reconcile

    async def reconcile(self, request: Request) -> Result:
        """Run one job's scalers and keep its membership (see the module docstring)."""
        raw = await self._writer.read(self.jobs, request.namespace, request.name)
        if raw is None:
            self._writer.forget(self.jobs, request.namespace, request.name)
            return Result()
        if objects.is_terminating(raw):
            return Result()
        job = parse_job(self._model, raw)
        if job is None or job.run_policy().managed_by:
            # The job controller reports what is wrong with a job that does not parse; one that
            # names another controller in runPolicy.managedBy is that controller's.
            return Result()
        seen = await self._observe(raw, job)
        try:
            if is_finished(seen.conditions):
                await self._steps.close(seen)
                return Result()
            return await self._sync(seen)
        except Conflict:
            log.debug("a job or scaler changed meanwhile; its event requeues the job")
            return Result(requeue_after=_CONFLICT_REQUEUE)

    async def _observe(self, raw: ObjectView, job: Any) -> Observation:
        uid = objects.uid(raw)
        scalers = []
        for res, obj in controlled_scalers(self._cache, raw):
            if objects.is_terminating(obj):
                continue
            fresh = await self._writer.read(res, objects.namespace(obj), objects.name(obj))
            parsed = parse_scaler(fresh) if fresh is not None else None
            if parsed is not None:
                scalers.append(parsed)
        return Observation(
            self._capabilities,
            crd=self._crd,
            model=self._model,
            kind=self.kind,
            raw=raw,
            job=job,
            pods=self._cache.controlled_by(PODS, uid),
            scalers=scalers,
            now=self._clock.now(),
            settings=self._settings,
        )

    async def _sync(self, seen: Observation) -> Result:
        active = self._active(seen)
        waits: list[float] = []
        for _ in range(_MAX_STEPS):
            if self._stopping(seen, active):
                return Result()
            await self._settle(seen, active)
            if active is None:
                if self._stopping(seen, active):
                    return Result()
                active = await self._steps.pick(seen)
                if active is None:
                    break
                continue
            unsent = self._steps.unsent(active)
            transition = advance(active.scaler, seen.view, seen.now, unsent=unsent)
            if transition.idle:
                if transition.wait is not None:
                    waits.append(transition.wait)
                break
            if self._stopping(seen, active):
                return Result()
            active = await self._steps.apply(seen, active, transition)
        if active is None and not self._stopping(seen, active):
            await self._desired.sync(seen)
        return Result(requeue_after=max(min(waits), 0.001)) if waits else Result()

    def _stopping(self, seen: Observation, active: ObservedScaler | None) -> bool:
        """True once the controller stops: no new decision is written after that (logged)."""
        if not stop_requested():
            return False
        scaler = active.scaler if active is not None else None
        log.info(
            "stopping: no new scaling decision is written for the job; the next operator "
            "takes it from what is stored",
            kind=self.kind,
            namespace=seen.namespace,
            name=seen.name,
            scaler=scaler.full_name if scaler is not None else None,
            step=scaler.status.step.value if scaler is not None and scaler.status.step else None,
        )
        return True

    # -- 2. membership

    async def _settle(
        self, seen: Observation, active: ObservedScaler | None, decided: Transition | None = None
    ) -> None:
        view = seen.view
        if decided is not None and decided.targets is not None:
            last = decided.last_index if decided.last_index is not None else view.last_index
            view = dataclasses.replace(view, targets=decided.targets, last_index=last)
        settled = settle(view, active.scaler if active is not None else None)
        stored = seen.members
        names = stored.fields
        fields: dict[str, Any] = {}
        if settled.targets != stored.targets:
            fields[names.targets] = list(settled.targets)
        if settled.current != stored.current:
            fields[names.current] = list(settled.current)
        if settled.last_index != stored.last_index:
            fields[names.last_index] = settled.last_index
        if settled.replaced and names.replaced is not None:
            fields[names.replaced] = stored.replaced + len(settled.replaced)
        rtype = seen.elasticity.replica_type
        if settled.unreplaced:
            message = (
                f"{rtype.lower()} {', '.join(settled.unreplaced)} of {self.kind} {seen.name} "
                f"cannot be replaced now: every {rtype.lower()} name of at most "
                f"{NAME_MAX_LENGTH} characters is taken ({seen.elasticity.name_rule}; a shorter "
                "job name leaves room for more)"
            )
            self._recorder.event(seen.raw, "Warning", f"{self.kind}{rtype}NotReplaced", message)
        if not fields:
            return
        seen.refresh(
            await self._writer.patch_own_status(self.jobs, seen.raw, fields, owned=names.owned())
        )
        for swap in settled.replaced:
            message = (
                f"{rtype.lower()} {swap.old} of {self.kind} {seen.name} "
                f"{_what_happened(seen.worker_phase(swap.old))}; replaced by {swap.new}"
            )
            if swap.reused:
                message += (
                    f", a name used before (every unused name would exceed "
                    f"{NAME_MAX_LENGTH} characters: {seen.elasticity.name_rule})"
                )
            self._recorder.event(seen.raw, "Warning", f"{self.kind}{rtype}Failed", message)
            metrics.WORKER_REPLACEMENTS.labels(kind=self.kind).inc()

    # -- 3. the active scaler

    def _active(self, seen: Observation) -> ObservedScaler | None:
        named = seen.members.scaler
        for observed in seen.scalers:
            if observed.scaler.full_name == named and not observed.scaler.status.finished():
                return observed
        return None


def _what_happened(phase: str) -> str:
    """What became of a member whose pod is in ``phase`` (``""``: it has none), for messages."""
    return {"Failed": "failed", "Succeeded": "completed", "": "is gone"}.get(
        phase, f"is {phase.lower()}"
    )
