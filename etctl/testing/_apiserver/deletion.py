"""How a delete request changes an object: graceful deletion, finalizers and propagation policy.

:func:`plan_delete` is the decision the real registry takes in ``Store.Delete``, as a pure
function of the stored object and the ``DeleteOptions``:

* a delete of an object already being deleted changes nothing, except that a *graceful* deletion
  may be shortened by a smaller ``gracePeriodSeconds``;
* the propagation policy rewrites the garbage-collection finalizers: ``Orphan`` adds ``orphan``,
  ``Foreground`` adds ``foregroundDeletion``, ``Background`` removes both (no policy keeps the
  ones already present);
* a kind with graceful deletion (pods) is first updated with ``deletionTimestamp`` =
  now + grace period and ``deletionGracePeriodSeconds``; it is removed at once only when the
  period is 0 and no finalizer remains;
* any other kind is removed at once unless finalizers remain, in which case it is marked as
  deleting (``deletionTimestamp`` now, grace period 0);
* marking an object as deleting bumps its ``generation`` when it has one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from etctl.runtime import KubeObject
from etctl.testing._apiserver.status import Cause, invalid

if TYPE_CHECKING:
    from etctl.testing._apiserver.admissionrequest import Admission

__all__ = [
    "FOREGROUND",
    "ORPHAN",
    "DeleteOptions",
    "DeletePlan",
    "plan_delete",
    "timestamp",
]

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
_POLICIES = ("Foreground", "Background", "Orphan")


def timestamp(when: datetime) -> str:
    """RFC 3339 at second precision in UTC, as object timestamps are written."""
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """The ``DeleteOptions`` of a delete or deletecollection request.

    Attributes:
        grace_period_seconds: the requested grace period (negative counts as 1).
        propagation_policy: ``Foreground``, ``Background``, ``Orphan`` or None.
        orphan_dependents: the deprecated boolean form of the policy.
        uid: precondition on ``metadata.uid``.
        resource_version: precondition on ``metadata.resourceVersion``.
        dry_run: validate and report, commit nothing.
        admission: the request's admission (webhooks), for requests that arrive over HTTP;
            None for the internal API.
    """

    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    admission: Admission | None = None

    def validate(self) -> None:
        """Reject contradictory or unknown options as the real server does (422)."""
        causes: list[Cause] = []
        if self.orphan_dependents is not None and self.propagation_policy is not None:
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    "propagationPolicy",
                    f'Invalid value: "{self.propagation_policy}": orphanDependents and '
                    "deletionPropagation cannot be both set",
                )
            )
        if self.propagation_policy is not None and self.propagation_policy not in _POLICIES:
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    "propagationPolicy",
                    f'Unsupported value: "{self.propagation_policy}": supported values: '
                    '"Foreground", "Background", "Orphan", "nil"',
                )
            )
        if causes:
            raise invalid("meta.k8s.io", "DeleteOptions", "", causes)


@dataclass(frozen=True, slots=True)
class DeletePlan:
    """What a delete does.

    Attributes:
        update: the object to commit before (or instead of) removing it; None for no update.
        remove: True when the object is removed from storage.
    """

    update: KubeObject | None
    remove: bool


def _gc_finalizers(finalizers: list[str], options: DeleteOptions) -> list[str]:
    orphan: bool
    foreground: bool
    if options.orphan_dependents is not None:
        orphan, foreground = options.orphan_dependents, False
    elif options.propagation_policy is not None:
        orphan = options.propagation_policy == "Orphan"
        foreground = options.propagation_policy == "Foreground"
    else:
        orphan, foreground = ORPHAN in finalizers, FOREGROUND in finalizers
    kept = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if orphan:
        kept.append(ORPHAN)
    if foreground:
        kept.append(FOREGROUND)
    return kept if set(kept) != set(finalizers) else finalizers


def _fresh(existing: Mapping[str, Any]) -> KubeObject:
    obj = copy.deepcopy(dict(existing))
    obj["metadata"] = dict(obj.get("metadata") or {})
    return obj


def _bump_generation(meta: dict[str, Any]) -> None:
    generation = meta.get("generation")
    if isinstance(generation, int) and generation > 0:
        meta["generation"] = generation + 1


def plan_delete(
    existing: Mapping[str, Any],
    options: DeleteOptions,
    *,
    grace_period: int | None,
    now: datetime,
) -> DeletePlan:
    """Decide what deleting ``existing`` does.

    Args:
        existing: the stored object.
        options: the request's delete options.
        grace_period: the kind's grace period for this object (None: not a graceful kind); the
            caller computes it from ``options.grace_period_seconds`` and the object.
        now: the server clock's time.
    """
    meta = existing.get("metadata") or {}
    finalizers = [str(f) for f in meta.get("finalizers") or []]
    deleting = bool(meta.get("deletionTimestamp"))
    requested = options.grace_period_seconds
    if requested is not None and requested < 0:
        requested = 1

    if deleting:
        current = meta.get("deletionGracePeriodSeconds")
        if isinstance(current, int) and current > 0:
            if requested is None or requested >= current:
                return DeletePlan(update=None, remove=False)  # graceful deletion pending
            obj = _fresh(existing)
            start = _parse(str(meta["deletionTimestamp"])) - timedelta(seconds=current)
            obj["metadata"]["deletionTimestamp"] = timestamp(start + timedelta(seconds=requested))
            obj["metadata"]["deletionGracePeriodSeconds"] = requested
            return _finish_graceful(obj, finalizers, options, requested)
    elif grace_period is not None:
        obj = _fresh(existing)
        obj["metadata"]["deletionTimestamp"] = timestamp(now + timedelta(seconds=grace_period))
        obj["metadata"]["deletionGracePeriodSeconds"] = grace_period
        _bump_generation(obj["metadata"])
        return _finish_graceful(obj, finalizers, options, grace_period)
    new_finalizers = _gc_finalizers(finalizers, options)
    if not new_finalizers:
        return DeletePlan(update=None, remove=True)
    obj = _fresh(existing)
    obj["metadata"]["finalizers"] = new_finalizers
    _mark_deleting(obj["metadata"], now)
    return DeletePlan(update=obj, remove=False)


def _finish_graceful(
    obj: KubeObject, finalizers: list[str], options: DeleteOptions, period: int
) -> DeletePlan:
    new_finalizers = _gc_finalizers(finalizers, options)
    if new_finalizers != finalizers:
        obj["metadata"]["finalizers"] = new_finalizers
    if new_finalizers or period > 0:
        return DeletePlan(update=obj, remove=False)
    return DeletePlan(update=obj, remove=True)


def _mark_deleting(meta: dict[str, Any], now: datetime) -> None:
    existing = meta.get("deletionTimestamp")
    if not existing:
        _bump_generation(meta)
    if not existing or _parse(str(existing)) > now:
        meta["deletionTimestamp"] = timestamp(now)
    meta["deletionGracePeriodSeconds"] = 0
