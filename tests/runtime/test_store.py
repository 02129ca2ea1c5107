from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from etctl.runtime import ObjectView, Tombstone, objects
from etctl.runtime._store import BY_CONTROLLER, BY_NAMESPACE, IndexFunc, Store


def obj(
    name: str,
    ns: str = "ns",
    *,
    uid: str | None = None,
    owner: str | None = None,
    labels: dict[str, str] | None = None,
    rv: str = "1",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{ns}-{name}", "resourceVersion": rv}
    if ns:
        meta["namespace"] = ns
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "Job", "name": "j"}]
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def by_label_values(o: ObjectView) -> Iterable[str]:
    return objects.labels(o).values()


def test_reads_hand_out_the_stored_objects_themselves() -> None:
    store = Store()
    pod = obj("a")
    assert store.add(pod) is None
    assert store.get("ns/a") is pod
    assert store.list()[0] is pod
    assert store.by_index(BY_NAMESPACE, "ns")[0] is pod
    assert "ns/a" in store
    assert len(store) == 1


def test_builtin_indexes() -> None:
    store = Store()
    store.add(obj("a", owner="job-1"))
    store.add(obj("b", owner="job-1"))
    store.add(obj("c", "other", owner="job-2"))
    store.add(obj("node-1", ""))  # cluster-scoped: not in the namespace index
    assert sorted(store.index_keys(BY_CONTROLLER, "job-1")) == ["ns/a", "ns/b"]
    assert sorted(store.index_values(BY_NAMESPACE)) == ["ns", "other"]
    assert store.get("node-1") is not None
    # Moving an object to another owner moves its index entry.
    previous = store.update(obj("b", owner="job-2", rv="2"))
    assert previous is not None
    assert objects.resource_version(previous) == "1"
    assert store.index_keys(BY_CONTROLLER, "job-1") == ["ns/a"]
    assert sorted(store.index_keys(BY_CONTROLLER, "job-2")) == ["ns/b", "other/c"]
    removed = store.delete("ns/a")
    assert removed is not None
    assert objects.name(removed) == "a"
    assert store.index_keys(BY_CONTROLLER, "job-1") == []
    assert "job-1" not in store.index_values(BY_CONTROLLER)
    assert store.delete(obj("missing")) is None


def test_user_indexers_before_and_after_objects_exist() -> None:
    store = Store(indexers={"app": by_label_values})
    store.add(obj("a", labels={"app": "x"}))
    store.add(obj("b", labels={"app": "y", "tier": "x"}))
    store.add_indexers({"first-letter": lambda o: [objects.name(o)[0]]})
    assert sorted(store.index_keys("app", "x")) == ["ns/a", "ns/b"]
    assert store.index_keys("first-letter", "b") == ["ns/b"]
    store.add(obj("bb"))
    assert sorted(store.index_keys("first-letter", "b")) == ["ns/b", "ns/bb"]
    with pytest.raises(ValueError, match="already exist"):
        store.add_indexers({"app": by_label_values})
    with pytest.raises(KeyError, match="no index named"):
        store.by_index("nope", "x")
    assert set(store.indexers) == {BY_NAMESPACE, BY_CONTROLLER, "app", "first-letter"}


def test_replace_reports_adds_updates_and_tombstones() -> None:
    store = Store()
    kept, gone, recreated = obj("kept"), obj("gone", owner="o"), obj("same", uid="old-uid")
    for item in (kept, gone, recreated):
        store.add(item)
    kept2 = obj("kept", rv="5")
    fresh = obj("fresh")
    recreated2 = obj("same", uid="new-uid")
    diff = store.replace([kept2, fresh, recreated2], "9")
    assert diff.updated == [(kept, kept2)]
    assert [objects.name(o) for o in diff.added] == ["fresh", "same"]
    assert sorted(diff.deleted, key=lambda t: t.key) == [
        Tombstone("ns/gone", gone),
        Tombstone("ns/same", recreated),
    ]
    assert store.resource_version == "9"
    assert store.index_keys(BY_CONTROLLER, "o") == []
    assert store.get("ns/same") is recreated2
    store.resource_version = "10"
    assert store.resource_version == "10"


NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
NAMESPACES = st.sampled_from(["", "ns1", "ns2"])
OWNERS = st.none() | st.sampled_from(["o1", "o2"])
LABELS = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["x", "y", "z"]))
UIDS = st.sampled_from(["u1", "u2"])
OBJECTS = st.builds(
    lambda name, ns, owner, labels, uid: obj(name, ns, owner=owner, labels=labels, uid=uid),
    NAMES,
    NAMESPACES,
    OWNERS,
    LABELS,
    UIDS,
)


class StoreMachine(RuleBasedStateMachine):
    """The store's indexes always equal indexes recomputed naively from its content."""

    def __init__(self) -> None:
        super().__init__()
        self.store = Store(indexers={"labels": by_label_values})
        self.model: dict[str, ObjectView] = {}
        self.extra: dict[str, IndexFunc] = {}

    @rule(item=OBJECTS)
    def add(self, item: dict[str, Any]) -> None:
        previous = self.store.add(item)
        assert previous is self.model.get(objects.key_of(item))
        self.model[objects.key_of(item)] = item

    @rule(item=OBJECTS)
    def update(self, item: dict[str, Any]) -> None:
        self.store.update(item)
        self.model[objects.key_of(item)] = item

    @rule(item=OBJECTS)
    def put(self, item: dict[str, Any]) -> None:
        key = objects.key_of(item)
        previous = self.store.put(key, item)
        assert previous is self.model.get(key)
        self.model[key] = item

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def put_the_stored_instance_again(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.model)))
        assert self.store.put(key, self.model[key]) is self.model[key]

    @rule(item=OBJECTS)
    def delete(self, item: dict[str, Any]) -> None:
        key = objects.key_of(item)
        removed = self.store.delete(key)
        assert removed is self.model.pop(key, None)

    @rule(items=st.lists(OBJECTS, max_size=8), rv=st.integers(0, 99))
    def replace(self, items: list[dict[str, Any]], rv: int) -> None:
        new: dict[str, ObjectView] = {objects.key_of(i): i for i in items}
        diff = self.store.replace(items, str(rv))
        vanished = {t.key for t in diff.deleted}
        assert {k for k in self.model if k not in new} <= vanished
        for tomb in diff.deleted:
            assert self.model[tomb.key] is tomb.obj
        assert len(diff.added) + len(diff.updated) == len(new)
        self.model = new

    @precondition(lambda self: "owner-or-name" not in self.extra)
    @rule()
    def add_indexer(self) -> None:
        def fn(o: ObjectView) -> list[str]:
            return [objects.controller_ref(o) or objects.name(o), objects.name(o)]

        self.extra["owner-or-name"] = fn
        self.store.add_indexers({"owner-or-name": fn})

    @invariant()
    def indexes_match_a_naive_model(self) -> None:
        assert sorted(self.store.list_keys()) == sorted(self.model)
        indexers = {**self.store.indexers}
        for name, fn in indexers.items():
            expected: dict[str, set[str]] = {}
            for key, item in self.model.items():
                for value in fn(item):
                    expected.setdefault(value, set()).add(key)
            assert sorted(self.store.index_values(name)) == sorted(expected)
            for value, keys in expected.items():
                assert sorted(self.store.index_keys(name, value)) == sorted(keys)
                assert all(
                    self.model[objects.key_of(o)] is o for o in self.store.by_index(name, value)
                )


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
