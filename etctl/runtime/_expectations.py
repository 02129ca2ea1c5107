"""Expectations: the writes a controller made that its cache has not shown yet.

A controller that creates five pods and reconciles again before the informer delivered them would
see too few pods and create more. Expectations (kube-controller-manager's
``ControllerExpectations``) record, per key such as ``ns/job/worker/pods``, how many creations are
pending and which deletions; the controller does not act on a key until it is
:meth:`~Expectations.satisfied`.

Call order, for every write:

1. raise the expectation *before* the write (``expect_creations(key, 1)`` /
   ``expect_deletions(key, [name])``), so the informer event can never arrive first;
2. on an API error, lower it at once (``creation_observed(key)`` / ``deletion_observed(key,
   name)``): no event will come for a write that did not happen. AlreadyExists on a create and
   NotFound on a delete lower it too (the state is already what was wanted, and no event follows);
3. otherwise the informer lowers it: an ADD of a controlled object calls ``creation_observed``,
   a DELETE calls ``deletion_observed``.

Fixes over the versions the reference operators shipped:

* deletions are tracked by name (or uid: any stable identity, used consistently), so a duplicate
  delete event (a watch DELETE plus a relist tombstone) is not counted twice;
* counts never go below zero, so an unexpected creation event cannot pre-pay a future expectation;
* a record expires ``ttl`` seconds (five minutes) after its last raise, on the injected clock,
  and an expired record is dropped when checked, so a lost event delays a controller by the TTL
  at most and stale counts never pile onto new ones;
* nothing resets expectations at the start of a sync (that disabled them in kubeflow/common).

AND semantics across a job's keys are the caller's: a job is in sync only when *every* key it
uses (pods and services of every replica type) is satisfied; :meth:`Expectations.all_satisfied`
says exactly that. Forget a deleted job's keys with :meth:`Expectations.forget_prefix`, or a
re-created job of the same name would wait for its predecessor's events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from etctl.log import get_logger
from etctl.runtime._clock import Clock

__all__ = ["DEFAULT_TTL", "Expectations", "Pending"]

log = get_logger(__name__)

DEFAULT_TTL = 300.0
"""Seconds after its last raise that an unfulfilled record stops blocking (client-go's 5 min)."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A snapshot of one key's unfulfilled expectations.

    Attributes:
        creations: creations not yet observed.
        deletions: names whose deletion was not yet observed.
        age: seconds since the expectation was last raised.
    """

    creations: int
    deletions: frozenset[str]
    age: float


class _Record:
    __slots__ = ("creations", "deletions", "raised_at")

    def __init__(self, raised_at: float) -> None:
        self.creations = 0
        self.deletions: set[str] = set()
        self.raised_at = raised_at

    def fulfilled(self) -> bool:
        return self.creations <= 0 and not self.deletions


class Expectations:
    """Pending creations and deletions per key, with a TTL.

    Args:
        clock: the clock the TTL runs on.
        ttl: seconds after the last raise at which an unfulfilled record stops blocking.
    """

    def __init__(self, *, clock: Clock, ttl: float = DEFAULT_TTL) -> None:
        self._clock = clock
        self._ttl = ttl
        self._records: dict[str, _Record] = {}

    def _raise(self, key: str) -> _Record:
        record = self._records.get(key)
        now = self._clock.monotonic()
        if record is None or self._expired(record, now):
            record = self._records[key] = _Record(now)
        record.raised_at = now
        return record

    def _expired(self, record: _Record, now: float) -> bool:
        return now - record.raised_at >= self._ttl

    def _settle(self, key: str, record: _Record) -> None:
        if record.fulfilled():
            del self._records[key]

    def expect_creations(self, key: str, count: int) -> None:
        """Record ``count`` more creations under ``key`` (before sending them)."""
        if count < 0:
            msg = "count must not be negative"
            raise ValueError(msg)
        if count:
            self._raise(key).creations += count

    def expect_deletions(self, key: str, names: Iterable[str]) -> None:
        """Record deletions of ``names`` under ``key`` (before sending them)."""
        wanted = set(names)
        if wanted:
            self._raise(key).deletions |= wanted

    def creation_observed(self, key: str) -> None:
        """One creation under ``key`` was seen (informer ADD) or will never happen (API error)."""
        record = self._records.get(key)
        if record is None or record.creations <= 0:
            return
        record.creations -= 1
        self._settle(key, record)

    def deletion_observed(self, key: str, name: str) -> None:
        """The deletion of ``name`` was seen or will never happen; repeats are ignored."""
        record = self._records.get(key)
        if record is None or name not in record.deletions:
            return
        record.deletions.discard(name)
        self._settle(key, record)

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending under ``key``, or its record expired (then dropped)."""
        record = self._records.get(key)
        if record is None:
            return True
        if record.fulfilled():
            del self._records[key]
            return True
        if self._expired(record, self._clock.monotonic()):
            log.warning(
                "expectations expired unfulfilled",
                key=key,
                creations=record.creations,
                deletions=sorted(record.deletions),
            )
            del self._records[key]
            return True
        return False

    def all_satisfied(self, keys: Iterable[str]) -> bool:
        """True when every key is satisfied (the AND a job's reconcile needs)."""
        return all([self.satisfied(key) for key in keys])  # noqa: C419 - check (and expire) every key

    def pending(self, key: str) -> Pending | None:
        """What ``key`` still waits for, or ``None`` when nothing is recorded."""
        record = self._records.get(key)
        if record is None:
            return None
        age = self._clock.monotonic() - record.raised_at
        return Pending(max(record.creations, 0), frozenset(record.deletions), age)

    def forget(self, key: str) -> None:
        """Drop the record of ``key`` (its owner was deleted)."""
        self._records.pop(key, None)

    def forget_prefix(self, prefix: str) -> None:
        """Drop every record whose key starts with ``prefix`` (``ns/job/``: a deleted job)."""
        for key in [k for k in self._records if k.startswith(prefix)]:
            del self._records[key]

    def __len__(self) -> int:
        return len(self._records)
