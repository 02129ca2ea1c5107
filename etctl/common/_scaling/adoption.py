"""Scaler adoption: a ScaleIn or ScaleOut becomes its job's, or says why it cannot.

One :class:`ScalerAdoption` reconciler per scaler kind and job kind, keyed by scaler. It handles
the scalers whose selector names its job kind (``spec.selector.kind``, or no kind for the kind of
the scalers' own API group: :func:`~etctl.common._scaling.api.scaler_targets`) and leaves the
others to their kind's:

* a scaler naming an existing job in its namespace (``spec.selector.name``) gets a controller
  ``ownerReference`` to it (so it is garbage-collected with the job, and the job's scaling
  controller picks it up), then the condition ``Created`` (reason ``Adopted``);
* a scaler naming a job that does not exist (or is being deleted) gets the condition ``Failed``
  (reason ``<Kind>NotFound``, e.g. ``TrainingJobNotFound``) and a Warning Event, once; it is not
  finished, because the cache may simply lag behind a job created with it: when the job appears,
  the job's event maps to the scalers naming it (an index on ``spec.selector.name``,
  :func:`selector_index`), the scaler is adopted and ``Failed`` turns False (reason
  ``<Kind>Found``); the first status write (either) records ``status.queuedResourceVersion``,
  the scaler's version before any write of ours, which orders the scalers created in one second
  (see :func:`~etctl.common._scaling.selection.fifo`);
* **a scaler never acts on a job created after it**: a scaler whose ``creationTimestamp`` is
  earlier than its job's (both are whole seconds, from the API server's clock) was meant for
  another job of that name, or for none, and would resize a brand-new job nobody asked to resize.
  It is not adopted: it ends at once with ``ScaleFailed`` (reason ``CreatedBeforeJob``), a
  Warning Event and step ``Done``. A scaler created in the same second as its job is taken as
  created with it (``kubectl apply`` of a directory) and adopted. Once adopted, the controller
  reference holds the job's uid, so a job deleted and created again under the same name never
  inherits its predecessor's scalers either (the scaling controller only runs scalers its job's
  uid controls);
* a scaler already controlled by its job (those the scaling controller creates for ``/scale``)
  only gets its ``Created`` condition; one controlled by anything else is not ours and is left
  alone; a finished one is left alone.

The owner reference is added with a patch guarded by the scaler's ``resourceVersion``, so a scaler
changed meanwhile is adopted from its new version. Nothing here lists scalers: the index answers
"which scalers name this job" (et-operator listed every scaler of the cluster on each reconcile),
and :func:`controlled_scalers` keeps those the job controls, for the scaling controller and for the
job controller, which renders the ``Scaling`` condition from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from pydantic import ValidationError

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._conditions import get_condition, set_condition
from etctl.common._ledger import Recorder, WriteLedger
from etctl.common._meta import format_timestamp, to_timestamp
from etctl.common._scaling.api import (
    SCALEINS,
    SCALEOUTS,
    ScaleIn,
    ScaleOut,
    ScaleStep,
    latest_type,
    scaler_targets,
    selector_of,
)
from etctl.errors import Conflict, NotFound
from etctl.log import get_logger
from etctl.runtime import CacheReader, Client, Clock, ObjectView, Request, Resource, Result, objects

__all__ = ["SELECTOR_INDEX", "ScalerAdoption", "controlled_scalers", "selector_index"]

log = get_logger(__name__)

SELECTOR_INDEX = "scaling.etctl.io/job"
"""Index of scalers by ``<namespace>/<spec.selector.name>``, the job they name."""

# A conflict means the scaler changed; its own event requeues it, this bounds the wait.
_CONFLICT_REQUEUE = 1.0


def selector_index(obj: ObjectView) -> list[str]:
    """Index function of :data:`SELECTOR_INDEX`: ``<namespace>/<job name>``, if named.

    The index is shared by every job kind (whatever kind a scaler names, the key is the same):
    its users keep the scalers that name their kind.
    """
    selector = selector_of(obj)
    if selector is None:
        return []
    return [f"{objects.namespace(obj)}/{selector.name}"]


def controlled_scalers(
    cache: CacheReader, job: ObjectView
) -> Iterator[tuple[Resource, ObjectView]]:
    """The cached ScaleOuts, then ScaleIns, that ``job`` controls (being deleted or not).

    Raises:
        EtctlError: the cache does not hold scalers (or lacks :data:`SELECTOR_INDEX`).
    """
    key, uid = f"{objects.namespace(job)}/{objects.name(job)}", objects.uid(job)
    for res in (SCALEOUTS, SCALEINS):
        for obj in cache.by_index(res, SELECTOR_INDEX, key):
            if objects.controller_ref(obj) == uid:
                yield res, obj


def _created(obj: ObjectView) -> datetime | None:
    """An object's ``creationTimestamp``, parsed (None when absent or unreadable)."""
    value = objects.meta(obj).get("creationTimestamp")
    if not isinstance(value, str):
        return None
    try:
        return to_timestamp(datetime.fromisoformat(value))
    except ValueError:
        return None


