"""Claiming a job's children: which objects it controls, adopting orphans, releasing strays.

A job controls exactly the objects whose *controller* owner reference carries its uid (the cache's
controller-owner index finds them). :func:`claim` reconciles that set with the job's selector
labels (:func:`~etctl.common.job_selector`), as client-go's ``ControllerRefManager``:

* an owned object that still matches is kept;
* an owned object whose labels no longer match is **released**: the job's owner reference is
  removed, so the object lives on by itself (someone relabelled it on purpose);
* an **orphan** (no controller at all) that matches, is not being deleted and carries a name the
  job could have given it (``<job>-...``, as every child a job creates is named) is **adopted**:
  the job's controller reference is added, but only after a fresh read from the API server
  confirms the job itself still exists with the same uid and is not being deleted (the cache may
  be behind a deletion, and adopting into a dying job would get the orphan garbage-collected).
  The name rule is what makes adoption safe: the job's own children left behind (an orphaning
  delete, an operator that lost its owner reference) come back under the job, while an object
  someone made by hand with copied labels (a debugging pod, say) is never adopted, and so never
  deleted as surplus;
* an object controlled by anything else is never touched, whatever its labels.

Adoption and release are merge patches that carry the object's ``resourceVersion``, so they apply
only to the version that was judged; a conflict or a vanished object is skipped (the next
reconcile judges the new version). Objects being deleted are neither adopted nor released.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from etctl.common._labels import BY_JOB, JOB_NAME, matches
from etctl.common._ledger import WriteLedger
from etctl.runtime import CacheReader, ObjectView, Resource, objects

__all__ = ["CanAdopt", "claim"]

CanAdopt = Callable[[], Awaitable[bool]]
"""Answers (once per reconcile, with a fresh read) whether the job may adopt orphans now."""


async def claim(
    reader: CacheReader,
    ledger: WriteLedger,
    res: Resource,
    *,
    job: ObjectView,
    owner_ref: Mapping[str, Any],
    selector: Mapping[str, str],
    can_adopt: CanAdopt,
) -> list[ObjectView]:
    """The objects of ``res`` the job controls after claiming (see the module docstring).

    Args:
        reader: the cache.
        ledger: writes adoption and release patches (guarded, read back when an answer is lost).
        res: the child resource.
        job: the job (its uid and namespace).
        owner_ref: the job's controller owner reference, as adoption adds it.
        selector: the job's selector labels.
        can_adopt: whether orphans may be adopted now.
    """
    namespace = objects.namespace(job)
    job_uid = objects.uid(job)
    kept: list[ObjectView] = []
    for obj in reader.controlled_by(res, job_uid):
        if objects.namespace(obj) != namespace:
            continue
        if matches(obj, selector) or objects.is_terminating(obj):
            kept.append(obj)
        else:
            await ledger.release(res, obj, job_uid)
    candidates = reader.by_index(res, BY_JOB, f"{namespace}/{selector.get(JOB_NAME, '')}")
    prefix = f"{objects.name(job)}-"
    orphans = [
        obj
        for obj in candidates
        if objects.controller_of(obj) is None
        and not objects.is_terminating(obj)
        and objects.name(obj).startswith(prefix)
        and matches(obj, selector)
    ]
    if orphans and await can_adopt():
        for obj in orphans:
            adopted = await ledger.adopt(res, obj, owner_ref)
            if adopted is not None:
                kept.append(adopted)
    return kept
