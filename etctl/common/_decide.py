"""The steps of a reconcile, in their order: what the job wants, from one observation.

:func:`decide` runs the steps on an :class:`~etctl.common._observe.Observed` and strings what each
returns into one :class:`~etctl.common._plan.Decision`; no step writes anything. The order is the
reconcile's table of contents:

1. **Created**: a job seen for the first time gets its ``Created`` condition.
2. **Finished** (:func:`~etctl.common._runpolicy.finish`): clean up per cleanPodPolicy, drop the
   PodGroup, delete the job once its TTL expires. Nothing else.
3. **Suspended** (:func:`~etctl.common._runpolicy.suspend`): no pods, services or PodGroup; extra
   objects made and kept (as mpi-operator does). Nothing else.
4. **Started** (:func:`~etctl.common._runpolicy.start`): the start time; a resumed job starts again.
5. **Limits** (:func:`~etctl.common._runpolicy.limits`): the deadline and the backoff limit fail the
   job (everything deleted); a kind that restarts the whole job after a failure does so instead.
6. **Gang** (:func:`~etctl.common._podgroups.podgroup_step`): the PodGroup; pods wait until the
   scheduler admits it.
7. **Extra objects** (:func:`~etctl.common._children.extras_step`).
8. **Replicas** (:func:`~etctl.common._replicas.replicas_step`): scale, restart, create pods and
   services.

A step that settles the job's fate (a failure, a suspension, a whole-job restart) halts the ones
after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from etctl.common import _gang as gang
from etctl.common import _runpolicy as runpolicy
from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._children import extras_step
from etctl.common._conditions import get_condition, is_finished
from etctl.common._ledger import WriteLedger
from etctl.common._observe import Observed, Plans
from etctl.common._phases import Phases
from etctl.common._plan import Change, Decision, Step
from etctl.common._plugin import Verdict
from etctl.common._podgroups import podgroup_step
from etctl.common._replicas import replicas_step
from etctl.common._status import ConditionChange
from etctl.runtime import CacheReader

__all__ = ["Steps", "decide"]


@dataclass(frozen=True, slots=True)
class Steps:
    """What the steps of one kind's reconciles need besides the observation.

    Attributes:
        phases: the job kind's phases.
        scheduler: the gang scheduler, if any.
        cache: the informer cache (PodGroups and PriorityClasses are read from it).
        ledger: the writes' ledger (names taken by strangers are read through it).
    """

    phases: Phases[Any]
    scheduler: gang.Scheduler | None
    cache: CacheReader
    ledger: WriteLedger


def decide(seen: Observed[Any], plans: Plans, steps: Steps) -> Decision:
    """What the job wants now (see the module docstring)."""
    decision = Decision()
    if get_condition(seen.job.status.conditions, JobConditionType.CREATED) is None:
        first = ConditionChange(
            JobConditionType.CREATED,
            ConditionStatus.TRUE,
            f"{seen.kind}Created",
            f"{seen.kind} {seen.name} is created.",
        )
        decision = decision.then(Step(facts=(Change(first),)))
    podgroups = steps.scheduler.podgroups if steps.scheduler is not None else None
    if is_finished(seen.job.status.conditions):
        return decision.then(runpolicy.finish(seen, podgroups=podgroups))
    extras = steps.phases.extra_objects
    state = seen.state(plans)
    if seen.job.run_policy().suspend:
        decision = decision.then(runpolicy.suspend(seen, podgroups=podgroups))
        if extras is not None:
            # As mpi-operator: a suspended job's extra children are made and kept.
            decision = decision.then(extras_step(seen, extras, state, steps.ledger, prune=False))
        return decision
    decision = decision.then(runpolicy.start(seen))
    limits = runpolicy.limits(
        seen,
        start_time=decision.start_time,
        podgroups=podgroups,
        judgement=_whole_restarts(seen, steps, lambda: steps.phases.judge(seen.job, state)),
    )
    decision = decision.then(limits)
    if limits.halt:
        return decision
    if steps.scheduler is not None:
        gang_step, admitted = podgroup_step(seen, steps.scheduler, steps.cache)
        decision = decision.then(gang_step)
        if gang_step.halt or not admitted:
            return decision
    if extras is not None:
        decision = decision.then(extras_step(seen, extras, state, steps.ledger))
    return decision.then(
        replicas_step(
            seen,
            plans,
            phases=steps.phases,
            scheduler=steps.scheduler,
            ledger=steps.ledger,
        )
    )


def _whole_restarts(
    seen: Observed[Any], steps: Steps, judgement: Callable[[], Verdict | None]
) -> Callable[[], Verdict | None] | None:
    """The judgement the limits step asks, for a kind that restarts the whole job after failing."""
    if not steps.phases.restarts_on_failure(seen.job):
        return None
    return judgement
