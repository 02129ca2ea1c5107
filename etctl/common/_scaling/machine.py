r"""The scaler state machine, as pure functions over persisted status.

A scaler moves through :class:`~etctl.common._scaling.api.ScaleStep` steps::

    ScaleOut: start -> Creating -> Joining -> [Script] -> Finishing -> Done (ScaleSucceeded)
                          \\            \\          \\
                           `------------`----------`--> RollingBack -> Done (ScaleFailed)
    ScaleIn:  start -> Draining -> [Script] -> Deleting -> Finishing -> Done (ScaleSucceeded)
                          \\            \\
                           `------------`--> Done (ScaleFailed; the workers stay members)

* **start** (:mod:`~etctl.common._scaling.start`): check the request (schema rules, bounds,
  names, and that the job's objects can hold the new membership within the cluster's size
  limits), choose the workers (new names after the highest index ever used; or victims,
  :func:`~etctl.common._scaling.selection.pick_victims`).
* **Creating**: the new workers are targets; wait until every one runs, at most ``timeout``
  seconds from the start of the step (a failed one fails the scale-out at once).
* **Joining** / **Draining**: the membership (``currentWorkers``, the hostfile) gains or loses
  the workers; wait until the job's consumer confirms it holds it (the launcher's hostfile), at
  most ``timeout`` seconds.
* **Script**: the scaler's script runs on the launcher with the new host list.
* **Deleting** / **RollingBack**: the removed (or rolled back) workers leave the targets; wait
  until their pods are gone.
* **Finishing**: the job's desired worker count (what ``/scale`` reads) becomes the new size, so a
  user's scaler and ``/scale`` never fight; a count someone changed while the scaler ran is left
  as it is, and applied after it.

Decisions before actions: :func:`advance` returns a :class:`Transition` whose ``status`` (the
decision: chosen workers, the new step, when it started) the caller writes to the scaler *before*
it applies anything else the transition asks for (new targets, the spec, the script). A restarted
operator therefore finds every decision it acted on, and re-applying a step's action is
idempotent (targets are set, not appended).

At most once, and never judged from a guess: the Script step is written before the script runs,
with its ``ScriptExecuted`` condition Unknown, reason ``ScriptPending`` (decided, not sent). Then
an *attempt marker* is written, reason ``ScriptSending``, and only once it is stored is the exec
sent; its outcome (True ``ScriptSucceeded``, False ``ScriptFailed``...) is written after. So a
scaler found in the Script step tells what happened to it:

* ``ScriptPending``: the exec was never sent (the operator stopped, or the write of the marker
  failed): it is sent now, marker first;
* ``ScriptSending`` with no outcome: the exec may have been sent, and the script may have run. It
  is *not* run again, its outcome is unknown, and the scaler fails with reason
  ``ScriptInterrupted`` (a scale-out rolls its workers back; a scale-in keeps them). The one
  exception is the process that wrote the marker and knows it never sent the exec (the marker's
  write failed without saying whether it was stored, and read back, was): it sends it
  (``unsent``, :func:`advance`);
* no ``ScriptExecuted`` at all: a Script step written by an earlier version, which sent the exec
  right after the step; judged as ``ScriptSending``.

Time: every wait that can time out returns the seconds left as ``Transition.wait``, so the
controller requeues exactly then; nothing polls.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._conditions import get_condition
from etctl.common._scaling import membership
from etctl.common._scaling.api import (
    ScalerStatus,
    ScaleStep,
)
from etctl.common._scaling.scaler import (
    Direction,
    JobView,
    Note,
    Outcome,
    Scaler,
    ScriptRun,
    Transition,
)
from etctl.common._scaling.script import EXEC_GRACE_SECONDS, host_list, script_command
from etctl.common._scaling.start import start
from etctl.common._scaling.transitions import (
    concluded,
    counted,
    failed,
    listed,
    named,
    remaining,
    updated,
)

__all__ = ["PENDING", "SENDING", "advance", "awaits_outcome", "script_finished"]

PENDING = "ScriptPending"
"""``ScriptExecuted`` Unknown: the Script step is decided and its exec not sent."""
SENDING = "ScriptSending"
"""``ScriptExecuted`` Unknown: the attempt marker, stored before the exec is sent."""


# --- finishing ----------------------------------------------------------------------------------


def _removed(names: Sequence[str], job: JobView) -> Transition | None:
    """Take ``names`` out of the targets and wait for their pods to go; None once they are gone."""
    if any(name in job.targets for name in names):
        return Transition(targets=tuple(n for n in job.targets if n not in names))
    if any(name in job.present for name in names):
        return Transition()
    return None


def _worker_failed(scaler: Scaler, job: JobView, now: datetime) -> Transition | None:
    """Roll a scale-out back when one of its new workers failed (None when none did)."""
    failed = [name for name in scaler.chosen if job.phases.get(name) == "Failed"]
    if not failed:
        return None
    message = f"{named('worker', failed)} failed before {job.title} could use it"
    return _rollback(scaler, job, now, "WorkerFailed", message)


def _rollback(scaler: Scaler, job: JobView, now: datetime, reason: str, message: str) -> Transition:
    added = scaler.chosen
    status = updated(
        scaler.status,
        now,
        step=ScaleStep.ROLLING_BACK,
        conditions=[(JobConditionType.SCALING, ConditionStatus.FALSE, reason, message)],
    )
    targets = tuple(name for name in job.targets if name not in added)
    note = Note("scaler", "Warning", reason, f"{message}; removing {named('worker', added)}")
    return Transition(status=status, targets=targets, notes=(note,))


def _fail(scaler: Scaler, job: JobView, now: datetime, reason: str, message: str) -> Transition:
    """Fail a started scaler: a scale-out rolls its workers back, a scale-in just stops."""
    if scaler.direction is Direction.OUT and scaler.chosen:
        return _rollback(scaler, job, now, reason, message)
    return failed(scaler, now, reason, message)


def _finishing(scaler: Scaler, now: datetime) -> Transition:
    return Transition(status=updated(scaler.status, now, step=ScaleStep.FINISHING))


# --- steps --------------------------------------------------------------------------------------


def _creating(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    added = scaler.chosen
    missing = [name for name in added if name not in job.targets]
    if missing:  # re-apply the step's action (the operator stopped before it was written)
        last = membership.high_water(job.elasticity.member_prefix, job.last_index, added)
        return Transition(targets=(*job.targets, *missing), last_index=last)
    rolled_back = _worker_failed(scaler, job, now)
    if rolled_back is not None:
        return rolled_back
    if all(job.phases.get(name) == "Running" for name in added):
        return Transition(status=updated(scaler.status, now, step=ScaleStep.JOINING))
    left = remaining(scaler.status, scaler.spec.timeout, now)
    if left <= 0:
        waiting = [name for name in added if job.phases.get(name) != "Running"]
        message = (
            f"{named('worker', waiting)} did not run within the timeout of {scaler.spec.timeout} s"
        )
        return _rollback(scaler, job, now, "ScaleOutTimeout", message)
    return Transition(wait=left)


def _membership_settled(scaler: Scaler, job: JobView) -> bool:
    chosen = set(scaler.chosen)
    current = set(job.current)
    placed = chosen <= current if scaler.direction is Direction.OUT else not chosen & current
    return placed and job.elasticity.membership_delivered


def _joining_or_draining(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    if scaler.direction is Direction.OUT:
        rolled_back = _worker_failed(scaler, job, now)
        if rolled_back is not None:
            return rolled_back
    if _membership_settled(scaler, job):
        return _after_membership(scaler, job, now)
    left = remaining(scaler.status, scaler.spec.timeout, now)
    if left > 0:
        return Transition(wait=left)
    verb = "with" if scaler.direction is Direction.OUT else "without"
    message = (
        f"the membership of {job.title} {verb} {named('worker', scaler.chosen)} was not "
        f"delivered within the timeout of {scaler.spec.timeout} s"
    )
    reason = "JoinTimeout" if scaler.direction is Direction.OUT else "DrainTimeout"
    return _fail(scaler, job, now, reason, message)


def _after_membership(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    script = scaler.spec.script
    if script:
        executor = job.elasticity.executor
        if executor is None:
            message = f"{job.title} has no running launcher to run the script {script} on"
            return _fail(scaler, job, now, "NoLauncher", message)
        message = (
            f"script {script} is to run on launcher {executor.pod} of {job.title}; not sent yet"
        )
        pending = (JobConditionType.SCRIPT_EXECUTED, ConditionStatus.UNKNOWN, PENDING, message)
        status = updated(scaler.status, now, step=ScaleStep.SCRIPT, conditions=[pending])
        return Transition(status=status)
    return _next_after_script(scaler, job, now)


def _send_script(scaler: Scaler, job: JobView, now: datetime, *, marked: bool) -> Transition:
    """Send the script: its attempt marker first (unless ``marked``: stored), then the exec."""
    script = scaler.spec.script
    executor = job.elasticity.executor
    if executor is None:
        message = (
            f"script {script} never started on {job.title}: it has no running launcher to run "
            "it on; it did not run"
        )
        return _script_failed(scaler, job, now, "ScriptNotStarted", message)
    hosts = host_list(job.current, job.elasticity.slots)
    command = script_command(
        script or "", timeout=scaler.spec.timeout, env=scaler.spec.env or (), hosts=hosts
    )
    run = ScriptRun(command, float(scaler.spec.timeout) + EXEC_GRACE_SECONDS)
    if marked:
        return Transition(script=run)
    message = (
        f"script {script} is being sent to launcher {executor.pod} of {job.title}; from here on "
        "it may run, and it is never sent again"
    )
    sending = (JobConditionType.SCRIPT_EXECUTED, ConditionStatus.UNKNOWN, SENDING, message)
    return Transition(status=updated(scaler.status, now, conditions=[sending]), script=run)


def _next_after_script(
    scaler: Scaler, job: JobView, now: datetime, *, status: ScalerStatus | None = None
) -> Transition:
    base = scaler if status is None else scaler.with_status(status)
    if scaler.direction is Direction.OUT:
        return Transition(status=updated(base.status, now, step=ScaleStep.FINISHING))
    victims = scaler.chosen
    targets = tuple(name for name in job.targets if name not in victims)
    return Transition(status=updated(base.status, now, step=ScaleStep.DELETING), targets=targets)


def _script_interrupted(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    message = (
        f"the script {scaler.spec.script} was sent to {job.title}, or about to be, by an operator "
        "that did not record its outcome; it is not run again (at most once) and its outcome is "
        "unknown"
    )
    return _script_failed(scaler, job, now, "ScriptInterrupted", message)


def _script_failed(
    scaler: Scaler, job: JobView, now: datetime, reason: str, message: str
) -> Transition:
    status = updated(
        scaler.status,
        now,
        conditions=[(JobConditionType.SCRIPT_EXECUTED, ConditionStatus.FALSE, reason, message)],
    )
    return _fail(scaler.with_status(status), job, now, reason, message)


def _draining_done(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    leaving = _removed(scaler.chosen, job)
    return leaving if leaving is not None else _finishing(scaler, now)


def _rolled_back(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    added = scaler.chosen
    leaving = _removed(added, job)
    if leaving is not None:
        return leaving
    scaling = get_condition(scaler.status.conditions, JobConditionType.SCALING)
    reason = scaling.reason if scaling and scaling.reason else "ScaleFailed"
    message = scaling.message if scaling and scaling.message else f"{scaler.full_name} failed"
    event = f"{message}; {named('worker', added)} removed"
    return concluded(scaler, now, Outcome.FAILED, reason, message, event=event)


def _finish(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    size = len(job.targets)
    change = len(scaler.chosen)
    before = size - change if scaler.direction is Direction.OUT else size + change
    # Only a desired count still at the size the scaler started from is moved along: one that
    # changed meanwhile is a request (kubectl scale, an autoscaler) the job follows afterwards.
    if job.elasticity.replicas == before != size:
        return Transition(replicas=size)
    verb = "Out" if scaler.direction is Direction.OUT else "In"
    reason = f"Scaling{verb}Succeeded"
    message = f"{job.title} has {counted(size, 'worker')}: {listed(job.targets)}"
    return concluded(scaler, now, Outcome.SUCCEEDED, reason, message)


# --- the machine --------------------------------------------------------------------------------


def _script_step(scaler: Scaler, job: JobView, now: datetime, *, unsent: bool) -> Transition:
    executed = get_condition(scaler.status.conditions, JobConditionType.SCRIPT_EXECUTED)
    if executed is None:
        return _script_interrupted(scaler, job, now)  # an earlier version's step: it may have run
    if executed.status is ConditionStatus.UNKNOWN:
        if executed.reason == PENDING:
            return _send_script(scaler, job, now, marked=False)
        if unsent:
            return _send_script(scaler, job, now, marked=True)
        return _script_interrupted(scaler, job, now)
    return _next_after_script(scaler, job, now)


def _done(scaler: Scaler, job: JobView, now: datetime) -> Transition:
    return Transition()


_STEPS = {
    ScaleStep.CREATING: _creating,
    ScaleStep.JOINING: _joining_or_draining,
    ScaleStep.DRAINING: _joining_or_draining,
    ScaleStep.DELETING: _draining_done,
    ScaleStep.ROLLING_BACK: _rolled_back,
    ScaleStep.FINISHING: _finish,
    ScaleStep.DONE: _done,
}


def advance(scaler: Scaler, job: JobView, now: datetime, *, unsent: bool = False) -> Transition:
    """The next transition of the job's active ``scaler`` (idle while it waits).

    Args:
        scaler: the active scaler.
        job: the job.
        now: the time.
        unsent: the calling process wrote this scaler's attempt marker and knows it never sent
            the exec: a marker found with no outcome is sent, not judged interrupted.
    """
    step = scaler.status.step
    if step is None:
        return start(scaler, job, now)
    if step is ScaleStep.SCRIPT:
        return _script_step(scaler, job, now, unsent=unsent)
    return _STEPS[step](scaler, job, now)


def awaits_outcome(scaler: Scaler) -> bool:
    """In the Script step with no outcome recorded yet (pending, being sent, or from before)."""
    status = scaler.status
    executed = get_condition(status.conditions, JobConditionType.SCRIPT_EXECUTED)
    unknown = executed is None or executed.status is ConditionStatus.UNKNOWN
    return status.step is ScaleStep.SCRIPT and unknown


def script_finished(
    scaler: Scaler,
    job: JobView,
    now: datetime,
    *,
    exit_code: int | None,
    detail: str,
    started: bool = True,
) -> Transition:
    """The transition after the script of a scaler in the Script step ended.

    Args:
        scaler: the scaler, in the Script step.
        job: the job.
        now: the time.
        exit_code: the script's exit code, or None when the exec itself failed (refused,
            disconnected, past its timeout).
        detail: what it printed on stderr, or why the exec failed.
        started: False when the exec provably never started the script (refused before the
            upgrade, even after retries): reason ``ScriptNotStarted``; True when it may have
            run (without an exit code its outcome is unknown: ``ScriptFailed``).
    """
    if exit_code == 0:
        message = f"script {scaler.spec.script} succeeded on {job.title}"
        status = updated(
            scaler.status,
            now,
            conditions=[
                (JobConditionType.SCRIPT_EXECUTED, ConditionStatus.TRUE, "ScriptSucceeded", message)
            ],
        )
        done = _next_after_script(scaler, job, now, status=status)
        return Transition(
            status=done.status,
            targets=done.targets,
            notes=(Note("scaler", "Normal", "ScriptSucceeded", message),),
        )
    if exit_code is None and not started:
        message = (
            f"script {scaler.spec.script} never started on {job.title}: {detail}; it did not run"
        )
        return _script_failed(scaler, job, now, "ScriptNotStarted", message)
    if exit_code is None:
        message = f"script {scaler.spec.script} on {job.title} did not report an end: {detail}"
    elif exit_code == 124:
        message = (
            f"script {scaler.spec.script} on {job.title} ran past its timeout of "
            f"{scaler.spec.timeout} s"
        )
    else:
        tail = f": {detail}" if detail else ""
        message = f"script {scaler.spec.script} on {job.title} exited with {exit_code}{tail}"
    return _script_failed(scaler, job, now, "ScriptFailed", message)
