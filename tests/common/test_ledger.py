"""The write ledger: guarded writes, reads that show its own writes, and pending child writes."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

from etctl.common._ledger import WriteLedger
from etctl.errors import Conflict
from etctl.runtime import CONFIGMAPS, Cache, CacheOptions, KubeObject, ObjectView, Resource, objects
from etctl.testing import Fault, eventually
from tests._cluster import NEVER, NOT_PRESET, cluster
from tests.runtime._realtime import running


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
    async with cluster(tmp_path, raw=True) as env:
        options = CacheOptions(namespaces=[env.ns], idle_timeout=NEVER)
        cache = Cache(env.client, clock=env.clock, options=options)
        cache.informer(CONFIGMAPS, field_selector=NOT_PRESET)
        writer = WriteLedger(env.client, cache, clock=env.clock)
        async with running(cache):
            await cache.wait_for_sync(5)
            first = env.configmap("cm", a="1")
            await eventually(lambda: cache.get(CONFIGMAPS, "cm", namespace=env.ns) is not None)
            read = await writer.read(CONFIGMAPS, env.ns, "cm")
            assert read is not None
            assert objects.resource_version(read) == objects.resource_version(first)
            written = await writer.patch(CONFIGMAPS, read, {"data": {"a": "2"}})
            assert written["data"] == {"a": "2"}
            # The next read shows the write at once (the cache reads its own writes), whatever
            # the watch has delivered.
            fresh = await writer.read(CONFIGMAPS, env.ns, "cm")
            assert fresh is not None
            assert objects.resource_version(fresh) == objects.resource_version(written)
            # A write over the stale version is refused.
            with pytest.raises(Conflict):
                await writer.patch(CONFIGMAPS, first, {"data": {"a": "3"}})
            assert env.target.storage.get(CONFIGMAPS, "cm", namespace=env.ns)["data"] == {"a": "2"}


@pytest.mark.etctl_hooks("fault injection: a write's answer lost")
async def test_a_write_read_back_after_its_answer_was_lost_is_read_from_the_server(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        cache = FrozenCache()  # the cache cannot know of a write whose answer never came
        writer = WriteLedger(env.client, cache, clock=env.clock)
        first = env.configmap("cm", a="1")
        cache.held["cm"] = first
        assert await writer.read(CONFIGMAPS, env.ns, "cm") is first  # nothing written yet
        env.server.inject(Fault(verb="patch", resource="configmaps", drop_answer=True))
        written = await writer.patch(CONFIGMAPS, first, {"data": {"a": "2"}})
        assert written["data"] == {"a": "2"}  # read back: the write was applied
        fresh = await writer.read(CONFIGMAPS, env.ns, "cm")  # from the server, not the cache
        assert fresh is not None
        assert objects.resource_version(fresh) == objects.resource_version(written)
        cache.held["cm"] = fresh  # once the cache holds it, reads come from it again
        assert await writer.read(CONFIGMAPS, env.ns, "cm") is fresh
        env.delete("cm")
        writer.forget(CONFIGMAPS, env.ns, "cm")
        cache.held.clear()
        assert await writer.read(CONFIGMAPS, env.ns, "cm") is None


JOB: KubeObject = {"kind": "Job", "metadata": {"name": "j", "namespace": "default", "uid": "ju"}}


def cm(name: str, namespace: str) -> KubeObject:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"a": "1"}}


async def test_a_child_write_the_cache_does_not_show_holds_its_job_until_it_does(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        cache = FrozenCache()  # its informer never brings the write
        ledger = WriteLedger(env.client, cache, clock=env.clock, ttl=300)
        job = {**JOB, "metadata": {**JOB["metadata"], "namespace": env.ns}}
        created = await ledger.create(job, CONFIGMAPS, cm("c", env.ns))
        assert created is not None
        wait = ledger.pending("ju")
        assert wait is not None
        assert 0 < wait <= 300
        cache.held["c"] = created  # the cache caught up: nothing is pending any more
        assert ledger.pending("ju") is None
        assert await ledger.delete(job, CONFIGMAPS, created)
        assert ledger.pending("ju") is not None  # the cache still shows it, not terminating
        cache.held.clear()
        assert ledger.pending("ju") is None


async def test_a_pending_write_holds_its_job_at_most_the_ttl(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        ledger = WriteLedger(env.client, FrozenCache(), clock=env.clock, ttl=60)
        job = {**JOB, "metadata": {**JOB["metadata"], "namespace": env.ns}}
        await ledger.create(job, CONFIGMAPS, cm("c", env.ns))
        await env.clock.advance(59)
        assert ledger.pending("ju") is not None
        await env.clock.advance(1)
        assert ledger.pending("ju") is None


async def test_a_write_the_cache_shows_at_once_holds_nothing(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        options = CacheOptions(namespaces=[env.ns], idle_timeout=NEVER)
        cache = Cache(env.client, clock=env.clock, options=options)
        cache.informer(CONFIGMAPS, field_selector=NOT_PRESET)
        ledger = WriteLedger(env.client, cache, clock=env.clock)
        job = {**JOB, "metadata": {**JOB["metadata"], "namespace": env.ns}}
        async with running(cache):
            await cache.wait_for_sync(5)
            created = await ledger.create(job, CONFIGMAPS, cm("c", env.ns))
            assert created is not None
            assert ledger.pending("ju") is None  # the cache read its own write
            assert await ledger.delete(job, CONFIGMAPS, created)
            assert ledger.pending("ju") is None


@pytest.mark.etctl_hooks("fault injection: an adoption's answer lost")
async def test_an_adoption_whose_answer_was_lost_is_read_back_and_holds(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        ledger = WriteLedger(env.client, FrozenCache(), clock=env.clock)
        orphan = env.configmap("j-orphan", a="1")
        ref = {
            "apiVersion": "v1",
            "kind": "Job",
            "name": "j",
            "uid": "ju",
            "controller": True,
            "blockOwnerDeletion": True,
        }
        env.server.inject(Fault(verb="patch", resource="configmaps", drop_answer=True))
        adopted = await ledger.adopt(CONFIGMAPS, orphan, ref)
        assert adopted is not None  # the patch went through: read back, not an error
        stored = env.target.storage.get(CONFIGMAPS, "j-orphan", namespace=env.ns)
        assert objects.controller_ref(stored) == "ju"
        # A release decided on the version before the adoption applies to nothing.
        assert not await ledger.release(CONFIGMAPS, orphan, "ju")
        assert await ledger.release(CONFIGMAPS, adopted, "ju")
        stored = env.target.storage.get(CONFIGMAPS, "j-orphan", namespace=env.ns)
        assert objects.controller_ref(stored) is None
