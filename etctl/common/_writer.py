"""Reading a job and writing its status: one guarded patch, transitions.

**Reading.** The job is read through the :class:`~etctl.common._ledger.WriteLedger`: from the
informer cache, which shows this process's own writes as soon as their answers come, so right
after a status write the next reconcile reads the version that write returned, never the one
before it, and does not repeat decisions the write recorded (a restart counted twice, a condition
set twice); a write whose answer was lost and that was read back (below) is the one the cache
cannot know of, and the ledger serves the job from the API server until the cache holds it.

**Writing.** The status is written once per reconcile to the ``/status`` subresource, guarded by
the fields the job controller owns (:data:`~etctl.common._status.OWNED_FIELDS`) as the reconcile
read them (:mod:`etctl.common._fieldguard`): it applies only if none of them changed, while a
concurrent write of fields another writer owns (the scaling controller's membership) is no
conflict. A Conflict (an owned field changed meanwhile) is not an error: nothing is logged above
debug, and the key is requeued shortly (the change's own watch event usually gets there first). A
failure may also be the write itself, committed by an attempt whose answer was lost: the ledger
reads it back first (:mod:`etctl.common._readback`), and a job that carries the patch counts as
written.

**Recording what was done.** A reconcile that acted before its status write (deleted a failed pod
for a restart, deleted every pod to enforce a limit) cannot leave the record of it to the next
reconcile: the deleted pods no longer show it. On a Conflict, :meth:`JobWriter.record` re-reads
the job and applies the reconcile's :class:`~etctl.common._status.StatusDelta` to the status as it
is now, guarded by the owned fields just read, a few times over if the job keeps changing. So a
restart is counted exactly once whatever else writes the job. The one window left is a process
that dies between the act and the write: that restart is not counted (the pod it replaced is gone
with its history), which errs on the side of one more restart, never of a lost job.

**Transitions.** After a successful write, every condition that became True (or a Suspended that
became False: a resume) is announced once: a log line with the job's kind, namespace and name, the
condition, its reason and message (``job running``, ``job failed``...: info, warning for a failure,
Failed or ReplicaFailure), an Event with the condition's reason and message (Warning for failures)
and the job counters of :mod:`etctl.common._jobmetrics`. Conditions turning False as a consequence
(Running once the job finished) are logged at debug; a ReplicaFailure that went away (pods are
created again) is logged at info. A reconcile that writes nothing announces nothing, so a
transition is logged once however often the job is reconciled. Restarting is announced where the
restart happens, pod by pod, and Scaling by the scaling controller as it starts and ends a scaler.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from etctl.common import _jobmetrics as jobmetrics
from etctl.common._api import ConditionStatus, JobCondition, JobConditionType
from etctl.common._ledger import WriteLedger
from etctl.common._status import (
    OWNED_FIELDS,
    StatusDelta,
    parse_status,
    status_patch,
    stored_status,
)
from etctl.errors import Conflict, NotFound
from etctl.log import get_logger
from etctl.runtime import EventType, KubeObject, ObjectView, Request, Resource, objects

__all__ = ["JobWriter"]

log = get_logger(__name__)

# Reads and writes one record may take when the job keeps changing (client-go's RetryOnConflict
# makes five attempts too).
_RECORD_ATTEMPTS = 5

# Conditions whose turning True is announced as a Warning Event (the rest: Normal).
_WARNINGS = frozenset({JobConditionType.FAILED.value, JobConditionType.REPLICA_FAILURE.value})

# Conditions whose transitions are announced where they happen: a restart pod by pod, scaling by
# the scaling controller when it starts or ends a scaler (the job controller only renders it).
_ANNOUNCED_ELSEWHERE = frozenset(
    {JobConditionType.RESTARTING.value, JobConditionType.SCALING.value}
)

_COUNTERS = {
    JobConditionType.CREATED.value: jobmetrics.JOBS_CREATED,
    JobConditionType.SUCCEEDED.value: jobmetrics.JOBS_SUCCESSFUL,
    JobConditionType.FAILED.value: jobmetrics.JOBS_FAILED,
}


def _transition(cond_type: str, status: ConditionStatus, *, resumed: bool) -> str:
    """The log message of a condition change: ``job running``, ``job failed``, ``job resumed``."""
    if resumed:
        return "job resumed"
    words = {
        JobConditionType.CREATED.value: "created",
        JobConditionType.RUNNING.value: "running",
        JobConditionType.SUCCEEDED.value: "succeeded",
        JobConditionType.FAILED.value: "failed",
        JobConditionType.SUSPENDED.value: "suspended",
        JobConditionType.REPLICA_FAILURE.value: "cannot create its pods",
    }
    if status is ConditionStatus.TRUE and cond_type in words:
        return f"job {words[cond_type]}"
    return f"job condition {cond_type} is {status.value}"


class JobWriter:
    """Reads jobs of one kind and writes their status (see the module docstring).

    Args:
        resource: the job resource.
        ledger: reads and guarded writes.
        guarded: status fields another writer owns that the job controller's judgement reads:
            its writes are guarded by them too (an elastic kind's member decisions).
    """

    def __init__(
        self, resource: Resource, ledger: WriteLedger, *, guarded: Collection[str] = ()
    ) -> None:
        self._resource = resource
        self._ledger = ledger
        self._guard = (*OWNED_FIELDS, *guarded)

    async def read(self, request: Request) -> ObjectView | None:
        """The job, from the cache unless the cache is behind a write of it that was read back."""
        return await self._ledger.read(self._resource, request.namespace, request.name)

    async def fresh(self, job: ObjectView) -> ObjectView | None:
        """The job as the API server has it now (None when gone or replaced by another uid)."""
        return await self._ledger.fresh(self._resource, job)

    async def write_status(self, job: ObjectView, patch: Mapping[str, Any]) -> KubeObject | None:
        """Apply a status merge patch guarded by the owned fields as read; None on a conflict.

        A failure that does not say whether the patch was applied (a Conflict met by the retry of
        a write whose answer was lost, no answer, a 5xx) is read back first by the ledger: a job
        that carries the patch was written, so what the reconcile did is never recorded twice (a
        restart counted again by :meth:`record`).

        Raises:
            EtctlError: the write failed otherwise, or its outcome is unknown.
        """
        try:
            return await self._ledger.patch_own_status(
                self._resource, job, patch, owned=self._guard
            )
        except NotFound:
            return None
        except Conflict:
            log.debug("job changed while it was reconciled; trying again", name=objects.name(job))
            return None

    async def record(
        self, job: ObjectView, delta: StatusDelta, *, now: datetime, restarts: int = 0
    ) -> bool:
        """Apply ``delta`` to the job's status as the server has it now, after a Conflict.

        Each attempt reads the job, applies the delta to its status and writes the result guarded
        by the owned fields read; the transitions it makes are announced as :meth:`announce` does.

        Args:
            job: the job as the reconcile read it (its uid identifies the job).
            delta: what the reconcile did.
            now: the reconcile's time (condition timestamps).
            restarts: the restarts the reconcile performed (the restart counter).

        Returns:
            True when the status carries the delta, False when the job is gone or kept changing.
        """
        for _ in range(_RECORD_ATTEMPTS):
            current = await self.fresh(job)
            if current is None:
                return False
            before = parse_status(current)
            after = delta.apply(before, now=now)
            patch = status_patch(stored_status(current), after, {})
            if patch is None:
                return True
            if await self.write_status(current, patch) is not None:
                self.announce(current, before.conditions, after.conditions, restarts=restarts)
                return True
        log.error(
            "the job kept changing: what this reconcile did is not recorded in its status",
            name=objects.name(job),
            restarts=delta.restarts,
        )
        return False

    def announce(
        self,
        job: ObjectView,
        before: Sequence[JobCondition],
        after: Sequence[JobCondition],
        *,
        restarts: int = 0,
    ) -> None:
        """Events and counters for the transitions between two written condition lists."""
        kind = str(job.get("kind") or self._resource.kind)
        namespace = objects.namespace(job)
        jlog = log.bind(kind=kind, namespace=namespace, name=objects.name(job))
        previous = {condition.type: condition for condition in before}
        for condition in after:
            old = previous.pop(condition.type, None)
            if (
                old is not None
                and old.status is condition.status
                and old.reason == condition.reason
            ):
                continue
            if condition.type in _ANNOUNCED_ELSEWHERE:
                continue
            resumed = (
                condition.type == JobConditionType.SUSPENDED
                and old is not None
                and old.status is ConditionStatus.TRUE
            )
            failed = condition.type in _WARNINGS and condition.status is ConditionStatus.TRUE
            announced = condition.status is ConditionStatus.TRUE or resumed
            level = jlog.warning if failed else jlog.info if announced else jlog.debug
            level(
                _transition(condition.type, condition.status, resumed=resumed),
                condition=condition.type,
                status=condition.status.value,
                reason=condition.reason,
                message=condition.message,
            )
            if announced:
                event_type: EventType = "Warning" if failed else "Normal"
                if self._ledger.recorder is not None:
                    self._ledger.recorder.event(
                        job, event_type, condition.reason, condition.message
                    )
            counter = _COUNTERS.get(condition.type)
            if counter is not None and condition.status is ConditionStatus.TRUE:
                counter.labels(namespace=namespace, kind=kind).inc()
        if JobConditionType.REPLICA_FAILURE.value in previous:
            jlog.info(
                "job creates its pods again", condition=JobConditionType.REPLICA_FAILURE.value
            )
        if restarts:
            jobmetrics.JOBS_RESTARTED.labels(namespace=namespace, kind=kind).inc(restarts)
