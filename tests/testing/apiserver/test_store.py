"""The versioned store: resourceVersions, snapshots, history, compaction, sinks and listeners."""

from __future__ import annotations

import pytest

from etctl.errors import BadRequest
from etctl.runtime import FakeClock
from etctl.testing._apiserver.history import History
from etctl.testing._apiserver.store import Event, Store, dumps, object_key, parse_resource_version

CM = ("", "configmaps")


def _obj(name: str, value: str = "v", namespace: str = "default") -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"k": value}}


def test_each_commit_takes_the_next_global_resource_version() -> None:
    store = Store(initial_rv=10)
    first = store.commit(CM, "default/a", _obj("a"))
    second = store.commit(("", "pods"), "default/p", _obj("p"))
    assert first is not None
    assert second is not None
    assert (first.type, first.rv, first.object["metadata"]["resourceVersion"]) == (
        "ADDED",
        11,
        "11",
    )
    assert second.rv == 12
    assert store.rv == 12
    modified = store.commit(CM, "default/a", _obj("a", "2"))
    assert modified is not None
    assert modified.type == "MODIFIED"
    assert modified.previous is first.object


def test_delete_stamps_the_last_state_with_the_delete_version() -> None:
    store = Store()
    store.commit(CM, "default/a", _obj("a"))
    deleted = store.commit(CM, "default/a", None)
    assert deleted is not None
    assert deleted.type == "DELETED"
    assert deleted.object["metadata"]["resourceVersion"] == str(store.rv)
    assert deleted.previous is not None
    assert deleted.previous["metadata"]["resourceVersion"] == str(store.rv - 1)
    assert store.commit(CM, "default/a", None) is None


def test_items_are_in_key_order_and_namespace_prefixes_do_not_leak() -> None:
    store = Store()
    for key in ("default/b", "default-x/a", "default/a", "other/z"):
        ns, name = key.split("/")
        store.commit(CM, key, _obj(name, namespace=ns))
    assert [k for k, _ in store.items(CM)] == ["default-x/a", "default/a", "default/b", "other/z"]
    assert [k for k, _ in store.items(CM, "default")] == ["default/a", "default/b"]
    assert store.count(CM) == 4


def test_snapshot_rebuilds_an_earlier_state() -> None:
    store = Store()
    store.commit(CM, "default/a", _obj("a"))
    store.commit(CM, "default/b", _obj("b"))
    rv = store.rv
    store.commit(CM, "default/a", _obj("a", "changed"))
    store.commit(CM, "default/b", None)
    store.commit(CM, "default/c", _obj("c"))
    snapshot = store.snapshot(CM, rv)
    assert snapshot is not None
    assert sorted(snapshot) == ["default/a", "default/b"]
    assert snapshot["default/a"]["data"] == {"k": "v"}


def test_the_watch_cache_and_etcd_forget_separately() -> None:
    store = Store(history=History(watch_cache_min=2, watch_cache_max=2))
    for name in "abc":
        store.commit(CM, f"default/{name}", _obj(name))
    # The watch cache holds b (3) and c (4): a watch may start at 2 (oldest - 1), not before.
    assert store.watch_floor(CM) == 2
    assert store.history_after(CM, 1) is None
    replay = store.history_after(CM, 2)
    assert replay is not None
    assert [e.key for e in replay] == ["default/b", "default/c"]
    # etcd has not compacted: a snapshot from before the watch cache is still readable.
    assert store.compacted(CM) == 0
    snapshot = store.snapshot(CM, 2)
    assert snapshot is not None
    assert sorted(snapshot) == ["default/a"]
    store.compact()
    assert store.compacted(CM) == store.watch_floor(CM) == store.rv
    assert store.snapshot(CM, store.rv - 1) is None
    assert store.history_after(CM, store.rv) == []


def test_compacting_one_resource_leaves_the_others_alone() -> None:
    store = Store()
    store.commit(CM, "default/a", _obj("a"))
    store.commit(("", "pods"), "default/p", _obj("p"))
    store.compact(CM)
    assert store.history_after(CM, 1) is None
    assert store.snapshot(CM, 2) is None
    replay = store.history_after(("", "pods"), 1)
    assert replay is not None
    assert [e.key for e in replay] == ["default/p"]
    assert store.snapshot(("", "pods"), 1) == {}


async def test_etcd_compaction_runs_on_the_clock_and_keeps_the_previous_tick(
    clock: FakeClock,
) -> None:
    store = Store(history=History(compaction_interval=300), clock=clock)
    store.commit(CM, "default/a", _obj("a"))
    first = store.rv
    await clock.advance(300)  # the first tick only records the revision
    store.commit(CM, "default/a", _obj("a", "2"))
    assert store.compacted(CM) == 0
    await clock.advance(300)  # the second compacts to what the first saw
    assert store.compacted(CM) == first
    assert store.snapshot(CM, first - 1) is None
    snapshot = store.snapshot(CM, first)
    assert snapshot is not None
    assert snapshot["default/a"]["data"] == {"k": "v"}
    await clock.advance(900)  # several ticks without a commit: down to the current revision
    assert store.compacted(CM) == store.rv
    assert store.snapshot(CM, first) is None


class _Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.closed = ""

    def deliver(self, event: Event) -> None:
        self.events.append(event)

    def close(self, reason: str = "stopped") -> None:
        self.closed = reason

    @property
    def pending(self) -> int:
        return 0 if self.closed else len(self.events)


def test_sinks_receive_events_during_the_commit_and_can_be_closed() -> None:
    store = Store()
    sink = _Sink()
    store.add_sink(CM, sink)
    store.commit(CM, "default/a", _obj("a"))
    store.commit(("", "pods"), "default/p", _obj("p"))
    assert [e.key for e in sink.events] == ["default/a"]
    assert store.unsent() == 1
    store.close_sinks(CM, "gone")
    assert sink.closed == "gone"
    assert store.sinks(CM) == 0
    assert store.unsent() == 0


def test_a_failing_listener_does_not_fail_the_write() -> None:
    store = Store()
    seen: list[str] = []

    def broken(event: Event) -> None:
        raise RuntimeError("boom")

    store.subscribe(broken)
    store.subscribe(lambda e: seen.append(e.key))
    assert store.commit(CM, "default/a", _obj("a")) is not None
    assert seen == ["default/a"]


def test_event_lines_are_encoded_once_per_api_version() -> None:
    store = Store()
    event = store.commit(
        ("example.com", "widgets"),
        "default/w",
        {"apiVersion": "example.com/v1", "metadata": {"name": "w"}},
    )
    assert event is not None
    line = event.line("example.com/v1")
    assert line is event.line("example.com/v1")
    assert b'"apiVersion":"example.com/v1beta1"' in event.line("example.com/v1beta1")
    assert line.endswith(b"}\n")
    assert event.object["apiVersion"] == "example.com/v1"


def test_helpers() -> None:
    assert object_key("ns", "a") == "ns/a"
    assert object_key("", "a") == "a"
    assert dumps({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()
    assert parse_resource_version("42") == 42
    with pytest.raises(BadRequest, match='invalid resource version "x"'):
        parse_resource_version("x")
    with pytest.raises(BadRequest):
        parse_resource_version("-1")
