"""Which job a child's event wakes: its controller, or the job an orphan could belong to.

:class:`ChildEventHandler` is registered on the informers of a job kind's children (pods,
services, extra objects, PodGroups). It enqueues the controlling job, as controller-runtime's
``EnqueueRequestForOwner``; a child with no controller at all (an orphan: made by hand, or left
behind by an orphaning delete) enqueues its *would-be* owner instead, the job its ``job-name``
label names when its name starts with ``<job>-``, as the ReplicaSet controller enqueues the owners
an orphan matches: claiming (:mod:`etctl.common._claim`) then adopts it at once, not at some
unrelated later reconcile.

Whether a job's own writes are in the cache yet is not this handler's business: the
:class:`~etctl.common._ledger.WriteLedger` looks at the cache itself, and these events are what
wake the job once the cache caught up. The handler never filters events and must run without
predicates that drop creates or deletes.
"""

from __future__ import annotations

from collections.abc import Iterable

from etctl.common._labels import JOB_NAME
from etctl.runtime import (
    CreateEvent,
    DeleteEvent,
    EnqueueRequestForOwner,
    ObjectView,
    Request,
    Resource,
    UpdateEvent,
    objects,
)

__all__ = ["ChildEventHandler"]


class ChildEventHandler:
    """Enqueues the job a child's event concerns (see the module docstring).

    Args:
        owner: the job resource (group and kind of the controller references to follow).
    """

    __slots__ = ("_owner", "_owners")

    def __init__(self, owner: Resource) -> None:
        self._owner = owner
        self._owners = EnqueueRequestForOwner(owner.group, owner.kind)

    def create(self, event: CreateEvent) -> Iterable[Request]:
        """Enqueue the controlling job (or the job an orphan could belong to)."""
        return [*self._owners.create(event), *_would_be_owner(event.obj)]

    def update(self, event: UpdateEvent) -> Iterable[Request]:
        """Enqueue the old and new controlling jobs (or the job an orphan could belong to)."""
        return [*self._owners.update(event), *_would_be_owner(event.new)]

    def delete(self, event: DeleteEvent) -> Iterable[Request]:
        """Enqueue the controlling job."""
        return self._owners.delete(event)

    def __repr__(self) -> str:
        return f"ChildEventHandler({self._owner.kind})"


def _would_be_owner(obj: ObjectView) -> list[Request]:
    """The job an orphan could belong to (its ``job-name`` label, its name's prefix), if any."""
    if objects.controller_of(obj) is not None or objects.is_terminating(obj):
        return []
    job = objects.labels(obj).get(JOB_NAME)
    if not job or not objects.name(obj).startswith(f"{job}-"):
        return []
    return [Request(objects.namespace(obj), job)]
