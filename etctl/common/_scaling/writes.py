"""Reading jobs and scalers, and writing them only over the version that was read.

The scaling machinery decides from what it reads and writes every decision before acting on it,
so a write must never apply to a version it did not read: each one is a merge patch carrying the
``resourceVersion`` that was read (the API server answers Conflict otherwise, and the decision is
taken again from fresh data). A Conflict is therefore expected, not an error.

Reads come from the informer cache, which shows this process's own writes as soon as their
answers come (the runtime reads its own writes): a decision is never taken again from the version
before this process's own last write of an object, which would only earn Conflicts.

A write that fails without saying whether it was applied (its answer lost, so a retry met the
write itself as a Conflict; no answer at all; a 5xx) is read back
(:func:`~etctl.common._readback.read_back`): when the object carries it, the write succeeded and
the caller goes on from the object read; otherwise the error stands. A decision is therefore never
taken as unwritten while it is stored. Such a write is the one the cache cannot know of (its
answer never came): :class:`GuardedWriter` reads that object through
:class:`~etctl.common._recent_writes.RecentWrites`, from the API server until the cache holds the
version read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.common._readback import AMBIGUOUS, read_back
from etctl.common._recent_writes import RecentWrites
from etctl.runtime import CacheReader, Client, KubeObject, ObjectView, Resource, objects

__all__ = ["GuardedWriter"]


def _guarded(obj: ObjectView, patch: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(patch)
    metadata = dict(out.get("metadata") or {})
    metadata["resourceVersion"] = objects.resource_version(obj)
    out["metadata"] = metadata
    return out


class GuardedWriter:
    """Reads from the cache (which shows its own writes), writes guarded merge patches.

    Args:
        client: the API client.
        reader: the informer cache.
    """

    def __init__(self, client: Client, reader: CacheReader) -> None:
        self._client = client
        self._recent = RecentWrites(client, reader)

    async def read(self, res: Resource, namespace: str, name: str) -> ObjectView | None:
        """The object, from the cache unless the cache is behind this writer's last write."""
        return await self._recent.read(res, namespace, name)

    def _read_back(self, res: Resource, written: KubeObject) -> KubeObject:
        # The cache shows a write when its answer comes; this one's was lost, so the object
        # read back stands for it until the cache catches up.
        self._recent.remember(res, written)
        return written

    async def patch_status(
        self, res: Resource, obj: ObjectView, status: Mapping[str, Any]
    ) -> KubeObject:
        """Merge ``status`` into ``obj``'s status, only over the version of ``obj``.

        Raises:
            Conflict: ``obj`` changed since it was read (and does not carry the write).
            TransportError: the write's outcome is unknown: no answer, and no read back.
        """
        patch = _guarded(obj, {"status": dict(status)})
        try:
            written = await self._client.patch_status(
                res, objects.name(obj), patch, namespace=objects.namespace(obj)
            )
        except AMBIGUOUS as exc:
            return self._read_back(res, await read_back(self._client, res, obj, patch, exc))
        return written

    async def patch(self, res: Resource, obj: ObjectView, patch: Mapping[str, Any]) -> KubeObject:
        """Merge ``patch`` into ``obj``, only over the version of ``obj``.

        Raises:
            Conflict: ``obj`` changed since it was read (and does not carry the write).
            TransportError: the write's outcome is unknown: no answer, and no read back.
        """
        guarded = _guarded(obj, patch)
        try:
            written = await self._client.patch(
                res, objects.name(obj), guarded, namespace=objects.namespace(obj)
            )
        except AMBIGUOUS as exc:
            return self._read_back(res, await read_back(self._client, res, obj, guarded, exc))
        return written

    def forget(self, res: Resource, namespace: str, name: str) -> None:
        """Drop what was remembered of one object (it is gone)."""
        self._recent.forget(res, namespace, name)
