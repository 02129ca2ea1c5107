"""The cache reads its own writes: a write's answer is cached at once, its watch event recognised.

The end-to-end tests hold the written resource's watch events on the embedded server (as a busy
watch cache would delay them), so what the cache shows before the watch delivers anything is the
client's doing alone; then they release them and check that nothing is seen twice and nothing
goes back in time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from etctl.runtime import (
    CONFIGMAPS,
    Cache,
    CacheOptions,
    Client,
    GenerationChanged,
    Manager,
    ManagerOptions,
    ObjectList,
    PatchType,
    Request,
    Resource,
    Result,
    objects,
)
from etctl.runtime._ownwrites import OwnWrites, Scope, answer_is_gone, deleted_uid
from etctl.testing import Fault, eventually, wait_idle
from tests._cluster import NEVER, NOT_PRESET, PRESET_CONFIGMAP, Cluster, cluster
from tests.common._crds import podgroup_crd
from tests.runtime._realtime import running
from tests.runtime._recorder import Recorder

pytestmark = pytest.mark.etctl_hooks("holds the watch events of the written resource")

# An open schema with a status subresource: whatever status the tests write is kept.
WIDGETS = Resource("example.etctl.dev", "v1", "podgroups", "PodGroup")
WIDGET_CRD = podgroup_crd("example.etctl.dev", "v1")


@asynccontextmanager
async def watched(
    env: Cluster, res: Resource = CONFIGMAPS, **selectors: str
) -> AsyncIterator[tuple[Cache, Recorder]]:
    """A running, synced cache of ``res`` in the test's namespace, with a recording handler."""
    options = CacheOptions(namespaces=[env.ns], idle_timeout=NEVER)
    cache = Cache(env.client, clock=env.clock, options=options)
    seen = Recorder()
    if res == CONFIGMAPS:  # not the kube-root-ca.crt every namespace holds
        selectors.setdefault("field_selector", NOT_PRESET)
    cache.informer(res, **selectors).add_handler(seen)
    async with running(cache):
        await cache.wait_for_sync(5)
        yield cache, seen


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"v": "1"}}


def version(found: Any) -> str:
    assert found is not None
    return objects.resource_version(found)


async def settled(env: Cluster, cache: Cache, res: Resource = CONFIGMAPS) -> None:
    """Release ``res``'s watch events and wait until the cache holds what the server holds."""
    env.server.release_watch_events(res)
    await eventually(lambda: env.server.store.unsent() == 0)
    server = env.versions(res)
    await eventually(
        lambda: {objects.key_of(o): version(o) for o in cache.list(res, namespace=env.ns)} == server
    )


