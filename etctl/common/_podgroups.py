"""The job's PodGroup (step 6 of the reconcile): wanted, kept in line, dropped when done.

:func:`podgroup_step` wants the PodGroup :mod:`etctl.common._gang` describes created when it is
missing, and patched when the fields the controller sets drifted (comparing quantities by value and
never the live object against itself, kubeflow's ``SyncPodGroup`` bug), and says whether the job's
pods may be created now (volcano: once the group is admitted, as observed). A PodGroup of the job's
name that the job does not control is never touched (a Warning ``ErrResourceExists`` event) and
holds pod creation, since the pods would join a stranger's gang. A run policy the gang cannot be
built from (a ``minResources`` that is no quantity) fails the job as invalid.

The PodGroup is deleted when the job finishes, is suspended, or fails on its deadline or backoff
limit (:mod:`etctl.common._runpolicy`).
"""

from __future__ import annotations

from typing import Any

from etctl.common import _gang as gang
from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._observe import Observed
from etctl.common._plan import Change, Create, JobEvent, Stage, Step, Update
from etctl.common._status import ConditionChange
from etctl.errors import ConfigError
from etctl.runtime import PRIORITYCLASSES, CacheReader, ObjectView, objects

__all__ = ["controlled_podgroup", "podgroup_step"]


def controlled_podgroup(
    scheduler: gang.Scheduler, reader: CacheReader, seen_name: str, namespace: str, uid: str
) -> ObjectView | None:
    """The job's PodGroup from the cache, when the job controls one."""
    found = reader.get(scheduler.podgroups, seen_name, namespace=namespace)
    return found if found is not None and objects.controller_ref(found) == uid else None


def podgroup_step(
    seen: Observed[Any], scheduler: gang.Scheduler, reader: CacheReader
) -> tuple[Step, bool]:
    """The PodGroup wanted, and whether the job's pods may be created now."""
    try:
        desired = _desired(seen, scheduler, reader)
    except ConfigError as exc:
        invalid = ConditionChange(
            JobConditionType.FAILED,
            ConditionStatus.TRUE,
            f"{seen.kind}Invalid",
            f"{seen.kind} {seen.name} is invalid: {exc}",
        )
        return Step(facts=(Change(invalid),), judged=False, halt=True), False
    res = scheduler.podgroups
    live = seen.podgroup
    if live is None:
        if reader.get(res, seen.name, namespace=seen.namespace) is not None:
            message = (
                f"podgroup {seen.name} already exists and is not controlled by {seen.kind} "
                f"{seen.name}; pods are not created until it is gone"
            )
            event = JobEvent("Warning", "ErrResourceExists", message)
            return Step(stages=(Stage("sequential", events=(event,), name="podgroup"),)), False
        create = Stage("sequential", (Create(res, desired),), name="podgroup")
        return Step(stages=(create,)), gang.is_admitted(scheduler, None)
    policy = seen.job.run_policy().scheduling_policy
    keep_queue = policy is None or not policy.queue
    patch = gang.podgroup_patch(live, desired, keep_queue=keep_queue)
    stages = (Stage("sequential", (Update(res, live, patch),), name="podgroup"),) if patch else ()
    return Step(stages=stages), gang.is_admitted(scheduler, live)


def _desired(seen: Observed[Any], scheduler: gang.Scheduler, reader: CacheReader) -> dict[str, Any]:
    policy = seen.job.run_policy()
    members = [
        gang.GangMember(rtype, spec.template, spec.replicas) for rtype, spec in seen.specs.items()
    ]
    minimum = gang.min_member(policy, members)
    priorities = _priorities(members, reader)
    resources = gang.min_resources(policy, members, minimum=minimum, priorities=priorities)
    return gang.build_podgroup(
        scheduler,
        job=seen.raw,
        owner_ref=seen.owner_ref,
        policy=policy,
        minimum=minimum,
        resources=resources,
    )


def _priorities(members: list[gang.GangMember], reader: CacheReader) -> dict[str, int]:
    out: dict[str, int] = {}
    for member in members:
        name = member.priority_class
        if not name or name in out:
            continue
        found = reader.get(PRIORITYCLASSES, name)
        value = found.get("value") if found is not None else None
        out[name] = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return out
