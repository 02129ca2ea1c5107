"""The one stale-cache defence: every write of the job controllers and the scaling machinery.

Controllers decide from the informer cache, and acting on a cache that does not show what this
process wrote would repeat it: a pod created twice, a restart counted twice, a decision written
again over itself. The runtime's cache shows each write of this process as soon as its answer
comes (it reads its own writes), which covers almost every write; :class:`WriteLedger` is the one
place that covers the rest, because every write goes through it:

* **a write the cache could not place** (its answer came while the informer relisted, or before it
  synced): after each create or delete of a job's child the ledger looks at the cache; a write it
  does not show is *pending* until it does (a created object with the answer's uid, or newer; a
  deleted one gone, terminating or replaced). :meth:`WriteLedger.pending` tells a reconcile how
  long to wait before deciding for that job again, at most ``ttl`` seconds after the write (a
  create whose object someone else deleted at once is never shown, and must not block the job
  forever); the child's watch event requeues the job when the cache catches up;
* **a write whose answer was lost** (a guarded patch read back, :mod:`etctl.common._readback`):
  the cache cannot know of it, so the version read back is remembered, and :meth:`read` serves the
  object from the API server until the cache holds that version (or a newer one);
* **a status with two writers** (an elastic job's: the job controller's fields and the scaling
  controller's): :meth:`WriteLedger.patch_own_status` guards a write by the fields its writer
  judged from, not by the object's version, so the other writer's concurrent write is no conflict
  (:mod:`etctl.common._fieldguard`); and until the cache holds a version past such a write, the
  ledger's reads show the fields as written (two writers' overlapping writes of one object reach
  the cache through the watch only);
* **adopting an orphan**: a job may adopt only while it exists and is not being deleted, which
  another client may have changed unseen by the cache; :meth:`fresh` is the one read that asks the
  API server, and claiming uses it once per reconcile before any adoption. Adoption and release
  (:meth:`adopt`, :meth:`release`) are guarded patches like any other.

Writes of a job's children also record the job's Events, kubeflow's vocabulary:
``SuccessfulCreatePod: Created pod: tf-worker-0`` (and ``Delete``, ``Update``),
``FailedCreate<Kind>`` and ``FailedDelete<Kind>`` Warnings, and ``ErrResourceExists`` for a name
taken by an object the job does not control (which is never touched; nothing is created in its
place). A name taken is judged from a fresh read, because the children's informers select what
the operator could own:

* controlled by the job and still carrying its selector labels: its own create, seen late;
* controlled by the job but relabelled out of its selector: released (its owner reference
  removed), as claiming releases such a child, and reported as below;
* anything else: left alone, with the Warning. An object that went, or changed under the release,
  raises ``Conflict`` (the cache will bring no event about it, so the job is retried).

Deletes name exactly the object decided on (a ``uid`` precondition): a successor under the same
name is never hit, and a delete that finds the object gone (or replaced) succeeded.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from etctl.common._fieldguard import (
    field_ops,
    guarded_ops,
    overlaid,
    stale_fields,
    value_at,
)
from etctl.common._labels import JOB_NAME, OPERATOR_NAME, matches
from etctl.common._plan import JobEvent
from etctl.common._readback import AMBIGUOUS, carries, read_back
from etctl.errors import AlreadyExists, Conflict, EtctlError, Invalid, NotFound
from etctl.log import get_logger
from etctl.runtime import (
    DEFAULT_TTL,
    CacheReader,
    Client,
    Clock,
    EventType,
    KubeObject,
    ObjectView,
    PatchType,
    Resource,
    objects,
)

__all__ = ["Recorder", "WriteLedger", "guarded"]

log = get_logger(__name__)


class Recorder(Protocol):
    """Where the controller records Events (an :class:`~etctl.runtime.EventRecorder`)."""

    def event(self, obj: ObjectView, event_type: EventType, reason: str, message: str) -> None:
        """Record an event about ``obj``; never blocks, never raises."""
        ...


@dataclass(frozen=True, slots=True)
class _Pending:
    """A child write the cache did not show when it was made."""

    owner: str
    res: Resource
    namespace: str
    name: str
    uid: str
    delete: bool
    since: float


def guarded(obj: ObjectView, patch: Mapping[str, Any]) -> dict[str, Any]:
    """``patch`` guarded by ``obj``'s ``resourceVersion`` (it applies to that version only)."""
    out = dict(patch)
    metadata = dict(out.get("metadata") or {})
    metadata["resourceVersion"] = objects.resource_version(obj)
    out["metadata"] = metadata
    return out


