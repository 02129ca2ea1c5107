"""The reflector's list/watch rules against the embedded API server, in virtual time."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from etctl.errors import ApiError, Gone, RequestNotSent, ServerError
from etctl.runtime import CONFIGMAPS, SECRETS, KubeObject, ObjectList, Resource, WatchEvent, objects
from etctl.runtime._reflector import ChangeType, ListerWatcher, Reflector, is_too_large_rv
from etctl.testing import Fault, History, eventually
from tests._cluster import NEVER, Cluster, cluster
from tests.runtime._fakes import sample
from tests.runtime._realtime import running

LABEL = str(CONFIGMAPS)


@dataclass
class Sink:
    """Keeps what a reflector delivers: key -> object, and how many lists it received."""

    content: dict[str, KubeObject] = field(default_factory=dict)
    lists: list[int] = field(default_factory=list)
    bookmarks: list[str] = field(default_factory=list)

    def list_starting(self) -> bool:
        return False

    def on_list(self, items: list[KubeObject], resource_version: str) -> None:
        self.content = {objects.key_of(obj): obj for obj in items}
        self.lists.append(len(items))

    def on_change(self, change: ChangeType, obj: KubeObject) -> None:
        if change == "DELETED":
            self.content.pop(objects.key_of(obj), None)
        else:
            self.content[objects.key_of(obj)] = obj

    def on_bookmark(self, resource_version: str) -> None:
        self.bookmarks.append(resource_version)

    def versions(self) -> dict[str, str]:
        return {key: objects.resource_version(obj) for key, obj in self.content.items()}


@dataclass
class Recording:
    """A lister that goes to the real server and notes the resourceVersion of each list."""

    inner: ListerWatcher
    listed_at: list[str | None] = field(default_factory=list)
    blank_list_version: bool = False

    async def pages(self, res: Resource, **options: Any) -> AsyncIterator[ObjectList]:
        self.listed_at.append(options.get("resource_version"))
        async for page in self.inner.pages(res, **options):
            yield ObjectList(page.items, "") if self.blank_list_version else page

    def watch(
        self, res: Resource, **options: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        return self.inner.watch(res, **options)


def reflector(
    env: Cluster, sink: Sink, lister: ListerWatcher | None = None, **kw: Any
) -> Reflector:
    kw.setdefault("idle_timeout", NEVER)
    kw.setdefault("rng", random.Random(7))
    for key, value in env.scope.items():  # the test's namespace
        kw.setdefault(key, value)
    return Reflector(lister or env.client, CONFIGMAPS, sink, clock=env.clock, **kw)


def restarts(reason: str) -> float:
    return sample("etctl_informer_watch_restarts_total", resource=LABEL, reason=reason)


async def test_first_list_is_paged_at_version_0_and_the_watch_follows(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        for i in range(7):
            env.configmap(f"c{i}")
        sink = Sink()
        lister = Recording(env.client)
        refl = reflector(env, sink, lister, page_size=3)
        async with running(refl):
            await eventually(lambda: sink.lists == [7])
            assert lister.listed_at == ["0"]
            if env.embedded:  # the server's request log
                await eventually(lambda: env.watchers() == 1)
                assert env.requests("list") == 3  # pages of 3
            late = env.configmap("late")
            await eventually(lambda: f"{env.ns}/late" in sink.content)
        assert sink.versions() == env.versions()
        assert refl.last_sync_resource_version == objects.resource_version(late)


@pytest.mark.etctl_hooks("a 4-event watch history and a held page")
async def test_an_expired_continue_token_relists_from_scratch_never_partially(
    tmp_path: Path,
) -> None:
    # etcd compacts every 2 s of the clock: page 2 waits 5 s, past a compaction that forgets the
    # revision page 1 was read at.
    async with cluster(tmp_path, raw=True, history=History(compaction_interval=2)) as env:
        for i in range(6):
            env.configmap(f"c{i}")
        env.server.inject(Fault(verb="list", resource="configmaps"))  # page 1 passes
        hold = env.server.inject(Fault(verb="list", resource="configmaps", delay=5))  # page 2
        sink = Sink()
        lister = Recording(env.client)
        refl = reflector(env, sink, lister, page_size=4)
        async with running(refl):
            await eventually(lambda: hold.fired == 1)
            for i in range(4):
                env.update(f"c{i}", v="changed")
            env.configmap("c9")
            await env.clock.advance(5)
            await eventually(lambda: env.watchers() == 1)
        assert lister.listed_at == ["0", None]  # then a consistent list from scratch
        assert sink.lists == [7]
        assert sink.versions() == env.versions()


@pytest.mark.etctl_hooks("fault injection: a 410 on list")
async def test_a_410_on_the_first_list_retries_at_once_with_a_consistent_read(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        env.configmap("a")
        env.server.inject(Fault(verb="list", resource="configmaps", status=410))
        sink = Sink()
        lister = Recording(env.client)
        async with running(reflector(env, sink, lister)):
            await eventually(lambda: env.watchers() == 1)
        assert lister.listed_at == ["0", None]
        assert sink.lists == [1]
        assert env.clock.monotonic() == 0  # no backoff sleep


@pytest.mark.etctl_hooks("fault injection: an expired watch")
async def test_watch_410_relists_at_the_last_version_then_consistently_after_a_second(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        env.configmap("a")
        sink = Sink()
        lister = Recording(env.client)
        refl = reflector(env, sink, lister)
        expired = restarts("expired")
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            env.configmap("b")
            await eventually(lambda: f"{env.ns}/b" in sink.content)
            synced_at = refl.last_sync_resource_version
            # The next watch meets a 410 ERROR event; the relist at the last RV meets a 410 too.
            env.server.inject(Fault(verb="watch", resource="configmaps", expire_watch=True))
            env.server.inject(Fault(verb="list", resource="configmaps", status=410))
            await env.clock.advance(5)
            env.cut_watches()
            await env.through_backoff()  # a 410 at once is a very short watch
            await eventually(lambda: len(sink.lists) == 2 and env.watchers() == 1)
            assert lister.listed_at == ["0", synced_at, None]
            # A later 410 relists at the last RV again: the consistent read is not sticky.
            env.server.inject(Fault(verb="watch", resource="configmaps", expire_watch=True))
            await env.clock.advance(5)
            resumed = refl.last_sync_resource_version
            env.cut_watches()
            await env.through_backoff()
            await eventually(lambda: len(sink.lists) == 3 and env.watchers() == 1)
            assert lister.listed_at[-1] == resumed
        assert sink.versions() == env.versions()
        assert restarts("expired") - expired == 2


@pytest.mark.etctl_hooks("fault injection: a too-large resourceVersion")
async def test_a_too_large_resource_version_on_relist_falls_back_to_a_consistent_read(
    tmp_path: Path,
) -> None:
    too_large = "Timeout: Too large resource version: 99, current: 12"
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        lister = Recording(env.client)
        refl = reflector(env, sink, lister)
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            synced_at = refl.last_sync_resource_version
            env.server.inject(Fault(verb="watch", resource="configmaps", expire_watch=True))
            env.server.inject(
                Fault(verb="list", resource="configmaps", status=504, message=too_large)
            )
            await env.clock.advance(5)
            env.cut_watches()
            await env.through_backoff()
            await eventually(lambda: len(sink.lists) == 2 and env.watchers() == 1)
        assert lister.listed_at == ["0", synced_at, None]


def test_too_large_resource_version_is_recognised_by_cause_or_message() -> None:
    by_cause = ServerError(
        "Timeout", status=504, details={"causes": [{"reason": "ResourceVersionTooLarge"}]}
    )
    by_message = ServerError("Timeout: Too large resource version: 9, current: 3", status=504)
    assert is_too_large_rv(by_cause)
    assert is_too_large_rv(by_message)
    assert not is_too_large_rv(Gone("too old resource version: 1 (5)"))
    assert not is_too_large_rv(ApiError("boom", status=500))
    assert not is_too_large_rv(ValueError("too large resource version"))


@pytest.mark.etctl_hooks("cut watch streams and the request log")
async def test_a_closed_watch_resumes_from_the_last_version_without_a_list(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink)
        closed = restarts("closed")
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            env.configmap("a")
            await eventually(lambda: f"{env.ns}/a" in sink.content)
            await env.clock.advance(5)
            env.cut_watches()
            env.configmap("b")  # while no watch is open: replayed from the server's history
            await eventually(lambda: f"{env.ns}/b" in sink.content)
        assert sink.lists == [0]
        assert env.requests("list") == 1
        assert restarts("closed") - closed == 1


async def test_the_last_event_gauge_follows_the_clock_across_bursts(tmp_path: Path) -> None:
    def last_event() -> float:
        return sample("etctl_informer_last_event_timestamp_seconds", resource=LABEL)

    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink)
        async with running(refl):
            await eventually(lambda: sink.lists == [0])
            for name in ("a", "b", "c"):  # one burst, one moment
                env.configmap(name)
            await eventually(lambda: len(sink.content) == 3)
            assert last_event() == env.clock.now().timestamp()
            await env.clock.advance(7)
            env.configmap("d")
            await eventually(lambda: f"{env.ns}/d" in sink.content)
            assert last_event() == env.clock.now().timestamp()


@pytest.mark.etctl_hooks("the server's watch timeout in virtual time")
async def test_each_watch_asks_for_a_timeout_drawn_in_five_to_ten_minutes(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        timeouts = restarts("timeout")
        refl = reflector(env, sink)
        durations = []
        async with running(refl):
            for ended in range(1, 4):
                # The server's end-of-watch timer is the first sleeper on the clock, once the
                # watch is served (the watchdog and the bookmark timer sleep far longer).
                await eventually(lambda: env.watchers() == 1 and env.sleeping_under(1000))
                durations.append(env.backoff_left())
                await env.clock.advance(durations[-1])
                await eventually(lambda: restarts("timeout") - timeouts == ended)  # noqa: B023
        assert all(300 <= d <= 600 for d in durations)
        assert len(set(durations)) == 3
        assert env.requests("list") == 1  # a watch that timed out resumes without a list


@pytest.mark.etctl_hooks("bookmarks in virtual time and an expired history")
async def test_bookmarks_advance_the_version_so_a_restart_does_not_relist(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True, bookmark_interval=30) as env:
        env.configmap("a")
        sink = Sink()
        refl = reflector(env, sink, idle_timeout=90)
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            listed_at = refl.last_sync_resource_version
            for i in range(5):  # other resources move the server's version on
                env.server.storage.create(
                    SECRETS, {"metadata": {"name": f"s{i}"}}, namespace=env.ns
                )
            current = str(env.server.store.rv)
            await env.clock.advance(30)
            await eventually(lambda: refl.last_sync_resource_version == current)
            assert int(current) > int(listed_at)
            # The history before `current` is gone: a watch from the list's version would 410.
            env.expire_history()
            env.cut_watches()
            env.configmap("b")
            await eventually(lambda: f"{env.ns}/b" in sink.content)
        assert sink.bookmarks[0] == current
        assert env.requests("list") == 1


async def test_initial_added_events_of_a_watch_from_scratch_do_not_move_the_version(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        for name in ("b", "a", "c"):
            env.configmap(name)
        sink = Sink()
        # A list without a resourceVersion leaves nothing to resume from: the watch starts at ""
        # and begins with synthetic ADDED events for every object, in no resourceVersion order.
        lister = Recording(env.client, blank_list_version=True)
        refl = reflector(env, sink, lister)
        async with running(refl):
            await eventually(lambda: len(sink.content) == 3)
            assert refl.last_sync_resource_version == ""
            env.configmap("d")  # a live ADDED: still not trusted
            await eventually(lambda: len(sink.content) == 4)
            assert refl.last_sync_resource_version == ""
            changed = env.update("a", v="1")
            await eventually(lambda: refl.last_sync_resource_version != "")
        assert refl.last_sync_resource_version == objects.resource_version(changed)
        assert sink.versions() == env.versions()


@pytest.mark.etctl_hooks("stopping and restarting the server")
async def test_connection_refused_rewatches_without_relisting(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink)
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            await env.clock.advance(5)
            port = env.server.port
            await env.server.stop()
            env.configmap("while-down")  # written straight into storage
            for _ in range(3):  # each refused start backs off; the list is never repeated
                await eventually(
                    lambda: isinstance(refl.last_error, RequestNotSent) and env.backing_off()
                )
                assert refl.last_list_error is None  # a rewatch was refused, never a list
                await env.clock.advance(env.backoff_left())
            env.server.port = port
            await env.server.start()
            # The attempt in flight may still have been refused: then one more backoff.
            while f"{env.ns}/while-down" not in sink.content:
                await eventually(
                    lambda: env.backing_off() or f"{env.ns}/while-down" in sink.content
                )
                if env.backing_off():
                    await env.clock.advance(env.backoff_left())
        # The restarted server's watch cache starts at its restart: the rewatch from before gets
        # 410, as from a real server, and that (not the refusals) is the one relist.
        assert sink.lists == [0, 1]
        assert env.requests("list") == 2


@pytest.mark.etctl_hooks("fault injection: 429 on watch")
async def test_429_on_watch_start_backs_off_in_virtual_time_and_resets_when_healthy(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink)
        throttle = env.server.inject(
            Fault(verb="watch", resource="configmaps", status=429, times=None)
        )

        async with running(refl):
            for attempt, base in enumerate((0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0), 1):
                await eventually(lambda: throttle.fired == attempt and env.backing_off())  # noqa: B023
                assert refl.backing_off
                delay = env.backoff_left()
                assert base <= delay < 2 * base
                if attempt == 8:
                    env.server.faults.remove(throttle)
                await env.clock.advance(delay)
            await eventually(lambda: env.watchers() == 1)
            assert not refl.backing_off
            await env.clock.advance(130)  # two healthy minutes
            again = env.server.inject(Fault(verb="watch", resource="configmaps", status=429))
            env.cut_watches()
            await eventually(lambda: again.fired == 1 and env.backing_off())
            assert 0.8 <= env.backoff_left() < 1.6
        assert env.requests("list") == 1


@pytest.mark.etctl_hooks("fault injection: dropped watches")
async def test_very_short_watches_back_off_instead_of_looping(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink)
        env.server.inject(Fault(verb="watch", resource="configmaps", drop_watch=True, times=None))
        async with running(refl):
            # A reflector in a hot loop would never sleep, and through_backoff would time out.
            while env.clock.monotonic() < 60:
                await env.through_backoff()
        watches = env.requests("watch")
        # Delays of at least 0.8, 1.6, 3.2, 6.4, 12.8 and 25.6 s fit at most 7 starts in a minute.
        assert 5 <= watches <= 8
        assert env.requests("list") == 1
        assert sink.lists == [0]


@pytest.mark.etctl_hooks("fault injection: a hanging watch")
async def test_the_watchdog_restarts_a_watch_whose_start_hangs(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink, idle_timeout=90)
        hang = env.server.inject(Fault(verb="watch", resource="configmaps", delay=NEVER))
        fired = restarts("watchdog")
        async with running(refl):
            await eventually(lambda: hang.fired == 1)
            env.configmap("a")  # the hung watch will never deliver it
            await env.clock.advance(89)
            assert f"{env.ns}/a" not in sink.content
            await env.clock.advance(2)
            await eventually(lambda: f"{env.ns}/a" in sink.content)
        assert restarts("watchdog") - fired == 1
        assert env.requests("list") == 1


@pytest.mark.etctl_hooks("pausing the server")
async def test_the_watchdog_keeps_restarting_while_the_server_holds_requests(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink, idle_timeout=90)
        fired = restarts("watchdog")
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            env.server.pause()
            env.cut_watches()
            env.configmap("a")
            await env.through_backoff()  # the cut watch was very short
            for held in range(2, 5):
                await eventually(lambda: env.requests("watch") == held)  # noqa: B023
                await env.clock.advance(90)
            env.server.resume()
            await eventually(lambda: f"{env.ns}/a" in sink.content)
        assert restarts("watchdog") - fired == 3
        assert env.requests("list") == 1


@pytest.mark.etctl_hooks("fault injection: a watch error")
async def test_a_watch_error_other_than_410_backs_off_and_relists(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        sink = Sink()
        refl = reflector(env, sink)
        async with running(refl):
            await eventually(lambda: env.watchers() == 1)
            failing = env.server.inject(Fault(verb="watch", resource="configmaps", status=500))
            env.cut_watches()
            await env.through_backoff()  # the cut watch was very short
            await eventually(lambda: failing.fired == 1)
            assert env.requests("list") == 1
            await env.through_backoff()  # the failed start backs off, then relists
            await eventually(lambda: env.requests("list") == 2 and env.watchers() == 1)
        assert isinstance(refl.last_error, ServerError)
        assert sink.lists == [0, 0]
