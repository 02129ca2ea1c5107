"""How long the server remembers changes: the watch cache's window, etcd's compaction, and 410s.

Unit tests of the window and the compaction schedule, then the same over HTTP, then an informer
of the runtime falling behind the watch cache on a server with a real server's settings and
relisting without losing or duplicating an event.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from etctl.runtime import CONFIGMAPS, FakeClock, objects
from etctl.runtime._informer import Informer
from etctl.testing import ApiServer, Fault, History, eventually
from etctl.testing._apiserver.history import Compactor, EventLog
from tests._cluster import NEVER, cluster
from tests.runtime._fakes import sample
from tests.runtime._realtime import running
from tests.runtime._recorder import Recorder
from tests.testing.apiserver._client import Api, configmap

CM = "/api/v1/namespaces/default/configmaps"


@dataclass
class _Event:
    rv: int
    time: float


def _log(history: History, *times: float, start: int = 1) -> EventLog[_Event]:
    log: EventLog[_Event] = EventLog(history, start)
    for offset, time in enumerate(times):
        log.append(_Event(start + 1 + offset, time))
    return log


SMALL = History(watch_cache_min=2, watch_cache_max=8, event_fresh=75)


def test_the_settings_are_a_real_servers_by_default() -> None:
    assert History() == History(
        watch_cache_min=100, watch_cache_max=102_400, event_fresh=75, compaction_interval=300
    )
    with pytest.raises(ValueError, match="watch_cache_min"):
        History(watch_cache_min=0)
    with pytest.raises(ValueError, match="watch_cache_max"):
        History(watch_cache_min=10, watch_cache_max=5)
    with pytest.raises(ValueError, match="negative"):
        History(compaction_interval=-1)


def test_the_cache_grows_rather_than_drop_a_fresh_event() -> None:
    log = _log(SMALL, *[0.0] * 8)
    assert (log.capacity, log.cached, log.evicted) == (8, 8, False)
    assert log.watch_floor() == 1  # nothing evicted: as old as the cache's initial list
    since = log.since(1)
    assert since is not None
    assert [e.rv for e in since] == list(range(2, 10))


def test_at_its_largest_the_cache_drops_its_oldest_event_even_when_fresh() -> None:
    log = _log(SMALL, *[0.0] * 9)
    assert (log.capacity, log.cached) == (8, 8)
    assert log.watch_floor() == 2  # the oldest kept is 3: a watch may start at 2, not 1
    assert log.since(1) is None
    since = log.since(2)
    assert since is not None
    assert [e.rv for e in since] == list(range(3, 11))


def test_a_stale_event_makes_room_instead_of_growing_the_cache() -> None:
    log = _log(SMALL, 0.0, 0.0, 100.0)
    assert (log.capacity, log.cached) == (2, 2)
    assert log.watch_floor() == 2


def test_the_cache_shrinks_once_its_newest_quarter_is_stale() -> None:
    log = _log(SMALL, *[0.0] * 8)  # grown to 8
    log.append(_Event(10, 200.0))
    # Halved to 4, then full: the oldest of the 4 newest makes room for the new event.
    assert (log.capacity, log.cached) == (4, 4)
    assert log.watch_floor() == 6
    since = log.since(6)
    assert since is not None
    assert [e.rv for e in since] == [7, 8, 9, 10]


def test_events_only_etcd_keeps_go_once_compaction_passes_them() -> None:
    log = _log(History(watch_cache_min=2, watch_cache_max=2), 0, 0, 0, 0)
    assert len(log) == 4  # two cached, two kept for snapshots
    assert [e.rv for e in log.newest_first()] == [5, 4, 3, 2]
    log.trim(3)
    assert [e.rv for e in log.newest_first()] == [5, 4]
    log.trim(10)  # the watch cache keeps its events whatever etcd forgets
    assert [e.rv for e in log.newest_first()] == [5, 4]


def test_a_reset_cache_starts_over_at_the_given_version() -> None:
    log = _log(SMALL, 0, 0, 0)
    log.reset(40)
    assert (len(log), log.capacity, log.watch_floor()) == (0, 2, 40)
    assert log.since(39) is None
    assert log.since(40) == []


def test_the_compactor_compacts_to_what_the_previous_tick_saw() -> None:
    compactor = Compactor(300, start=0)
    assert compactor.due(299, rv=10) is None
    assert compactor.due(300, rv=10) is None  # bootstrap: record only
    assert compactor.due(450, rv=20) is None
    assert compactor.due(600, rv=30) == 10
    assert compactor.due(1500, rv=40) == 40  # several ticks since: each saw 40
    assert Compactor(0, start=0).due(1e9, rv=5) is None


async def test_a_watch_from_before_the_watch_cache_gets_410_with_the_real_message(
    clock: FakeClock,
) -> None:
    history = History(watch_cache_min=4, watch_cache_max=4)
    async with ApiServer(clock=clock, history=history) as server, aiohttp.ClientSession() as s:
        api = Api(s, server.url)
        first = await api.create(CM, configmap("a"))
        rv = int(first["metadata"]["resourceVersion"])
        for value in "12345":
            await api.patch(f"{CM}/a", {"data": {"k": value}})
        # Six events of configmaps, four kept: the oldest kept is rv + 2.
        status, events = await api.watch_lines(CM, {"resourceVersion": str(rv)})
        assert status == 200
        assert events == [
            {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": f"too old resource version: {rv} ({rv + 1})",
                    "reason": "Expired",
                    "code": 410,
                },
            }
        ]
        _, replay = await api.watch_lines(CM, {"resourceVersion": str(rv + 1)}, count=4)
        assert [e["object"]["data"]["k"] for e in replay] == ["2", "3", "4", "5"]
        # etcd has not compacted yet: a list at the old revision still reads it.
        listed = await api.get(CM, params={"resourceVersion": str(rv), "limit": "10"})
        assert listed.status == 200
        assert [i["data"] for i in listed.body["items"] if not _root_ca(i)] == [{"k": "v"}]


async def test_lists_at_an_exact_version_expire_with_etcd_compaction_on_the_clock(
    clock: FakeClock,
) -> None:
    async with ApiServer(clock=clock) as server, aiohttp.ClientSession() as session:
        api = Api(session, server.url)
        first = await api.create(CM, configmap("a"))
        patched = (await api.patch(f"{CM}/a", {"data": {"k": "later"}})).body
        before, after = (
            {"resourceVersion": obj["metadata"]["resourceVersion"], "resourceVersionMatch": "Exact"}
            for obj in (first, patched)
        )
        await clock.advance(300)
        assert (await api.get(CM, params=before)).status == 200  # the first tick only records
        await clock.advance(300)  # the second compacts to the revision the first saw
        reply = await api.get(CM, params=before)
        assert reply.status == 410
        assert reply.body["reason"] == "Expired"
        assert reply.body["message"] == "The resourceVersion for the provided list is too old."
        kept = await api.get(CM, params=after)  # the compacted revision itself stays readable
        assert [i["data"] for i in kept.body["items"] if not _root_ca(i)] == [{"k": "later"}]
        # The watch cache is not etcd: it still holds both events (far under its 100).
        _, events = await api.watch_lines(
            CM, {"resourceVersion": first["metadata"]["resourceVersion"]}, count=1
        )
        assert [e["type"] for e in events] == ["MODIFIED"]


async def test_an_informer_behind_the_watch_cache_relists_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """A real server's settings: 100 events, 75 s. The informer's rewatch is held while the
    cluster moves on for two minutes; the watch gets 410, the informer relists, and its handlers
    end with exactly the server's objects, every change seen once."""
    async with cluster(tmp_path, raw=True) as env:
        for i in range(10):
            env.configmap(f"c-{i}", v="0")
        inf = Informer(env.client, CONFIGMAPS, clock=env.clock, idle_timeout=NEVER)
        seen = Recorder()
        inf.add_handler(seen)
        label = str(CONFIGMAPS)
        relists = sample("etctl_informer_relists_total", resource=label)
        expired = sample("etctl_informer_watch_restarts_total", resource=label, reason="expired")
        async with running(inf):
            await inf.wait_for_sync(5)
            behind = inf.last_sync_resource_version
            await eventually(lambda: env.watchers() == 1)
            hold = env.server.inject(Fault(verb="watch", resource="configmaps", delay=150))
            env.cut_watches()
            await env.through_backoff()
            await eventually(lambda: hold.fired == 1)
            for i in range(60):
                env.configmap(f"early-{i}")
            env.delete("c-0")
            await env.clock.advance(80)  # what came before is stale now
            for i in range(1, 10):
                env.update(f"c-{i}", v="1")
            for i in range(100):
                env.configmap(f"late-{i}")
            env.delete("c-1")
            floor = env.server.store.watch_floor(("", "configmaps"))
            assert floor > int(behind)  # the informer's version has left the watch cache
            await env.clock.advance(80)  # the held rewatch goes out, and gets 410
            final = str(env.server.store.rv)
            await eventually(lambda: inf.last_sync_resource_version == final)
        assert seen.problems == []
        mine = {
            key: rv for key, rv in seen.versions().items() if not key.endswith("/kube-root-ca.crt")
        }
        assert mine == env.versions()
        assert len(mine) == 8 + 60 + 100
        # Two lists: the first one, and the relist after the 410.
        assert sample("etctl_informer_relists_total", resource=label) - relists == 2
        restarts = sample("etctl_informer_watch_restarts_total", resource=label, reason="expired")
        assert restarts - expired == 1
        deleted = [key for kind, key, _ in seen.log if kind == "delete"]
        assert sorted(deleted) == [f"{env.ns}/c-0", f"{env.ns}/c-1"]
        assert all(objects.resource_version(inf.store.get(k) or {}) for k in seen.view)


def _root_ca(obj: dict[str, Any]) -> bool:
    """The kube-root-ca.crt ConfigMap every namespace holds (not the test's)."""
    return bool(obj["metadata"]["name"] == "kube-root-ca.crt")
