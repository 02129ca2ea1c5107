"""Guarded writes and read-your-writes on the cluster under test."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

from etctl.common import GuardedWriter
from etctl.errors import Conflict
from etctl.runtime import CONFIGMAPS, ObjectView, Resource, objects
from tests.runtime._cluster import cluster


class FrozenCache:
    """A cache that never catches up: it holds what it was given."""

    def __init__(self) -> None:
        self.held: dict[str, ObjectView] = {}

    def get(self, res: Resource, name: str, *, namespace: str | None = None) -> ObjectView | None:
        return self.held.get(name)

    def list(
        self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None
    ) -> builtins.list[ObjectView]:
        return builtins.list(self.held.values())

    def by_index(self, res: Resource, index: str, value: str) -> builtins.list[ObjectView]:
        return []

    def controlled_by(self, res: Resource, owner_uid: str) -> builtins.list[ObjectView]:
        return []


async def test_writes_apply_only_to_the_version_read(tmp_path: Path) -> None:
    async with cluster(tmp_path) as env:
        cache = FrozenCache()
        writer = GuardedWriter(env.client, cache)
        first = env.configmap("cm", a="1")
        cache.held["cm"] = first
        assert await writer.read(CONFIGMAPS, env.ns, "cm") is first  # nothing written yet
        written = await writer.patch(CONFIGMAPS, first, {"data": {"a": "2"}})
        assert written["data"] == {"a": "2"}
        # The cache is behind this writer's write: the read goes to the server.
        fresh = await writer.read(CONFIGMAPS, env.ns, "cm")
        assert fresh is not None
        assert objects.resource_version(fresh) == objects.resource_version(written)
        # A write over the stale version is refused.
        with pytest.raises(Conflict):
            await writer.patch(CONFIGMAPS, first, {"data": {"a": "3"}})
        assert env.target.storage.get(CONFIGMAPS, "cm", namespace=env.ns)["data"] == {"a": "2"}
        # Once the cache holds the write, reads come from it again.
        cache.held["cm"] = fresh
        assert await writer.read(CONFIGMAPS, env.ns, "cm") is fresh
        env.delete("cm")
        writer.forget(CONFIGMAPS, env.ns, "cm")
        cache.held.clear()
        assert await writer.read(CONFIGMAPS, env.ns, "cm") is None
