"""Writes the cache cannot know of: those whose answer was lost and which were read back.

The runtime's cache shows each write of this process as soon as its answer comes
(:mod:`etctl.runtime` reads its own writes), so a controller never decides from the version
before its own write. A write whose answer was lost is the exception: its success was learned by
reading the object back (:mod:`etctl.common._readback`), which the cache does not see, and until
the watch brings the change the cache holds the version before it. A :class:`RecentWrites`
remembers the ``resourceVersion`` read back and, while the cached object is not that version,
reads the object from the API server instead.

Invariant: an object is remembered only until the cache holds the written version, or holds the
same version the server returned (the cache caught up, or someone wrote after us and the cache has
that): from then on reads are served by the cache again. A read that finds the object gone forgets
it.
"""

from __future__ import annotations

from etctl.errors import NotFound
from etctl.runtime import CacheReader, Client, ObjectView, Resource, objects

__all__ = ["RecentWrites"]


class RecentWrites:
    """Reads through the cache unless it is behind this process's last write of the object.

    Args:
        client: the API client (reads while the cache is behind).
        cache: the informer cache.
    """

    def __init__(self, client: Client, cache: CacheReader) -> None:
        self._client = client
        self._cache = cache
        self._written: dict[tuple[Resource, str, str], str] = {}

    def remember(self, res: Resource, written: ObjectView) -> None:
        """Record ``written``, as a write returned it: reads wait for the cache to hold it."""
        key = (res, objects.namespace(written), objects.name(written))
        self._written[key] = objects.resource_version(written)

    def forget(self, res: Resource, namespace: str, name: str) -> None:
        """Drop what was remembered of one object (it is gone)."""
        self._written.pop((res, namespace, name), None)

    async def read(self, res: Resource, namespace: str, name: str) -> ObjectView | None:
        """The object, from the cache unless the cache is behind the last write of it.

        Raises:
            EtctlError: the read from the API server failed (other than NotFound: None).
        """
        key = (res, namespace, name)
        cached = self._cache.get(res, name, namespace=namespace)
        written = self._written.get(key)
        if written is None:
            return cached
        if cached is not None and objects.resource_version(cached) == written:
            self._written.pop(key, None)
            return cached
        try:
            fresh = await self._client.get(res, name, namespace=namespace)
        except NotFound:
            self._written.pop(key, None)
            return None
        if cached is not None and objects.resource_version(cached) == objects.resource_version(
            fresh
        ):
            self._written.pop(key, None)
        return fresh