class WriteLedger:
    """Writes, and what the cache does not show of them yet (see the module docstring).

    Args:
        client: the API client.
        cache: the informer cache (which shows this process's writes as their answers come).
        clock: what pending writes age on.
        recorder: where the Events of children's writes go (None: no Events).
        ttl: the longest a write the cache does not show holds its job.
    """

    def __init__(
        self,
        client: Client,
        cache: CacheReader,
        *,
        clock: Clock,
        recorder: Recorder | None = None,
        ttl: float = DEFAULT_TTL,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self._clock = clock
        self._ttl = ttl
        self._read_back: dict[tuple[Resource, str, str], str] = {}
        # The answer of the last write of owned status fields of an object, and those fields.
        self._own: dict[tuple[Resource, str, str], tuple[ObjectView, tuple[str, ...]]] = {}
        self._pending: dict[str, list[_Pending]] = {}

    # -- reads

    async def read(self, res: Resource, namespace: str, name: str) -> ObjectView | None:
        """The object, from the cache unless it is behind a write of it that was read back.

        The status fields this ledger last wrote with :meth:`patch_own_status` (those it guarded
        and those it set or removed) show the values written while the cache holds a version
        before that write
        (:func:`~etctl.common._fieldguard.overlaid`).

        Raises:
            EtctlError: the read from the API server failed (other than NotFound: None).
        """
        key = (res, namespace, name)
        found = await self._read(key)
        own = self._own.get(key)
        if own is None or found is None:
            return found
        shown = overlaid(found, *own)
        if shown is found:
            self._own.pop(key, None)  # the cache is past the write (or holds another object)
        return shown

    async def _read(self, key: tuple[Resource, str, str]) -> ObjectView | None:
        res, namespace, name = key
        cached = self.cache.get(res, name, namespace=namespace or None)
        written = self._read_back.get(key)
        if written is None:
            return cached
        if cached is not None and objects.resource_version(cached) == written:
            self._read_back.pop(key, None)
            return cached
        try:
            fresh = await self.client.get(res, name, namespace=namespace or None)
        except NotFound:
            self._read_back.pop(key, None)
            return None
        if cached is not None and objects.resource_version(cached) == objects.resource_version(
            fresh
        ):
            self._read_back.pop(key, None)
        return fresh

    async def fresh(self, res: Resource, obj: ObjectView) -> ObjectView | None:
        """``obj`` as the API server has it now (None when gone or replaced by another uid)."""
        try:
            found = await self.client.get(
                res, objects.name(obj), namespace=objects.namespace(obj) or None
            )
        except NotFound:
            return None
        return found if objects.uid(found) == objects.uid(obj) else None

    def pending(self, owner_uid: str) -> float | None:
        """Seconds to wait before deciding for the job ``owner_uid`` again (None: nothing pending).

        A pending write the cache now shows, or older than ``ttl``, is dropped here.
        """
        entries = self._pending.get(owner_uid)
        if not entries:
            return None
        now = self._clock.monotonic()
        kept = [e for e in entries if now - e.since < self._ttl and not self._shown(e)]
        if not kept:
            del self._pending[owner_uid]
            return None
        self._pending[owner_uid] = kept
        return max(self._ttl - (now - min(e.since for e in kept)), 0.001)

    def forget(self, res: Resource, namespace: str, name: str, *, owner_uid: str = "") -> None:
        """Drop what was remembered of an object that is gone (and of its children's writes)."""
        self._read_back.pop((res, namespace, name), None)
        self._own.pop((res, namespace, name), None)
        if owner_uid:
            self._pending.pop(owner_uid, None)

    def forget_owner_named(self, namespace: str, name: str) -> None:
        """Drop the children's writes of every job instance called ``namespace/name``."""
        for uid in [
            uid
            for uid, entries in self._pending.items()
            if entries and entries[0].namespace == namespace and entries[0].owner == name
        ]:
            del self._pending[uid]

    # -- guarded writes (decisions recorded on an object read before)

    async def patch(self, res: Resource, obj: ObjectView, patch: Mapping[str, Any]) -> KubeObject:
        """Merge ``patch`` into ``obj``, only over the version of ``obj``.

        Raises:
            Conflict: ``obj`` changed since it was read (and does not carry the write).
            TransportError: the write's outcome is unknown: no answer, and no read back.
        """
        body = guarded(obj, patch)
        try:
            return await self.client.patch(
                res, objects.name(obj), body, namespace=objects.namespace(obj) or None
            )
        except AMBIGUOUS as exc:
            return self._remember(res, await read_back(self.client, res, obj, body, exc))

    async def patch_status(
        self, res: Resource, obj: ObjectView, status: Mapping[str, Any]
    ) -> KubeObject:
        """Merge ``status`` into ``obj``'s status, only over the version of ``obj``.

        Raises:
            Conflict: ``obj`` changed since it was read (and does not carry the write).
            TransportError: the write's outcome is unknown: no answer, and no read back.
        """
        body = guarded(obj, {"status": dict(status)})
        try:
            return await self.client.patch_status(
                res, objects.name(obj), body, namespace=objects.namespace(obj) or None
            )
        except AMBIGUOUS as exc:
            return self._remember(res, await read_back(self.client, res, obj, body, exc))

    async def patch_own_status(
        self,
        res: Resource,
        obj: ObjectView,
        status: Mapping[str, Any],
        *,
        owned: Collection[str],
    ) -> KubeObject:
        """Write the status merge patch ``status`` to ``obj``, guarded by the ``owned`` fields.

        For a status with more than one writer, each owning its fields: a concurrent write of
        another writer's fields is no conflict, a change of an owned field since ``obj`` was read
        is (:mod:`etctl.common._fieldguard`).

        Raises:
            Conflict: an owned field changed since ``obj`` was read (and does not carry the write).
            NotFound: the object is gone, or another object by now holds its name.
            TransportError: the write's outcome is unknown: no answer, and no read back.
        """
        name, namespace = objects.name(obj), objects.namespace(obj) or None
        ops = guarded_ops(obj, status, owned)
        merge = {"status": dict(status)}
        try:
            if ops is None:
                body = {"metadata": {"uid": objects.uid(obj)}, **merge}
                written = await self.client.patch_status(res, name, body, namespace=namespace)
            else:
                written = await self.client.patch_status(
                    res, name, ops, namespace=namespace, patch_type=PatchType.JSON
                )
        except Invalid as exc:
            written = self._remember(res, await self._judge_refusal(res, obj, merge, owned, exc))
        except AMBIGUOUS as exc:
            written = self._remember(res, await read_back(self.client, res, obj, merge, exc))
        # This ledger's reconciles are the only writer of these fields: until the cache shows
        # them, its reads show what was written (two writers' overlapping writes of one object
        # may reach the cache only through the watch). Every field the write set or removed, not
        # only the guarded ones: a field written but not judged from (a phase, a kind's own
        # field) read back as it was would be written again, a write that changes nothing.
        key = (res, objects.namespace(written), objects.name(written))
        self._own[key] = (written, tuple(dict.fromkeys([*owned, *status])))
        return written

    async def patch_field(
        self, res: Resource, obj: ObjectView, path: Sequence[str], value: Any
    ) -> KubeObject:
        """Set the field at ``path`` (JSON keys from the root) of ``obj``, guarded by its value.

        For a field of the object (not its status) with one writer in this process, such as an
        elastic job's desired member count: its status writes are no conflict, a change of the
        field since ``obj`` was read (a user's ``kubectl scale``) is.

        Raises:
            Conflict: the field changed since ``obj`` was read (and does not hold ``value``).
            NotFound: the object is gone, or another object by now holds its name.
            TransportError: the write's outcome is unknown: no answer, and no read back.
        """
        name, namespace = objects.name(obj), objects.namespace(obj) or None
        merge: Any = value
        for key in reversed(path):
            merge = {key: merge}
        ops = field_ops(obj, path, value)
        try:
            if ops is None:
                return await self.patch(res, obj, merge)
            return await self.client.patch(
                res, name, ops, namespace=namespace, patch_type=PatchType.JSON
            )
        except Invalid as exc:
            fresh = await self._fresh_or_gone(res, obj, exc)
            if carries(fresh, merge):
                return self._remember(res, fresh)
            if value_at(fresh, path) != value_at(obj, path):
                msg = f"{objects.name(obj)}: {'.'.join(path)} changed since it was read"
                raise Conflict(msg) from exc
            raise
        except AMBIGUOUS as exc:
            return self._remember(res, await read_back(self.client, res, obj, merge, exc))

    async def _fresh_or_gone(self, res: Resource, obj: ObjectView, error: Invalid) -> KubeObject:
        """``obj`` read again after ``error``; NotFound when it is gone or another object."""
        try:
            fresh = await self.client.get(
                res, objects.name(obj), namespace=objects.namespace(obj) or None
            )
        except NotFound:
            raise NotFound(f"{objects.name(obj)} is gone") from error
        if objects.uid(fresh) != objects.uid(obj):
            raise NotFound(f"{objects.name(obj)} is another object by now") from error
        return fresh

    async def _judge_refusal(
        self,
        res: Resource,
        obj: ObjectView,
        merge: Mapping[str, Any],
        owned: Collection[str],
        error: Invalid,
    ) -> KubeObject:
        """Tell a failed guard from an invalid write (both are 422), from the object read again.

        A retry after a lost answer finds its own write there: that is a success.
        """
        fresh = await self._fresh_or_gone(res, obj, error)
        if carries(fresh, merge):
            return fresh
        if stale := stale_fields(obj, fresh, owned):
            msg = f"{objects.name(obj)}: {', '.join(stale)} changed since it was read"
            raise Conflict(msg) from error
        raise error

    def _remember(self, res: Resource, written: KubeObject) -> KubeObject:
        # The cache shows a write when its answer comes; this one's was lost, so the object read
        # back stands for it until the cache catches up.
        key = (res, objects.namespace(written), objects.name(written))
        self._read_back[key] = objects.resource_version(written)
        return written

    # -- a job's children

    async def adopt(
        self, res: Resource, obj: ObjectView, owner_ref: Mapping[str, Any]
    ) -> KubeObject | None:
        """Add the controller reference ``owner_ref`` to the orphan ``obj``, over its version only.

        Returns the adopted object, or None when ``obj`` changed or went meanwhile (the next
        reconcile judges it again).
        """
        refs = [*(dict(ref) for ref in objects.owner_references(obj)), dict(owner_ref)]
        try:
            adopted = await self.patch(res, obj, {"metadata": {"ownerReferences": refs}})
        except (Conflict, NotFound):
            log.info(
                "orphan changed before adoption; judged again next time", name=objects.name(obj)
            )
            return None
        log.info("adopted orphan", resource=str(res), name=objects.name(obj))
        return adopted

    async def release(self, res: Resource, obj: ObjectView, owner_uid: str) -> bool:
        """Remove ``owner_uid``'s owner reference from ``obj``; False if ``obj`` changed or went.

        The patch applies only to the version of ``obj`` that was judged; a conflict or a vanished
        object is skipped (the next reconcile judges again).
        """
        refs = [dict(ref) for ref in objects.owner_references(obj) if ref.get("uid") != owner_uid]
        try:
            await self.patch(res, obj, {"metadata": {"ownerReferences": refs}})
        except (Conflict, NotFound):
            log.info(
                "owned object changed before release; judged again next time",
                name=objects.name(obj),
            )
            return False
        log.info(
            "released object whose labels no longer match",
            resource=str(res),
            name=objects.name(obj),
        )
        return True

    async def create(
        self, job: ObjectView, res: Resource, obj: KubeObject, *, record: bool = True
    ) -> KubeObject | None:
        """Create ``obj``, a child of ``job``; the stored object, or None when its name is taken.

        ``record=False`` makes no Events (a scaler the scaling machinery creates says so in its
        own words); the write is followed all the same.

        Raises:
            Conflict: the name was taken by an object that then went or changed (retry).
            EtctlError: the create failed (recorded as a ``FailedCreate<Kind>`` event).
        """
        name = objects.name(obj)
        said = job if record else None
        try:
            created = await self.client.create(res, obj, namespace=objects.namespace(obj) or None)
        except AlreadyExists:
            await self._taken(job, res, obj, record=record)
            return None
        except EtctlError as exc:
            self._event(said, "Warning", f"FailedCreate{res.kind}", f"Error creating: {exc}")
            raise
        self._event(said, "Normal", f"SuccessfulCreate{res.kind}", f"Created {_noun(res)}: {name}")
        self._follow(job, res, created, delete=False)
        return created

    async def delete(self, job: ObjectView, res: Resource, obj: ObjectView) -> bool:
        """Delete exactly ``obj`` (by uid), a child of ``job``; False when it was already gone.

        Raises:
            EtctlError: the delete failed (recorded as a ``FailedDelete<Kind>`` event).
        """
        name = objects.name(obj)
        preconditions = {"uid": objects.uid(obj)} if objects.uid(obj) else None
        try:
            await self.client.delete(
                res, name, namespace=objects.namespace(obj) or None, preconditions=preconditions
            )
        except (NotFound, Conflict):
            return False
        except EtctlError as exc:
            self._event(job, "Warning", f"FailedDelete{res.kind}", f"Error deleting: {exc}")
            raise
        self._event(job, "Normal", f"SuccessfulDelete{res.kind}", f"Deleted {_noun(res)}: {name}")
        self._follow(job, res, obj, delete=True)
        return True

    async def update(
        self, job: ObjectView, res: Resource, obj: ObjectView, patch: Mapping[str, Any]
    ) -> KubeObject:
        """Merge-patch ``obj``, a child of ``job``; the stored result.

        Raises:
            EtctlError: the patch failed (recorded as a ``FailedUpdate<Kind>`` event).
        """
        name = objects.name(obj)
        try:
            patched = await self.client.patch(
                res, name, patch, namespace=objects.namespace(obj) or None
            )
        except EtctlError as exc:
            self._event(job, "Warning", f"FailedUpdate{res.kind}", f"Error updating: {exc}")
            raise
        self._event(job, "Normal", f"SuccessfulUpdate{res.kind}", f"Updated {_noun(res)}: {name}")
        return patched

    def taken(self, job: ObjectView, res: Resource, name: str) -> bool:
        """Whether the cache holds a ``res`` named ``name`` that ``job`` does not control.

        Such an object is left alone, and nothing is created in its place
        (:meth:`taken_event` says so).
        """
        existing = self.cache.get(res, name, namespace=objects.namespace(job) or None)
        return existing is not None and objects.controller_ref(existing) != objects.uid(job)

    @staticmethod
    def taken_event(res: Resource, name: str, owner: str) -> JobEvent:
        """The ``ErrResourceExists`` Warning of a name taken by an object ``owner`` does not own."""
        message = (
            f"{_noun(res)} {name} already exists and is not controlled by {owner}; it is left alone"
        )
        return JobEvent("Warning", "ErrResourceExists", message)

    def _follow(self, job: ObjectView, res: Resource, obj: ObjectView, *, delete: bool) -> None:
        """Record a child write the cache does not show (yet)."""
        entry = _Pending(
            owner=objects.name(job),
            res=res,
            namespace=objects.namespace(obj),
            name=objects.name(obj),
            uid=objects.uid(obj),
            delete=delete,
            since=self._clock.monotonic(),
        )
        if not self._shown(entry):
            self._pending.setdefault(objects.uid(job), []).append(entry)

    def _shown(self, entry: _Pending) -> bool:
        """Whether the cache shows the write ``entry`` recorded."""
        try:
            found = self.cache.get(entry.res, entry.name, namespace=entry.namespace or None)
        except EtctlError:
            return True  # an uncached resource: nothing here could ever show it
        if entry.delete:
            return found is None or objects.is_terminating(found) or objects.uid(found) != entry.uid
        return found is not None and (not entry.uid or objects.uid(found) == entry.uid)

    async def _taken(
        self, job: ObjectView, res: Resource, obj: KubeObject, *, record: bool = True
    ) -> None:
        """Judge the object that took ``obj``'s name from a fresh read (see the module docs).

        Raises:
            Conflict: the object went, or changed while it was released: nothing will bring the
                job back (the cache does not hold the object), so the reconcile is retried.
        """
        name, namespace = objects.name(obj), objects.namespace(obj)
        owner = f"{job.get('kind') or 'job'} {objects.name(job)}"
        try:
            live = await self.client.get(res, name, namespace=namespace or None)
        except NotFound:
            msg = f"{_noun(res)} {name} went while its name was judged; {owner} tries again"
            raise Conflict(msg) from None
        job_uid = objects.uid(job)
        if objects.controller_ref(live) == job_uid:
            wanted = objects.labels(obj)
            selector = {k: wanted[k] for k in (OPERATOR_NAME, JOB_NAME) if k in wanted}
            if matches(live, selector):
                return  # our own create, seen late: its event is on the way
            if not await self.release(res, live, job_uid):
                msg = f"{_noun(res)} {name} changed while {owner} released it; tries again"
                raise Conflict(msg)
        if record:
            self._name_taken_event(job, res, name, owner)

    def _name_taken_event(self, job: ObjectView, res: Resource, name: str, owner: str) -> None:
        event = self.taken_event(res, name, owner)
        self._event(job, event.type, event.reason, event.message)

    def _event(self, job: ObjectView | None, kind: EventType, reason: str, message: str) -> None:
        if self.recorder is not None and job is not None:
            self.recorder.event(job, kind, reason, message)


def _noun(res: Resource) -> str:
    return res.kind.lower()
