"""The shared informer end to end against the embedded API server, on a virtual clock."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from etctl.errors import CacheSyncError
from etctl.runtime import CONFIGMAPS, REGISTRY, ObjectView, PatchType, Resource, Tombstone, objects
from etctl.runtime._informer import Informer
from etctl.testing import Fault, History, eventually
from tests._cluster import NEVER, Cluster, cluster
from tests.runtime._fakes import sample
from tests.runtime._realtime import running
from tests.runtime._recorder import Recorder

LABEL = str(CONFIGMAPS)


def informer(env: Cluster, **options: Any) -> Informer:
    """An informer of the test's ConfigMaps (``options`` may widen or narrow it)."""
    options.setdefault("idle_timeout", NEVER)
    for key, value in env.scope.items():
        options.setdefault(key, value)
    return Informer(env.client, CONFIGMAPS, clock=env.clock, **options)


def cached(inf: Informer) -> dict[str, str]:
    """key -> resourceVersion of what the informer holds."""
    return {
        key: objects.resource_version(inf.store.get(key) or {}) for key in inf.store.list_keys()
    }


async def test_cache_and_handlers_converge_on_the_server_after_a_burst(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        for i in range(20):
            env.configmap(f"pre-{i}", v="0")
        inf = informer(env)
        seen = Recorder()
        registration = inf.add_handler(seen)
        assert not registration.has_synced()
        async with running(inf):
            await inf.wait_for_sync(5)
            assert registration.has_synced()
            assert sorted(seen.log) == sorted(("add", f"{env.ns}/pre-{i}", True) for i in range(20))
            for i in range(50):
                env.configmap(f"c-{i}", v="1")
            for i in range(0, 50, 2):
                env.update(f"c-{i}", v="2")
            for i in range(0, 50, 5):
                env.delete(f"c-{i}")
            for i in range(10):
                env.delete(f"pre-{i}")
            server = env.versions()
            await eventually(lambda: cached(inf) == server)
        assert len(inf.store) == len(server) == 50
        assert seen.versions() == server
        assert seen.problems == []
        if env.embedded:  # the server's request log
            assert env.requests("list") == 1


async def test_managed_fields_are_stripped_and_equal_parts_shared(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        for name in ("a", "b"):
            body = {"metadata": {"name": name, "labels": {"app": "x"}}, "data": {"k": "shared"}}
            await env.client.patch(
                CONFIGMAPS, name, body, namespace=env.ns, patch_type=PatchType.APPLY
            )
        stored = env.target.storage.get(CONFIGMAPS, "a", namespace=env.ns)
        assert "managedFields" in stored["metadata"]
        inf = informer(env)
        async with running(inf):
            await inf.wait_for_sync(5)
        a, b = inf.store.get(f"{env.ns}/a"), inf.store.get(f"{env.ns}/b")
        assert a is not None
        assert b is not None
        assert "managedFields" not in a["metadata"]
        assert a["data"] == {"k": "shared"}
        assert a["data"] is b["data"]  # compacted: one dict for equal subtrees
        plain = informer(env, transform=None, compact=False)
        async with running(plain):
            await plain.wait_for_sync(5)
        kept = plain.store.get(f"{env.ns}/a")
        assert kept is not None
        assert "managedFields" in kept["metadata"]


@pytest.mark.parametrize("earlier_writes", [0, 300])
async def test_an_update_keeps_the_cached_parts_it_did_not_change(
    tmp_path: Path, earlier_writes: int
) -> None:
    # Earlier writes move resourceVersions past two digits, as on any long-lived cluster.
    labels = {"app.kubernetes.io/name": "training", "app.kubernetes.io/part-of": "etctl"}
    async with cluster(tmp_path, raw=True) as env:
        for i in range(earlier_writes):
            env.target.storage.create(
                CONFIGMAPS, {"metadata": {"name": f"earlier-{i}"}}, namespace=env.ns
            )
        for i in range(40):  # enough for the compactor to learn that labels differ per object
            body = {"metadata": {"name": f"c-{i}", "labels": {**labels, "index": str(i)}}}
            env.target.storage.create(CONFIGMAPS, {**body, "data": {"k": "1"}}, namespace=env.ns)
        inf = informer(env)
        seen = Recorder()
        inf.add_handler(seen)
        async with running(inf):
            await inf.wait_for_sync(5)
            before = inf.store.get(f"{env.ns}/c-7")
            assert before is not None
            env.update("c-7", k="2")
            await eventually(lambda: seen.log[-1] == ("update", f"{env.ns}/c-7", False))
        after = inf.store.get(f"{env.ns}/c-7")
        assert after is not None
        assert after["data"] == {"k": "2"}
        assert after["metadata"]["labels"] is before["metadata"]["labels"]  # the cached one
        assert before["data"] == {"k": "1"}  # what handlers saw before is never changed
        assert seen.view[f"{env.ns}/c-7"] is after


async def test_an_object_the_compactor_fails_on_is_cached_as_received(tmp_path: Path) -> None:
    def nest(obj: dict[str, Any]) -> dict[str, Any]:
        deep: dict[str, Any] = {"leaf": "x"}
        for _ in range(5000):  # deeper than any recursion can follow
            deep = {"n": deep}
        obj["deep"] = deep
        return obj

    async with cluster(tmp_path, raw=True) as env:
        env.configmap("a", k="1")
        inf = informer(env, transform=nest)
        seen = Recorder()
        inf.add_handler(seen)
        async with running(inf):
            await eventually(inf.has_synced)
            env.configmap("b", k="2")
            await eventually(lambda: len(seen.log) == 2)
        assert sorted(inf.store.list_keys()) == [f"{env.ns}/a", f"{env.ns}/b"]
        cached = inf.store.get(f"{env.ns}/b")
        assert cached is not None
        assert cached["data"] == {"k": "2"}
        assert "deep" in cached
        assert seen.problems == []


async def test_late_handler_gets_a_replay_then_live_events(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        for name in ("a", "b", "c"):
            env.configmap(name)
        inf = informer(env)
        early = Recorder()
        inf.add_handler(early)
        async with running(inf):
            await inf.wait_for_sync(5)
            late = Recorder()
            registration = inf.add_handler(late)
            assert registration.has_synced()
            assert sorted(late.log) == [("add", f"{env.ns}/{n}", True) for n in "abc"]
            env.configmap("d")
            env.update("a", x="1")
            await eventually(lambda: len(late.log) == 5)
        assert late.log[3:] == [("add", f"{env.ns}/d", False), ("update", f"{env.ns}/a", False)]
        assert late.view.keys() == early.view.keys()
        assert late.problems == early.problems == []


async def test_a_failing_handler_is_counted_and_never_starves_the_others(tmp_path: Path) -> None:
    class Broken:
        calls = 0

        def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
            self.calls += 1
            raise RuntimeError("handler bug")

        def on_update(self, old: ObjectView, new: ObjectView) -> None:
            self.calls += 1
            raise RuntimeError("handler bug")

        def on_delete(self, obj: ObjectView | Tombstone) -> None:
            self.calls += 1
            raise RuntimeError("handler bug")

    async with cluster(tmp_path, raw=True) as env:
        env.configmap("a")
        inf = informer(env)
        broken, good = Broken(), Recorder()
        inf.add_handler(broken)
        inf.add_handler(good)
        before = sample("etctl_informer_handler_errors_total", resource=LABEL)
        async with running(inf):
            await inf.wait_for_sync(5)
            env.configmap("b")
            env.update("b", k="v")
            env.delete("a")
            await eventually(lambda: len(good.log) == 4)
        assert broken.calls == 4
        assert sample("etctl_informer_handler_errors_total", resource=LABEL) - before == 4
        assert good.versions() == env.versions()


async def test_removed_handler_gets_nothing_more(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        inf = informer(env)
        kept, removed = Recorder(), Recorder()
        inf.add_handler(kept)
        inf.remove_handler(inf.add_handler(removed))
        async with running(inf):
            await inf.wait_for_sync(5)
            env.configmap("a")
            await eventually(lambda: len(kept.log) == 1)
        assert removed.log == []


@pytest.mark.etctl_hooks("a 3-event watch history, a held watch and cut streams")
async def test_missed_deletes_become_tombstones_and_a_recreated_name_delete_then_add(
    tmp_path: Path,
) -> None:
    async with cluster(
        tmp_path, raw=True, history=History(watch_cache_min=3, watch_cache_max=3)
    ) as env:
        for name in ("gone", "kept", "changed", "recreated"):
            env.configmap(name, v="0")
        inf = informer(env)
        seen = Recorder()
        inf.add_handler(seen)
        relists = sample("etctl_informer_relists_total", resource=LABEL)
        expired = sample("etctl_informer_watch_restarts_total", resource=LABEL, reason="expired")
        async with running(inf):
            await inf.wait_for_sync(5)
            old_uid = objects.uid(inf.store.get(f"{env.ns}/recreated") or {})
            kept = inf.store.get(f"{env.ns}/kept")
            await eventually(lambda: env.watchers() == 1)
            # Disconnect: the rewatch hangs for 30 s while the server moves on past its history.
            hold = env.server.inject(Fault(verb="watch", resource="configmaps", delay=30))
            env.cut_watches()
            await env.through_backoff()  # the cut watch was very short
            await eventually(lambda: hold.fired == 1)
            env.delete("gone")
            env.update("changed", v="1")
            env.delete("recreated")
            env.configmap("recreated", v="new")
            env.configmap("fresh")
            for i in range(5):
                env.configmap(f"filler-{i}")
            await env.clock.advance(30)
            final = str(env.server.store.rv)
            await eventually(lambda: inf.last_sync_resource_version == final)
            assert inf.store.get(f"{env.ns}/kept") is kept  # the relist kept the same instance
            env.update("kept", v="later")
            await eventually(lambda: seen.log[-1] == ("update", f"{env.ns}/kept", False))
        assert seen.versions() == env.versions()
        assert seen.problems == []
        after_sync = seen.log[4:]
        assert ("delete", f"{env.ns}/gone", True) in after_sync
        recreate = [e for e in after_sync if e[1] == f"{env.ns}/recreated"]
        assert recreate == [
            ("delete", f"{env.ns}/recreated", True),
            ("add", f"{env.ns}/recreated", False),
        ]
        assert ("update", f"{env.ns}/changed", False) in after_sync
        assert ("add", f"{env.ns}/fresh", False) in after_sync
        assert [e for e in after_sync if e[1] == f"{env.ns}/kept"] == [
            (
                "update",
                f"{env.ns}/kept",
                False,
            )  # the later change only: the relist did not report it
        ]
        assert objects.uid(inf.store.get(f"{env.ns}/recreated") or {}) != old_uid
        assert sample("etctl_informer_relists_total", resource=LABEL) - relists == 2
        assert (
            sample("etctl_informer_watch_restarts_total", resource=LABEL, reason="expired")
            - expired
            == 1
        )


@pytest.mark.etctl_hooks("fault injection: a 403 on list")
async def test_a_forbidden_list_fails_wait_for_sync_with_the_reason(tmp_path: Path) -> None:
    message = (
        'configmaps is forbidden: User "system:serviceaccount:etctl:etctl" cannot list resource '
        '"configmaps" in API group "" at the cluster scope'
    )
    async with cluster(tmp_path, raw=True) as env:
        denied = env.server.inject(
            Fault(verb="list", resource="configmaps", status=403, message=message, times=None)
        )
        inf = informer(env)
        async with running(inf):
            await eventually(lambda: denied.fired >= 1 and env.backing_off())  # error recorded
            waiting = asyncio.create_task(inf.wait_for_sync(10))
            await env.clock.advance(10)
            with pytest.raises(CacheSyncError) as caught:
                await waiting
        text = str(caught.value)
        assert "configmaps/v1" in text
        assert "403 Forbidden" in text
        assert "cannot list resource" in text
        assert not inf.has_synced()


async def test_a_missing_crd_fails_wait_for_sync_with_not_found(tmp_path: Path) -> None:
    # A group no test installs (a real cluster keeps the CRDs other tests installed).
    widgets = Resource("missing.etctl.io", "v1", "widgets", "Widget")
    async with cluster(tmp_path, raw=True) as env:
        inf = Informer(env.client, widgets, clock=env.clock, namespace=env.ns)
        async with running(inf):
            await eventually(env.backing_off)  # the 404 is in, the reflector waits to retry
            waiting = asyncio.create_task(inf.wait_for_sync(3))
            await env.clock.advance(3)
            with pytest.raises(
                CacheSyncError, match=rf"widgets.missing.etctl.io/v1 in namespace {env.ns}"
            ):
                await waiting
        assert "404 NotFound" in str(waiting.exception())


async def test_wait_for_sync_says_when_the_informer_is_not_running(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        inf = informer(env)
        waiting = asyncio.create_task(inf.wait_for_sync(1))
        await env.clock.advance(1)
        with pytest.raises(CacheSyncError, match="not running"):
            await waiting


async def test_resync_reports_every_object_as_an_update_to_itself(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        env.configmap("a")
        env.configmap("b")
        inf = informer(env, resync_period=60)
        seen = Recorder()
        inf.add_handler(seen)
        async with running(inf):
            await inf.wait_for_sync(5)
            await env.clock.advance(53)  # the first resync is due in [54, 66)
            assert len(seen.log) == 2
            await env.clock.advance(14)
            assert sorted(seen.log[2:]) == [
                ("update", f"{env.ns}/a", True),
                ("update", f"{env.ns}/b", True),
            ]
        assert seen.problems == []


async def test_metrics_count_events_and_cached_objects(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        added = sample("etctl_informer_events_total", resource=LABEL, type="ADDED")
        deleted = sample("etctl_informer_events_total", resource=LABEL, type="DELETED")
        cached = sample("etctl_informer_objects", resource=LABEL)
        inf = informer(env)
        env.configmap("a")
        async with running(inf):
            await inf.wait_for_sync(5)
            env.configmap("b")
            env.configmap("c")
            env.delete("a")
            await eventually(lambda: len(inf.store) == 2)
            assert sample("etctl_informer_objects", resource=LABEL) - cached == 2
        assert sample("etctl_informer_events_total", resource=LABEL, type="ADDED") - added == 2
        assert sample("etctl_informer_events_total", resource=LABEL, type="DELETED") - deleted == 1
        last = sample("etctl_informer_last_event_timestamp_seconds", resource=LABEL)
        assert last == env.clock.now().timestamp()


def _objects_series() -> float | None:
    return REGISTRY.get_sample_value("etctl_informer_objects", {"resource": LABEL})


async def test_a_stopped_informer_drops_its_objects_series(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        other = env.namespace("other")
        env.configmap("a")
        env.configmap("b", namespace=other)
        here, there = informer(env), informer(env, namespace=other)
        async with running(there):
            await there.wait_for_sync(5)
            async with running(here):
                await here.wait_for_sync(5)
                assert _objects_series() == 2  # informers of one resource add up
            # One of the resource's informers still runs: its objects stay counted.
            assert _objects_series() == 1
        # Nothing caches configmaps any more: no stale series is left to scrape.
        assert _objects_series() is None
        async with running(here):
            # A restarted informer counts what it holds again.
            await eventually(lambda: _objects_series() == 1)
        assert _objects_series() is None


async def test_an_informer_runs_once_at_a_time(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        inf = informer(env)
        async with running(inf):
            await inf.wait_for_sync(5)
            with pytest.raises(RuntimeError, match="already running"):
                await inf.run()


async def test_selectors_and_namespace_filter_on_the_server(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        other = env.namespace("other")
        env.configmap("a")
        env.configmap("b")
        env.configmap("a", namespace=other)
        # Every namespace, ours and the cluster's others (of which the test reads only its own).
        by_field = informer(env, namespace=None, field_selector="metadata.name=a")
        in_other = informer(env, namespace=other)
        async with running(by_field, in_other):
            await by_field.wait_for_sync(5)
            await in_other.wait_for_sync(5)
            env.configmap("c", namespace=other)
            await eventually(lambda: len(in_other.store) == 2)
        mine = [key for key in by_field.store.list_keys() if key.split("/")[0] in (env.ns, other)]
        assert sorted(mine) == [f"{env.ns}/a", f"{other}/a"]
        assert sorted(in_other.store.list_keys()) == [f"{other}/a", f"{other}/c"]
        assert by_field.describe() == "configmaps/v1 with fields metadata.name=a"
        # What the cluster puts in every namespace (kube-root-ca.crt) is left out by the scope.
        fields = env.scope.get("field_selector")
        expected = f"configmaps/v1 in namespace {other}" + (
            f" with fields {fields}" if fields else ""
        )
        assert in_other.describe() == expected
