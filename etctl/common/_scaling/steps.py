"""The active scaler of an elastic job, step by step, and the scalers of a finished job.

:class:`ScalerSteps` is the part of the scaling controller that changes scalers:

* **picking**: with none active, the oldest pending adopted scaler becomes active (FIFO); the
  job's scaler field is written before it starts (the job controller renders the ``Scaling``
  condition from it), and a named scaler that finished (or vanished) without the job's write
  after it is closed first;
* **applying** a transition of the state machine (:func:`~etctl.common._scaling.machine.advance`):
  its decision to the scaler's status first, then its targets to the job's membership, its desired
  count to the job's spec, its events; then its script on the launcher (``pods/exec``, hard
  timeout), sent only once its attempt marker is stored (the transition's status), whose outcome is
  written over a fresh read of the scaler if it changed meanwhile (only this reconcile knows the
  outcome); an exec refused before the script started (429, 5xx, no connection) is tried again
  with backoff, since it ran nothing, while anything that may have started is never repeated; a
  finished scaler clears the job's scaler field (``Scaling`` turns False with the outcome as
  reason, :mod:`~etctl.common._scaling.rendering`). The process remembers the scalers whose
  marker it wrote without sending the exec (the marker's write failed, so the exec was withheld):
  :meth:`ScalerSteps.unsent` lets it send the script when it finds the marker stored after all,
  where any other process judges it interrupted;
* **closing**: a finished job fails its unfinished scalers (reason ``JobFinished``), and so does
  a job whose members are fixed (a kind's static job, ``MemberPolicy.fixed``: reason
  ``JobNotElastic``), which no scaler could ever resize: it never waits for one to start.

Every write is guarded: a scaler's by the version read, the job's by the fields the machinery owns
as read; a Conflict propagates to the controller, which ends the reconcile quietly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._conditions import set_condition
from etctl.common._ledger import Recorder, WriteLedger
from etctl.common._scaling import metrics
from etctl.common._scaling.api import SCALEINS, SCALEOUTS, ScaleStep
from etctl.common._scaling.desired import DesiredCount
from etctl.common._scaling.journal import scaler_changed
from etctl.common._scaling.machine import awaits_outcome, script_finished
from etctl.common._scaling.observe import Observation, ObservedScaler, parse_scaler
from etctl.common._scaling.rendering import ended, gone, started
from etctl.common._scaling.scaler import Direction, Note, Outcome, Scaler, ScriptRun, Transition
from etctl.common._scaling.selection import fifo
from etctl.errors import (
    ApiError,
    Conflict,
    EtctlError,
    ExecFailed,
    Fenced,
    NotFound,
    RequestNotSent,
    ServerError,
    TooManyRequests,
    TransportError,
)
from etctl.log import get_logger
from etctl.runtime import Client, Clock, Resource, objects

__all__ = ["ScalerSteps", "Settle"]

log = get_logger(__name__)

# Writes of a script's outcome when its scaler keeps changing (RetryOnConflict makes five).
_RECORD_ATTEMPTS = 5
# Backoff between execs of a script that were refused before it started: doubling from 1 s, at
# most 10 s apart, for up to the exec's timeout in all.
_NOT_STARTED_BACKOFF = 1.0
_NOT_STARTED_BACKOFF_CAP = 10.0

Settle = Callable[[Observation, ObservedScaler | None, Transition | None], Awaitable[None]]
"""Writes the job's membership around the active scaler (and a transition's new targets)."""


class ScalerSteps:
    """Picks, advances and closes the scalers of one elastic job kind (see the module docstring).

    Args:
        kind: the job kind.
        jobs: the job resource.
        client: the API client (execs and fresh reads).
        writer: reads and guarded writes.
        recorder: where Events go.
        clock: the time of decisions.
        desired: writes the job's desired worker count.
        settle: writes the job's membership.
    """

    def __init__(
        self,
        *,
        kind: str,
        jobs: Resource,
        client: Client,
        writer: WriteLedger,
        recorder: Recorder,
        clock: Clock,
        desired: DesiredCount,
        settle: Settle,
    ) -> None:
        self.kind = kind
        self.jobs = jobs
        self._client = client
        self._writer = writer
        self._recorder = recorder
        self._clock = clock
        self._desired = desired
        self._settle = settle
        self._unsent: set[str] = set()  # uids of scalers whose marker was written, exec unsent

    async def pick(self, seen: Observation) -> ObservedScaler | None:
        """Close a finished or vanished current scaler, then make the oldest pending one active."""
        named = seen.members.scaler
        if named:
            found = next((o for o in seen.scalers if o.scaler.full_name == named), None)
            if found is not None and found.scaler.status.finished():
                # It finished, but the job's write after it did not happen (a conflict).
                await self._announce_end(seen, found.scaler)
            else:
                change = gone(named)
                await self._set_current(seen, None, change.reason, change.message)
        fixed = seen.elasticity.fixed
        if fixed is not None:
            await self._fail_pending(
                seen,
                "JobNotElastic",
                lambda scaler: f"{self.kind} {seen.name} {fixed}: {scaler} cannot resize it",
            )
            return None
        if not seen.elasticity.ready:
            return None
        pending = {
            o.queued: o
            for o in seen.scalers
            if o.scaler.status.adopted() and not o.scaler.status.finished()
        }
        if not pending:
            return None
        chosen = pending[fifo(pending)[0]]
        change = started(self.kind, seen.name, chosen.scaler.full_name)
        await self._set_current(seen, chosen.scaler.full_name, change.reason, change.message)
        self._recorder.event(seen.raw, "Normal", change.reason, change.message)
        return chosen

    async def _set_current(
        self, seen: Observation, scaler: str | None, reason: str, message: str
    ) -> None:
        names = seen.members.fields
        written = await self._writer.patch_own_status(
            self.jobs, seen.raw, {names.scaler: scaler}, owned=names.owned()
        )
        seen.refresh(written)
        failed = scaler is None and not reason.endswith("Succeeded")
        (log.warning if failed else log.info)(
            "job scaling" if scaler is not None else "job scaling ended",
            kind=self.kind,
            namespace=seen.namespace,
            name=seen.name,
            scaler=scaler,
            reason=reason,
            message=message,
        )

    def unsent(self, observed: ObservedScaler) -> bool:
        """Whether this process wrote the scaler's attempt marker and never sent its exec."""
        return objects.uid(observed.raw) in self._unsent

    async def apply(
        self, seen: Observation, active: ObservedScaler, t: Transition
    ) -> ObservedScaler | None:
        """Apply transition ``t`` of the active scaler; the scaler after it, None once finished."""
        res = SCALEOUTS if active.scaler.direction is Direction.OUT else SCALEINS
        uid = objects.uid(active.raw)
        if t.script is not None:
            # Until the exec goes out, this process knows it did not: a marker whose write fails
            # below may be stored nonetheless, and then only this knowledge tells it was not sent.
            self._unsent.add(uid)
        if t.status is not None:
            written = await self._writer.patch_status(res, active.raw, t.status.to_dict())
            scaler_changed(res.kind, active.raw, active.scaler.status, t.status, job=seen.name)
            active = seen.scaler_written(active, written)
        if t.targets is not None:
            await self._settle(seen, active, t)
        if t.replicas is not None:
            await self._desired.write(seen, t.replicas)
        self._notes(seen, active, t.notes)
        if t.script is not None:
            # The marker is stored: from here the exec and the record of its outcome go together
            # (a stop does not cut them apart; only the grace period's end or a lost lease does).
            self._unsent.discard(uid)
            code, detail, started = await self._run(seen, t.script)
            return await self._script_ran(seen, active, code, detail, started=started)
        if t.outcome is not None:
            self._unsent.discard(uid)
            await self._finished(seen, active, t.outcome)
            return None
        return active

    async def _script_ran(
        self,
        seen: Observation,
        active: ObservedScaler,
        code: int | None,
        detail: str,
        *,
        started: bool,
    ) -> ObservedScaler | None:
        """Record the outcome of a script that ran, even when its scaler changed meanwhile.

        The outcome is known only here: given up to a Conflict, the next reconcile would find the
        Script step without an outcome and fail the scaler as interrupted. So a scaler still
        waiting for this outcome is read again and the outcome applied to it.
        """
        attempts = _RECORD_ATTEMPTS
        while True:
            after = script_finished(
                active.scaler,
                seen.view,
                self._clock.now(),
                exit_code=code,
                detail=detail,
                started=started,
            )
            try:
                return await self.apply(seen, active, after)
            except Conflict:
                attempts -= 1
                fresh = await self._reread(active) if attempts else None
                if fresh is None or not awaits_outcome(fresh.scaler):
                    raise  # the outcome was written and a later write met the change, or gave up
                active = seen.scaler_written(active, fresh.raw)

    async def _reread(self, observed: ObservedScaler) -> ObservedScaler | None:
        """The scaler as the API server has it now (None: gone, or another object by now)."""
        res = SCALEOUTS if observed.scaler.direction is Direction.OUT else SCALEINS
        try:
            raw = await self._client.get(
                res, objects.name(observed.raw), namespace=objects.namespace(observed.raw)
            )
        except NotFound:
            return None
        if objects.uid(raw) != objects.uid(observed.raw):
            return None
        return parse_scaler(raw)

    def _notes(self, seen: Observation, active: ObservedScaler, notes: Iterable[Note]) -> None:
        for note in notes:
            target = active.raw if note.on == "scaler" else seen.raw
            self._recorder.event(target, note.type, note.reason, note.message)

    async def _run(self, seen: Observation, run: ScriptRun) -> tuple[int | None, str, bool]:
        """Run the script at most once: ``(exit code or None, what it said, may have started)``.

        An exec refused before the command started (no connection, or an HTTP answer instead of
        the switch of protocols) ran nothing, so a transient refusal (429, 5xx, no connection) is
        tried again, with backoff, for up to the exec's own timeout; the client retried each
        attempt a few times already. Nothing that may have started is ever repeated: a failure
        after the upgrade or a lost answer is an unknown outcome.
        """
        executor = seen.elasticity.executor
        if executor is None:
            return None, "no launcher to run it on", False
        started = self._clock.monotonic()
        give_up = started + run.timeout
        delay = _NOT_STARTED_BACKOFF
        where = {
            "kind": self.kind,
            "namespace": seen.namespace,
            "name": seen.name,
            "launcher": executor.pod,
        }
        try:
            while True:
                try:
                    result = await self._client.exec(
                        seen.namespace,
                        executor.pod,
                        run.command,
                        container=executor.container,
                        timeout=run.timeout,
                    )
                except ExecFailed as exc:
                    return None, str(exc), True  # after the upgrade: it may have started
                except (ApiError, RequestNotSent) as exc:
                    # Refused before the command started: it ran nothing.
                    if not _transient(exc) or self._clock.monotonic() + delay > give_up:
                        return None, str(exc), False
                    log.warning(
                        "the script's exec was refused before it started; trying again",
                        **where,
                        error=str(exc),
                        delay=delay,
                    )
                    await self._clock.sleep(delay)
                    delay = min(delay * 2, _NOT_STARTED_BACKOFF_CAP)
                    continue
                except TransportError as exc:
                    return None, str(exc), True  # the answer was lost: it may have run
                except Fenced:
                    log.warning(
                        "the lease was lost before the script's exec was sent: it did not run, "
                        "but its attempt marker is stored, so the next leader judges it "
                        "interrupted and does not run it",
                        **where,
                    )
                    raise
                except asyncio.CancelledError:
                    log.warning(
                        "the script's exec was cut short by the stop: its outcome is unknown; "
                        "the next operator judges it interrupted and does not run it again",
                        **where,
                    )
                    raise
                break
        finally:
            elapsed = self._clock.monotonic() - started
            metrics.EXEC_DURATION.labels(kind=self.kind, purpose="script").observe(elapsed)
        stderr = result.stderr.decode(errors="replace").strip()
        return result.exit_code, stderr[-512:], True

    async def _finished(self, seen: Observation, active: ObservedScaler, outcome: Outcome) -> None:
        scaler = active.scaler
        direction = "out" if scaler.direction is Direction.OUT else "in"
        metrics.SCALE_OPERATIONS.labels(kind=self.kind, direction=direction, result=outcome).inc()
        await self._announce_end(seen, scaler)

    async def _announce_end(self, seen: Observation, scaler: Scaler) -> None:
        """Clear the job's scaler; ``Scaling`` turns False with the finished scaler's outcome."""
        change = ended(scaler)
        await self._set_current(seen, None, change.reason, change.message)
        failed = change.reason.endswith("Failed")
        self._recorder.event(
            seen.raw, "Warning" if failed else "Normal", change.reason, change.message
        )

    async def close(self, seen: Observation) -> None:
        """A finished job: fail its unfinished adopted scalers and clear the job's scaler."""
        await self._fail_pending(
            seen,
            "JobFinished",
            lambda scaler: f"{self.kind} {seen.name} finished before {scaler} completed",
        )
        if seen.members.scaler:
            names = seen.members.fields
            await self._writer.patch_own_status(
                self.jobs, seen.raw, {names.scaler: None}, owned=names.owned()
            )

    async def _fail_pending(
        self, seen: Observation, reason: str, message_of: Callable[[str], str]
    ) -> None:
        """End every unfinished adopted scaler with ``ScaleFailed`` (``reason``) and an Event.

        ``message_of`` says why, given the scaler's full name.
        """
        for observed in seen.scalers:
            status = observed.scaler.status
            if status.finished() or not status.adopted():
                continue
            message = message_of(observed.scaler.full_name)
            finished = _failed_status(observed, seen, reason, message)
            res = SCALEOUTS if observed.scaler.direction is Direction.OUT else SCALEINS
            await self._writer.patch_status(res, observed.raw, finished)
            self._recorder.event(observed.raw, "Warning", reason, message)
            log.warning(
                "scaler failed",
                kind=res.kind,
                namespace=objects.namespace(observed.raw),
                name=objects.name(observed.raw),
                job=seen.name,
                reason=reason,
                message=message,
            )
            direction = "out" if observed.scaler.direction is Direction.OUT else "in"
            metrics.SCALE_OPERATIONS.labels(
                kind=self.kind, direction=direction, result=Outcome.FAILED
            ).inc()


def _transient(exc: EtctlError) -> bool:
    return isinstance(exc, RequestNotSent | TooManyRequests | ServerError)


def _failed_status(
    observed: ObservedScaler, seen: Observation, reason: str, message: str
) -> dict[str, Any]:
    status = observed.scaler.status
    conditions = set_condition(
        status.conditions,
        JobConditionType.SCALE_FAILED,
        ConditionStatus.TRUE,
        reason=reason,
        message=message,
        now=seen.now,
    )
    return {
        "conditions": [c.to_dict() for c in conditions],
        "phase": conditions[-1].type,
        "step": ScaleStep.DONE.value,
    }