async def test_each_write_is_read_back_at_once_and_seen_once(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env, watched(env) as (cache, seen):
        env.server.hold_watch_events(CONFIGMAPS)
        created = await env.client.create(CONFIGMAPS, cm("a"), namespace=env.ns)
        assert version(cache.get(CONFIGMAPS, "a", namespace=env.ns)) == version(created)
        patched = await env.client.patch(CONFIGMAPS, "a", {"data": {"v": "2"}}, namespace=env.ns)
        assert version(cache.get(CONFIGMAPS, "a", namespace=env.ns)) == version(patched)
        replaced = await env.client.replace(
            CONFIGMAPS, {**patched, "data": {"v": "3"}}, namespace=env.ns
        )
        found = cache.get(CONFIGMAPS, "a", namespace=env.ns)
        assert found is not None
        assert found["data"] == {"v": "3"}
        assert version(found) == version(replaced)
        applied = await env.client.patch(
            CONFIGMAPS,
            "a",
            {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": "4"}},
            namespace=env.ns,
            patch_type=PatchType.APPLY,
            force=True,
        )
        assert version(cache.get(CONFIGMAPS, "a", namespace=env.ns)) == version(applied)
        await env.client.delete(CONFIGMAPS, "a", namespace=env.ns)
        assert cache.get(CONFIGMAPS, "a", namespace=env.ns) is None
        key = f"{env.ns}/a"
        expected = [
            ("add", key, False),
            ("update", key, False),
            ("update", key, False),
            ("update", key, False),
            ("delete", key, False),
        ]
        assert seen.log == expected
        await settled(env, cache)
        assert seen.log == expected  # the watch's events were recognised, none seen twice
        assert seen.problems == []


async def test_a_status_write_is_read_back_at_once(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, raw=True, crds=[WIDGET_CRD]) as env,
        watched(env, WIDGETS) as (cache, seen),
    ):
        body = {"apiVersion": "example.etctl.dev/v1", "kind": "PodGroup", "metadata": {"name": "w"}}
        await env.client.create(WIDGETS, body, namespace=env.ns)
        env.server.hold_watch_events(WIDGETS)
        written = await env.client.patch_status(
            WIDGETS, "w", {"status": {"ready": True}}, namespace=env.ns
        )
        found = cache.get(WIDGETS, "w", namespace=env.ns)
        assert found is not None
        assert found["status"] == {"ready": True}
        assert version(found) == version(written)
        await settled(env, cache, WIDGETS)
        assert [entry[0] for entry in seen.log] == ["add", "update"]
        assert seen.problems == []


async def test_older_events_arriving_later_never_take_the_cache_back(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env, watched(env) as (cache, seen):
        env.configmap("a", v="1")
        await eventually(lambda: cache.get(CONFIGMAPS, "a", namespace=env.ns) is not None)
        env.server.hold_watch_events(CONFIGMAPS)
        env.update("a", v="2", other="x")  # another writer, whose event is held too
        ours = await env.client.patch(CONFIGMAPS, "a", {"data": {"v": "3"}}, namespace=env.ns)
        shown: list[str] = []
        seen_before = len(seen.log)

        class Watch:
            def on_add(self, obj: Any, *, is_in_initial_list: bool) -> None:
                shown.append(version(obj))

            def on_update(self, old: Any, new: Any) -> None:
                shown.append(version(new))

            def on_delete(self, obj: Any) -> None:
                shown.append("deleted")

        cache.informer(CONFIGMAPS, field_selector=NOT_PRESET).add_handler(Watch())
        shown.clear()
        await settled(env, cache)
        found = cache.get(CONFIGMAPS, "a", namespace=env.ns)
        assert found is not None
        assert found["data"] == {"v": "3", "other": "x"}  # our answer holds the other change
        assert version(found) == version(ours)
        assert shown == []  # the older event and our own echo: neither delivered
        assert len(seen.log) == seen_before
        assert seen.problems == []


async def test_a_write_outside_the_informers_scope_stays_out(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, raw=True) as env,
        watched(env, label_selector="app=a") as (cache, seen),
    ):
        await env.client.create(CONFIGMAPS, cm("in", app="a"), namespace=env.ns)
        env.server.hold_watch_events(CONFIGMAPS)
        await env.client.create(CONFIGMAPS, cm("out", app="b"), namespace=env.ns)
        assert cache.get(CONFIGMAPS, "out", namespace=env.ns) is None
        await env.client.patch(
            CONFIGMAPS, "in", {"metadata": {"labels": {"app": "b"}}}, namespace=env.ns
        )
        assert cache.get(CONFIGMAPS, "in", namespace=env.ns) is None  # it left the scope
        env.server.release_watch_events(CONFIGMAPS)
        await eventually(lambda: env.server.store.unsent() == 0)
        await env.client.patch(
            CONFIGMAPS, "in", {"metadata": {"labels": {"app": "a"}}}, namespace=env.ns
        )
        assert cache.get(CONFIGMAPS, "in", namespace=env.ns) is not None  # back in scope
        await eventually(lambda: env.server.store.unsent() == 0)
        key = f"{env.ns}/in"
        assert seen.log == [("add", key, False), ("delete", key, False), ("add", key, False)]
        assert seen.problems == []


async def test_a_delete_held_by_a_finalizer_shows_the_object_terminating(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env, watched(env) as (cache, seen):
        body = {**cm("a"), "metadata": {"name": "a", "finalizers": ["example.etctl.dev/keep"]}}
        await env.client.create(CONFIGMAPS, body, namespace=env.ns)
        env.server.hold_watch_events(CONFIGMAPS)
        await env.client.delete(CONFIGMAPS, "a", namespace=env.ns)
        found = cache.get(CONFIGMAPS, "a", namespace=env.ns)
        assert found is not None
        assert objects.is_terminating(found)
        # Removing the last finalizer deletes it, and the answer is the object as it was (what a
        # real server answers): only the watch says it is gone.
        await env.client.patch(
            CONFIGMAPS, "a", {"metadata": {"finalizers": None}}, namespace=env.ns
        )
        assert cache.get(CONFIGMAPS, "a", namespace=env.ns) is not None
        await settled(env, cache)
        assert cache.get(CONFIGMAPS, "a", namespace=env.ns) is None
        assert [entry[0] for entry in seen.log] == ["add", "update", "delete"]
        assert seen.problems == []


class Listing:
    """The client, noting the resourceVersion each list asks for."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.listed_at: list[str | None] = []

    async def pages(self, res: Resource, **options: Any) -> AsyncIterator[ObjectList]:
        self.listed_at.append(options.get("resource_version"))
        async for page in self.client.pages(res, **options):
            yield page

    def watch(self, res: Resource, **options: Any) -> Any:
        return self.client.watch(res, **options)

    def observe_writes(self, observer: Any) -> Callable[[], None]:
        return self.client.observe_writes(observer)


async def test_a_relist_while_writes_are_awaited_reads_consistently(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        listing = Listing(env.client)
        options = CacheOptions(namespaces=[env.ns], idle_timeout=NEVER)
        cache = Cache(listing, clock=env.clock, options=options)
        seen = Recorder()
        cache.informer(CONFIGMAPS, field_selector=NOT_PRESET).add_handler(seen)
        async with running(cache):
            await cache.wait_for_sync(5)
            env.server.hold_watch_events(CONFIGMAPS)
            created = await env.client.create(CONFIGMAPS, cm("a"), namespace=env.ns)
            env.server.inject(Fault(verb="watch", resource="configmaps", expire_watch=True))
            await env.clock.advance(5)
            env.cut_watches()
            await env.through_backoff()  # the rewatch gets 410: the informer relists
            await eventually(lambda: len(listing.listed_at) == 2)
            assert listing.listed_at == ["0", None]  # a consistent read, not the watch cache
            assert version(cache.get(CONFIGMAPS, "a", namespace=env.ns)) == version(created)
            await settled(env, cache)
        assert [entry[0] for entry in seen.log] == ["add"]
        assert seen.problems == []


async def test_an_echo_that_never_comes_stops_being_awaited(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, raw=True, bookmark_interval=30.0) as env,
        watched(env) as (cache, seen),
    ):
        env.server.hold_watch_events(CONFIGMAPS)
        await env.client.create(CONFIGMAPS, cm("a"), namespace=env.ns)
        env.server.store.dispatcher.drop(("", "configmaps"))  # the echo is lost
        env.server.release_watch_events(CONFIGMAPS)
        newer = env.update("a", v="9")  # someone else's change: taken for an older one
        await eventually(lambda: env.server.store.unsent() == 0)
        assert cache.get(CONFIGMAPS, "a", namespace=env.ns)["data"] == {"v": "1"}  # type: ignore[index]
        await env.clock.advance(61.0)  # past the wait, and a bookmark comes
        await eventually(
            lambda: version(cache.get(CONFIGMAPS, "a", namespace=env.ns)) == version(newer)
        )
        assert seen.problems == []


# -- the ledger and its rules, without a server


def test_a_delete_answer_says_whether_the_object_is_gone() -> None:
    status = {"kind": "Status", "status": "Success", "details": {"name": "a", "uid": "u1"}}
    assert answer_is_gone(status)
    assert deleted_uid(status) == "u1"
    assert answer_is_gone(None)
    last = {"kind": "ConfigMap", "metadata": {"name": "a", "uid": "u2"}}
    assert answer_is_gone(last)
    assert deleted_uid(last) == "u2"
    marked = {"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}}
    assert answer_is_gone({**marked, "kind": "ConfigMap"})
    finalized = {"metadata": {**marked["metadata"], "finalizers": ["x"]}}
    assert not answer_is_gone(finalized)
    grace = {"metadata": {**marked["metadata"], "deletionGracePeriodSeconds": 30}}
    assert not answer_is_gone(grace)
    namespace = {**marked, "kind": "Namespace", "spec": {"finalizers": ["kubernetes"]}}
    assert not answer_is_gone(namespace)


def test_scope_holds_what_the_informer_would() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "a", "labels": {"app": "x"}},
        "spec": {"nodeName": "", "hostNetwork": False},
        "status": {"phase": "Running"},
    }
    assert Scope("a", "app=x", "status.phase=Running").holds(pod)
    assert not Scope("b", None, None).holds(pod)
    assert not Scope(None, "app=y", None).holds(pod)
    assert Scope(None, None, "spec.nodeName=").holds(pod)
    assert Scope(None, None, "spec.hostNetwork=false").holds(pod)
    assert not Scope(None, None, "metadata.name!=p").holds(pod)


def test_an_answer_the_stream_already_passed_is_not_applied() -> None:
    own = OwnWrites()
    stored = {"metadata": {"name": "a", "resourceVersion": "5"}}
    token = own.begin("ns/a", stored)
    own.on_event("MODIFIED", "ns/a", {"metadata": {"resourceVersion": "7"}}, "7")
    assert not own.may_apply(token, "7", stored)  # its event came during the write
    assert not own.may_apply(token, "5", None)  # a write that changed nothing
    own.end(token)
    token = own.begin("ns/a", stored)
    assert own.may_apply(token, "9", stored)
    own.end(token)


def test_overlapping_writes_of_one_object_apply_only_the_first_answer() -> None:
    own = OwnWrites()
    first, second = own.begin("ns/a", None), own.begin("ns/a", None)
    own.end(first)
    assert own.may_apply(first, "10", None)
    own.expect(first, present=True, rv="10", uid="", now=0.0)
    assert not own.may_apply(second, "11", None)  # which one the server committed last: unknown
    own.end(second)
    assert not own.expected["ns/a"].flight  # later writes are not overlapping ones


def test_events_before_the_echo_are_dropped_and_the_echo_settles() -> None:
    own = OwnWrites()
    token = own.begin("ns/a", None)
    own.expect(token, present=True, rv="10", uid="", now=0.0)
    own.end(token)
    older = {"metadata": {"name": "a", "resourceVersion": "8"}}
    assert own.on_event("MODIFIED", "ns/a", older, "8")
    assert own.on_event("MODIFIED", "ns/a", {"metadata": {"resourceVersion": "10"}}, "10")
    assert not own.expected
    assert not own.on_event("MODIFIED", "ns/a", {"metadata": {"resourceVersion": "12"}}, "12")


def test_a_deletes_echo_is_its_deleted_event() -> None:
    own = OwnWrites()
    token = own.begin("ns/a", None)
    own.expect(token, present=False, rv="", uid="u1", now=0.0)
    own.end(token)
    assert own.on_event("MODIFIED", "ns/a", {"metadata": {"uid": "u1"}}, "8")
    assert own.on_event("DELETED", "ns/a", {"metadata": {"uid": "u1"}}, "11")
    assert not own.expected
    assert not own.on_event("ADDED", "ns/a", {"metadata": {"uid": "u2"}}, "12")


def test_expired_waits_are_found_only_once_their_time_is_up() -> None:
    own = OwnWrites(ttl=10.0)
    token = own.begin("ns/a", None)
    own.expect(token, present=True, rv="10", uid="", now=0.0)
    own.end(token)
    assert own.expired(5.0) == []
    late = own.expired(10.0)
    assert [key for key, _ in late] == ["ns/a"]
    assert not own.expected


# -- a controller: its children's events come before its own status event


class Fanout:
    """Plain fanout logic: create the children the cache lacks, patch the status it lacks."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.cache = manager.cache

    async def __call__(self, request: Request) -> Result:
        parent = self.cache.get(WIDGETS, request.name, namespace=request.namespace)
        if parent is None:
            return Result()
        data = {"size": str((parent.get("spec") or {}).get("size"))}
        for index in range(CHILDREN):
            name = f"{request.name}-{index}"
            have = self.cache.get(CONFIGMAPS, name, namespace=request.namespace)
            if have is None:
                child = {
                    "metadata": {
                        "name": name,
                        "ownerReferences": [objects.make_controller_ref(parent, WIDGETS)],
                    },
                    "data": data,
                }
                await self.client.create(CONFIGMAPS, child, namespace=request.namespace)
            elif have.get("data") != data:
                await self.client.patch(
                    CONFIGMAPS, name, {"data": data}, namespace=request.namespace
                )
        want = {"children": CHILDREN, "observedGeneration": objects.generation(parent)}
        if parent.get("status") != want:
            await self.client.patch_status(
                WIDGETS, request.name, {"status": want}, namespace=request.namespace
            )
        return Result()


CHILDREN = 4


async def test_one_status_write_per_change_when_children_events_come_first(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True, crds=[WIDGET_CRD]) as env:
        manager = Manager(
            env.client,
            options=ManagerOptions(cache=CacheOptions(namespaces=[env.ns], idle_timeout=NEVER)),
            clock=env.clock,
        )
        manager.controller("fanout", Fanout(manager)).for_(WIDGETS, GenerationChanged()).owns(
            CONFIGMAPS
        ).build()

        def status_writes() -> int:
            return len(
                env.server.requests.find(verb="patch", resource="podgroups", subresource="status")
            )

        async def until_written(count: int) -> None:
            await eventually(lambda: status_writes() >= count)

        async with running(manager):
            await manager.wait_started()
            for generation, size in ((1, "1"), (2, "2")):
                body = {
                    "apiVersion": "example.etctl.dev/v1",
                    "kind": "PodGroup",
                    "metadata": {"name": "w"},
                    "spec": {"size": size},
                }
                if generation == 1:
                    env.server.storage.create(WIDGETS, body, namespace=env.ns)
                else:
                    env.server.storage.patch(
                        WIDGETS,
                        "w",
                        {"spec": {"size": size}},
                        patch_type=PatchType.MERGE.value,
                        namespace=env.ns,
                    )
                # The change itself goes out; the status the controller writes for it is held,
                # as a watch cache that lags behind: the children's events come first.
                env.server.hold_watch_events(WIDGETS)
                await until_written(generation)
                await wait_idle_but_held(env, manager)
                env.server.release_watch_events(WIDGETS)
                await wait_idle(env.server, manager)
                assert status_writes() == generation  # one status write per change
        stored = env.server.storage.get(WIDGETS, "w", namespace=env.ns)
        assert stored["status"] == {"children": CHILDREN, "observedGeneration": 2}


async def wait_idle_but_held(env: Cluster, manager: Manager) -> None:
    """Wait until the children's events reached the cache and the controller has nothing left.

    Checked twice, a poll apart, so that bytes already in a socket are read in between.
    """

    def calm() -> bool:
        cached = {
            objects.key_of(o): version(o)
            for o in manager.cache.list(CONFIGMAPS, namespace=env.ns)
            if objects.name(o) != PRESET_CONFIGMAP
        }
        return cached == env.versions() and all(c.queue.idle for c in manager.controllers)

    for _ in range(2):
        await eventually(calm)
        await asyncio.sleep(0.01)
    await eventually(calm)
