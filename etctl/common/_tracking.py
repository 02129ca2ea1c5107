"""Tracking a job's writes in flight: expectation keys and the child event handler.

Every create and delete of a pod, service or extra object is recorded in an
:class:`~etctl.runtime.Expectations` under a key naming the job *instance* and the
kind of child::

    <namespace>/<job name>/<job uid>/<replica type lower>/pods      (and .../services)
    <namespace>/<job name>/<job uid>/<plural.group>                 (extra objects)

The uid makes a job deleted and re-created under the same name start clean, even if the
controller never saw the first one go. The JobController raises a record before each write and
lowers it when the write fails; :class:`ChildEventHandler`, registered on the informers of the
children, lowers it when the cache shows the write:

* an ADD of a child controlled by a job observes one creation (and its deletion too, when it
  arrives already terminating);
* an UPDATE that sets ``deletionTimestamp`` observes the deletion (the child no longer counts as
  live; its name stays taken until it is gone, which the slots account for);
* a DELETE (or a tombstone) observes the deletion.

The handler then enqueues the controlling job, as controller-runtime's ``EnqueueRequestForOwner``.
A child with no controller at all (an orphan: made by hand, or left behind by an orphaning delete)
enqueues its *would-be* owner instead, the job its ``job-name`` label names when its name starts
with ``<job>-``, as the ReplicaSet controller enqueues the owners an orphan matches: claiming
(:mod:`etctl.common._claim`) then adopts it at once, not at some unrelated later reconcile. The
handler never filters events itself and must run without predicates that drop creates or deletes.
"""

from __future__ import annotations

from collections.abc import Iterable

from etctl.common._labels import JOB_NAME, replica_type_of
from etctl.runtime import (
    PODS,
    SERVICES,
    CreateEvent,
    DeleteEvent,
    EnqueueRequestForOwner,
    Expectations,
    ObjectView,
    Request,
    Resource,
    UpdateEvent,
    objects,
)

__all__ = ["ChildEventHandler", "child_key", "job_prefix", "replica_key"]


def job_prefix(namespace: str, name: str, uid: str = "") -> str:
    """The common prefix of a job's keys (every instance of that name when ``uid`` is empty)."""
    return f"{namespace}/{name}/{uid}/" if uid else f"{namespace}/{name}/"


def replica_key(namespace: str, name: str, uid: str, replica_type: str, res: Resource) -> str:
    """The key of the pods (or services) of one replica type of a job instance."""
    return f"{job_prefix(namespace, name, uid)}{replica_type.lower()}/{res.plural}"


def child_key(namespace: str, name: str, uid: str, res: Resource) -> str:
    """The key of a job instance's extra objects of one resource."""
    return f"{job_prefix(namespace, name, uid)}{res.group_resource}"


class ChildEventHandler:
    """Observes a job's writes as its children's events arrive, then enqueues the job.

    Args:
        owner: the job resource (group and kind of the controller references to follow).
        child: the resource this handler's informer watches.
        expectations: the JobController's expectations.
        per_replica: the children are the slots' (keyed by replica type, as pods are) rather
            than extra objects; default: pods and services are, anything else is not (a kind
            without per-slot services may own a job-wide Service as an extra object).
    """

    __slots__ = ("_child", "_expectations", "_owner", "_owners", "_per_replica")

    def __init__(
        self,
        owner: Resource,
        child: Resource,
        expectations: Expectations,
        *,
        per_replica: bool | None = None,
    ) -> None:
        self._owner = owner
        self._child = child
        self._expectations = expectations
        self._owners = EnqueueRequestForOwner(owner.group, owner.kind)
        self._per_replica = child in (PODS, SERVICES) if per_replica is None else per_replica

    def _key(self, obj: ObjectView) -> str | None:
        ref = objects.controller_of(obj)
        if ref is None or ref.get("kind") != self._owner.kind:
            return None
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        job, uid = ref.get("name"), ref.get("uid")
        if group != self._owner.group or not isinstance(job, str) or not isinstance(uid, str):
            return None
        namespace = objects.namespace(obj)
        if self._per_replica:
            rtype = replica_type_of(obj)
            return replica_key(namespace, job, uid, rtype, self._child) if rtype else None
        return child_key(namespace, job, uid, self._child)

    def create(self, event: CreateEvent) -> Iterable[Request]:
        """Observe a creation; enqueue the controlling job."""
        key = self._key(event.obj)
        if key is not None:
            self._expectations.creation_observed(key)
            if objects.is_terminating(event.obj):
                self._expectations.deletion_observed(key, objects.name(event.obj))
        return [*self._owners.create(event), *_would_be_owner(event.obj)]

    def update(self, event: UpdateEvent) -> Iterable[Request]:
        """Observe a deletion that started; enqueue the old and new controlling jobs."""
        if objects.is_terminating(event.new) and not objects.is_terminating(event.old):
            key = self._key(event.new)
            if key is not None:
                self._expectations.deletion_observed(key, objects.name(event.new))
        return [*self._owners.update(event), *_would_be_owner(event.new)]

    def delete(self, event: DeleteEvent) -> Iterable[Request]:
        """Observe a deletion; enqueue the controlling job."""
        key = self._key(event.obj)
        if key is not None:
            self._expectations.deletion_observed(key, objects.name(event.obj))
        return self._owners.delete(event)

    def __repr__(self) -> str:
        return f"ChildEventHandler({self._owner.kind}, {self._child})"


def _would_be_owner(obj: ObjectView) -> list[Request]:
    """The job an orphan could belong to (its ``job-name`` label, its name's prefix), if any."""
    if objects.controller_of(obj) is not None or objects.is_terminating(obj):
        return []
    job = objects.labels(obj).get(JOB_NAME)
    if not job or not objects.name(obj).startswith(f"{job}-"):
        return []
    return [Request(objects.namespace(obj), job)]