def _parse(res: Resource, raw: ObjectView) -> ScaleOut | ScaleIn | None:
    model = ScaleOut if res.kind == "ScaleOut" else ScaleIn
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        log.warning("scaler does not parse; left alone", scaler=objects.key_of(raw), error=str(exc))
        return None


class ScalerAdoption:
    """Adopts the scalers of one kind for one job kind (see the module docstring).

    Args:
        scalers: the scaler resource (ScaleIns or ScaleOuts).
        jobs: the job resource.
        client: the API client.
        cache: the informer cache of both resources, with :data:`SELECTOR_INDEX` on scalers.
        recorder: where Events go.
        clock: the time of conditions.
    """

    def __init__(
        self,
        scalers: Resource,
        jobs: Resource,
        *,
        client: Client,
        cache: CacheReader,
        recorder: Recorder,
        clock: Clock,
    ) -> None:
        self.scalers = scalers
        self.jobs = jobs
        self._cache = cache
        self._writer = WriteLedger(client, cache, clock=clock)
        self._recorder = recorder
        self._clock = clock

    def requests_for_job(self, job: ObjectView) -> Iterable[Request]:
        """The scalers naming ``job`` (maps the job's events to scaler keys)."""
        key = f"{objects.namespace(job)}/{objects.name(job)}"
        return [
            Request.for_object(s)
            for s in self._cache.by_index(self.scalers, SELECTOR_INDEX, key)
            if scaler_targets(s, self.jobs)
        ]

    async def reconcile(self, request: Request) -> Result:
        """Adopt one scaler, or report its missing job."""
        raw = await self._writer.read(self.scalers, request.namespace, request.name)
        if raw is None or objects.is_terminating(raw):
            self._writer.forget(self.scalers, request.namespace, request.name)
            return Result()
        if not scaler_targets(raw, self.jobs):
            return Result()  # another kind's (or naming no job: the schema requires a name)
        scaler = _parse(self.scalers, raw)
        if scaler is None or scaler.status.finished():
            return Result()
        try:
            await self._adopt(raw, scaler)
        except Conflict:
            return Result(requeue_after=_CONFLICT_REQUEUE)
        return Result()

    async def _adopt(self, raw: ObjectView, scaler: ScaleOut | ScaleIn) -> None:
        owner = objects.controller_of(raw)
        job_name = scaler.spec.selector.name
        # The version before any write of ours: the order of creation among scalers of a second.
        version = objects.resource_version(raw)
        if owner is not None:
            if self._is_job(owner) and not scaler.status.adopted():
                job = self._cache.get(
                    self.jobs, str(owner.get("name")), namespace=objects.namespace(raw)
                )
                await self._mark_adopted(raw, scaler, job, version)
            return
        job = self._cache.get(self.jobs, job_name, namespace=objects.namespace(raw))
        if job is None or objects.is_terminating(job):
            await self._mark_missing(raw, scaler, version)
            return
        job_created = _created(job)
        scaler_created = scaler.metadata.creation_timestamp
        if job_created is not None and scaler_created is not None and scaler_created < job_created:
            await self._mark_older(raw, scaler, job, scaler_created, job_created)
            return
        refs = [dict(ref) for ref in objects.owner_references(raw)]
        refs.append(objects.make_controller_ref(job, self.jobs))
        try:
            adopted = await self._writer.patch(
                self.scalers, raw, {"metadata": {"ownerReferences": refs}}
            )
        except NotFound:
            return
        await self._mark_adopted(adopted, scaler, job, version)

    def _is_job(self, owner: object) -> bool:
        if not isinstance(owner, dict):
            return False
        group = str(owner.get("apiVersion") or "").rpartition("/")[0]
        return owner.get("kind") == self.jobs.kind and group == self.jobs.group

    async def _mark_adopted(
        self, raw: ObjectView, scaler: ScaleOut | ScaleIn, job: ObjectView | None, version: str
    ) -> None:
        now = self._clock.now()
        conditions = list(scaler.status.conditions)
        kind = self.jobs.kind
        job_name = objects.name(job) if job is not None else scaler.spec.selector.name
        failed = get_condition(conditions, JobConditionType.FAILED)
        if failed is not None and failed.status is ConditionStatus.TRUE:
            conditions = set_condition(
                conditions,
                JobConditionType.FAILED,
                ConditionStatus.FALSE,
                reason=f"{kind}Found",
                message=f"{kind} {job_name} exists now",
                now=now,
            )
        what = f"{self.scalers.kind} {objects.name(raw)}"
        message = f"{what} is adopted by {kind} {job_name}"
        conditions = set_condition(
            conditions,
            JobConditionType.CREATED,
            ConditionStatus.TRUE,
            reason="Adopted",
            message=message,
            now=now,
        )
        status: dict[str, object] = {
            "conditions": [c.to_dict() for c in conditions],
            "phase": latest_type(conditions),
        }
        if scaler.status.queued_resource_version is None and version:
            status["queuedResourceVersion"] = version
        await self._writer.patch_status(self.scalers, raw, status)
        self._recorder.event(raw, "Normal", "Adopted", message)
        log.info(
            "scaler adopted",
            kind=self.scalers.kind,
            namespace=objects.namespace(raw),
            name=objects.name(raw),
            job=job_name,
            reason="Adopted",
            message=message,
        )

    async def _mark_older(
        self,
        raw: ObjectView,
        scaler: ScaleOut | ScaleIn,
        job: ObjectView,
        scaler_created: datetime,
        job_created: datetime,
    ) -> None:
        """End a scaler created before its job: it never acts on a job created after it."""
        kind = self.jobs.kind
        reason = "CreatedBeforeJob"
        message = (
            f"{self.scalers.kind} {objects.name(raw)} was created at "
            f"{format_timestamp(scaler_created)}, before {kind} {objects.name(job)} (created at "
            f"{format_timestamp(job_created)}): a scaler never acts on a job created after it; "
            "create a new one to resize this job"
        )
        conditions = set_condition(
            scaler.status.conditions,
            JobConditionType.SCALE_FAILED,
            ConditionStatus.TRUE,
            reason=reason,
            message=message,
            now=self._clock.now(),
        )
        status = {
            "conditions": [c.to_dict() for c in conditions],
            "phase": latest_type(conditions),
            "step": ScaleStep.DONE.value,
        }
        await self._writer.patch_status(self.scalers, raw, status)
        self._recorder.event(raw, "Warning", reason, message)
        log.warning(
            "scaler failed",
            kind=self.scalers.kind,
            namespace=objects.namespace(raw),
            name=objects.name(raw),
            job=objects.name(job),
            reason=reason,
            message=message,
        )

    async def _mark_missing(
        self, raw: ObjectView, scaler: ScaleOut | ScaleIn, version: str
    ) -> None:
        kind = self.jobs.kind
        reason = f"{kind}NotFound"
        failed = get_condition(scaler.status.conditions, JobConditionType.FAILED)
        if failed is not None and failed.status is ConditionStatus.TRUE and failed.reason == reason:
            return
        job_name = scaler.spec.selector.name
        message = (
            f"{kind} {job_name} does not exist in namespace {objects.namespace(raw)}; "
            f"{self.scalers.kind} {objects.name(raw)} runs once it does"
        )
        conditions = set_condition(
            scaler.status.conditions,
            JobConditionType.FAILED,
            ConditionStatus.TRUE,
            reason=reason,
            message=message,
            now=self._clock.now(),
        )
        status: dict[str, object] = {
            "conditions": [c.to_dict() for c in conditions],
            "phase": latest_type(conditions),
        }
        if scaler.status.queued_resource_version is None and version:
            status["queuedResourceVersion"] = version
        await self._writer.patch_status(self.scalers, raw, status)
        self._recorder.event(raw, "Warning", reason, message)
        log.warning(
            "scaler's job not found",
            kind=self.scalers.kind,
            namespace=objects.namespace(raw),
            name=objects.name(raw),
            job=job_name,
            reason=reason,
            message=message,
        )
