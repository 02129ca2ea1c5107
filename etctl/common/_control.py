"""Writing a job's children: create, delete and patch with expectations and events.

:class:`ChildControl` is kubeflow's ``PodControl``/``ServiceControl`` for any resource, with the
call order the expectations need (:mod:`etctl.runtime._expectations`):

* **create**: raise the creation expectation, create; AlreadyExists lowers it and reports the
  name taken (the caller decides what the existing object means: with deterministic names it is
  usually our own create seen late); any other error lowers it, records a ``FailedCreate<Kind>``
  Warning event and propagates.
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

__all__ = ["ChildControl", "ChildReader", "Recorder"]

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
            EtctlError: the create failed (recorded as a ``FailedCreate<Kind>`` event).
        """
        if key is not None:
            self._expectations.expect_creations(key, 1)
        name = objects.name(obj)
        try:
            created = await self._client.create(res, obj, namespace=objects.namespace(obj))
        except AlreadyExists:
            self._lower_creation(key)
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
        message = (
            f"{_noun(res)} {name} already exists and is not controlled by {owner}; it is left alone"
        )
        self._event(job, "Warning", "ErrResourceExists", message)
        return True

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
