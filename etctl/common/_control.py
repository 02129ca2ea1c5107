"""Writing a job's children: create, delete and patch with expectations and events.

:class:`ChildControl` is kubeflow's ``PodControl``/``ServiceControl`` for any resource, with the
call order the expectations need (:mod:`etctl.runtime._expectations`):

* **create**: raise the creation expectation, create; AlreadyExists lowers it and reports the
  name taken; any other error lowers it, records a ``FailedCreate<Kind>`` Warning event and
  propagates. A name taken is judged from a fresh read, because the informers of children select
  what the operator could own (its labels) and the cache may not hold the object at all:

  - controlled by the job and still carrying the job's selector labels: our own create, seen late
    (the cache will show it);
  - controlled by the job but relabelled out of its selector: released (its owner reference
    removed), as claiming releases such a child when the cache holds it, and then reported as
    below;
  - anything else: left alone, with the ``ErrResourceExists`` Warning below.

  An object that went, or changed under the release, raises ``Conflict``: the cache will bring no
  event about it, so the job is retried with backoff.
* **delete**: raise the deletion expectation for the name, delete *that* object (a uid
  precondition, so a successor under the same name is never hit); NotFound or a failed
  precondition lowers it (the object is already gone); other errors lower it, record
  ``FailedDelete<Kind>`` and propagate.
* **patch**: a merge patch, with a ``SuccessfulUpdate<Kind>`` event.
* **a name taken** by an object the job does not control: the object is left alone and nothing is
  created in its place; an ``ErrResourceExists`` Warning event says so.

Successful writes record ``SuccessfulCreate<Kind>`` / ``SuccessfulDelete<Kind>`` Normal events on
the job (``SuccessfulCreatePod: Created pod: tf-worker-0``), kubeflow's vocabulary.

The cache a controller reads from is described by :class:`ChildReader` and the event sink by
:class:`Recorder`: small protocols, so the controller depends on what it uses only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from etctl.common._labels import JOB_NAME, OPERATOR_NAME, matches
from etctl.errors import AlreadyExists, Conflict, EtctlError, NotFound
from etctl.log import get_logger
from etctl.runtime import (
    CacheReader,
    Client,
    EventType,
    Expectations,
    IndexFunc,
    KubeObject,
    ObjectView,
    Resource,
    objects,
)

__all__ = ["ChildControl", "ChildReader", "Recorder", "release"]

log = get_logger(__name__)


class ChildReader(CacheReader, Protocol):
    """The cache reads of the JobController, and the indexes it adds at set-up."""

    def add_indexers(self, res: Resource, indexers: Mapping[str, IndexFunc]) -> None:
        """Index the objects of ``res`` (raises ValueError for an index name that exists)."""
        ...


class Recorder(Protocol):
    """Where the controller records Events (an :class:`~etctl.runtime.EventRecorder`)."""

    def event(self, obj: ObjectView, event_type: EventType, reason: str, message: str) -> None:
        """Record an event about ``obj``; never blocks, never raises."""
        ...


class ChildControl:
    """Creates, deletes and patches the children of jobs.

    Args:
        client: the API client.
        recorder: where events go.
        expectations: the controller's expectations.
    """

    def __init__(self, client: Client, recorder: Recorder, expectations: Expectations) -> None:
        self._client = client
        self._recorder = recorder
        self._expectations = expectations

    @property
    def recorder(self) -> Recorder:
        """The event recorder."""
        return self._recorder

    async def create(
        self, job: ObjectView, res: Resource, obj: KubeObject, *, key: str | None
    ) -> KubeObject | None:
        """Create ``obj``; the stored object, or None when its name is taken.

        Raises:
            Conflict: the name was taken by an object that then went or changed (retry).
            EtctlError: the create failed (recorded as a ``FailedCreate<Kind>`` event).
        """
        if key is not None:
            self._expectations.expect_creations(key, 1)
        name = objects.name(obj)
        try:
            created = await self._client.create(res, obj, namespace=objects.namespace(obj))
        except AlreadyExists:
            self._lower_creation(key)
            await self._taken(job, res, obj)
            return None
        except EtctlError as exc:
            self._lower_creation(key)
            self._event(job, "Warning", f"FailedCreate{res.kind}", f"Error creating: {exc}")
            raise
        self._event(job, "Normal", f"SuccessfulCreate{res.kind}", f"Created {_noun(res)}: {name}")
        return created

    async def delete(
        self, job: ObjectView, res: Resource, obj: ObjectView, *, key: str | None
    ) -> bool:
        """Delete exactly ``obj`` (by uid); False when it was already gone.

        Raises:
            EtctlError: the delete failed (recorded as a ``FailedDelete<Kind>`` event).
        """
        name = objects.name(obj)
        if key is not None:
            self._expectations.expect_deletions(key, [name])
        preconditions = {"uid": objects.uid(obj)} if objects.uid(obj) else None
        try:
            await self._client.delete(
                res, name, namespace=objects.namespace(obj), preconditions=preconditions
            )
        except (NotFound, Conflict):
            self._lower_deletion(key, name)
            return False
        except EtctlError as exc:
            self._lower_deletion(key, name)
            self._event(job, "Warning", f"FailedDelete{res.kind}", f"Error deleting: {exc}")
            raise
        self._event(job, "Normal", f"SuccessfulDelete{res.kind}", f"Deleted {_noun(res)}: {name}")
        return True

    async def patch(
        self, job: ObjectView, res: Resource, obj: ObjectView, patch: Mapping[str, Any]
    ) -> KubeObject:
        """Merge-patch ``obj``; the stored result.

        Raises:
            EtctlError: the patch failed (recorded as a ``FailedUpdate<Kind>`` event).
        """
        name = objects.name(obj)
        try:
            patched = await self._client.patch(res, name, patch, namespace=objects.namespace(obj))
        except EtctlError as exc:
            self._event(job, "Warning", f"FailedUpdate{res.kind}", f"Error updating: {exc}")
            raise
        self._event(job, "Normal", f"SuccessfulUpdate{res.kind}", f"Updated {_noun(res)}: {name}")
        return patched

    def name_taken(
        self, reader: ChildReader, job: ObjectView, res: Resource, name: str, *, owner: str
    ) -> bool:
        """Whether the cache holds a ``res`` named ``name`` that ``job`` does not control.

        Such an object is left alone and nothing is created in its place: an
        ``ErrResourceExists`` Warning on the job (kubeflow's) says so.

        Args:
            reader: the cache.
            job: the job that wants the name (its namespace and uid).
            res: the child's resource.
            name: the child's name.
            owner: the job in words (``TFJob train``).
        """
        existing = reader.get(res, name, namespace=objects.namespace(job))
        if existing is None or objects.controller_ref(existing) == objects.uid(job):
            return False
        self._name_taken_event(job, res, name, owner)
        return True

    async def _taken(self, job: ObjectView, res: Resource, obj: KubeObject) -> None:
        """Judge the object that took ``obj``'s name from a fresh read (see the module docs).

        Raises:
            Conflict: the object went, or changed while it was released: nothing will bring the
                job back (the cache does not hold the object), so the reconcile is retried.
        """
        name, namespace = objects.name(obj), objects.namespace(obj)
        owner = f"{job.get('kind') or 'job'} {objects.name(job)}"
        try:
            live = await self._client.get(res, name, namespace=namespace)
        except NotFound:
            msg = f"{_noun(res)} {name} went while its name was judged; {owner} tries again"
            raise Conflict(msg) from None
        job_uid = objects.uid(job)
        if objects.controller_ref(live) == job_uid:
            wanted = objects.labels(obj)
            selector = {k: wanted[k] for k in (OPERATOR_NAME, JOB_NAME) if k in wanted}
            if matches(live, selector):
                return  # our own create, seen late: its event is on the way
            if not await release(self._client, res, live, job_uid):
                msg = f"{_noun(res)} {name} changed while {owner} released it; tries again"
                raise Conflict(msg)
        self._name_taken_event(job, res, name, owner)

    def _name_taken_event(self, job: ObjectView, res: Resource, name: str, owner: str) -> None:
        message = (
            f"{_noun(res)} {name} already exists and is not controlled by {owner}; it is left alone"
        )
        self._event(job, "Warning", "ErrResourceExists", message)

    def _lower_creation(self, key: str | None) -> None:
        if key is not None:
            self._expectations.creation_observed(key)

    def _lower_deletion(self, key: str | None, name: str) -> None:
        if key is not None:
            self._expectations.deletion_observed(key, name)

    def _event(self, job: ObjectView, kind: EventType, reason: str, message: str) -> None:
        self._recorder.event(job, kind, reason, message)


def _noun(res: Resource) -> str:
    return res.kind.lower()


async def release(client: Client, res: Resource, obj: ObjectView, owner_uid: str) -> bool:
    """Remove the owner reference of ``owner_uid`` from ``obj``; False if ``obj`` changed or went.

    The merge patch carries ``obj``'s ``resourceVersion``, so it applies only to the version that
    was judged; a conflict or a vanished object is skipped (the next reconcile judges again).
    """
    refs = [dict(ref) for ref in objects.owner_references(obj) if ref.get("uid") != owner_uid]
    patch = {
        "metadata": {"ownerReferences": refs, "resourceVersion": objects.resource_version(obj)}
    }
    try:
        await client.patch(res, objects.name(obj), patch, namespace=objects.namespace(obj))
    except (Conflict, NotFound):
        log.info(
            "owned object changed before release; judged again next time", name=objects.name(obj)
        )
        return False
    log.info(
        "released object whose labels no longer match", resource=str(res), name=objects.name(obj)
    )
    return True
