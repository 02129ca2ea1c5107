"""Status writes guarded by the writer's own fields: two writers of a status, no false conflict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common._fieldguard import guarded_ops, merged, overlaid, stale_fields
from etctl.common._ledger import WriteLedger
from etctl.errors import Conflict, Invalid, NotFound
from etctl.runtime import KubeObject, objects
from etctl.testing import Fault
from tests._cluster import cluster
from tests.common._harness import simplejob
from tests.common.simplejob import SIMPLEJOBS, SimpleJobPlugin
from tests.common.test_ledger import FrozenCache

MINE = ("restartCount", "conditions")
THEIRS = ("targetWorkers",)


def job(status: dict[str, Any] | None = None, rv: str = "5") -> KubeObject:
    obj: KubeObject = {"metadata": {"name": "j", "uid": "u1", "resourceVersion": rv}}
    if status is not None:
        obj["status"] = status
    return obj


def test_the_guard_tests_the_uid_and_the_owned_fields_as_read() -> None:
    read = job({"restartCount": 1, "targetWorkers": ["w-0"], "conditions": [{"type": "A"}]})
    ops = guarded_ops(read, {"restartCount": 2, "phase": "Running"}, MINE)
    assert ops == [
        {"op": "test", "path": "/metadata/uid", "value": "u1"},
        {"op": "test", "path": "/status/conditions", "value": [{"type": "A"}]},
        {"op": "test", "path": "/status/restartCount", "value": 1},
        {"op": "add", "path": "/status/restartCount", "value": 2},
        {"op": "add", "path": "/status/phase", "value": "Running"},
    ]


def test_a_nested_merge_is_written_whole_and_a_removal_tolerates_a_field_gone() -> None:
    read = job({"replicaStatuses": {"W": {"active": 1, "failed": 0}}, "phase": "x"})
    ops = guarded_ops(read, {"replicaStatuses": {"W": {"active": 2}}, "phase": None}, ())
    assert ops is not None
    assert ops[1:] == [
        {
            "op": "add",
            "path": "/status/replicaStatuses",
            "value": {"W": {"active": 2, "failed": 0}},
        },
        {"op": "add", "path": "/status/phase", "value": None},
        {"op": "remove", "path": "/status/phase"},
    ]
    assert merged({"a": 1, "b": {"c": 2}}, {"a": None, "b": {"d": 3}}) == {"b": {"c": 2, "d": 3}}


def test_a_job_without_status_is_merged_instead() -> None:
    assert guarded_ops(job(), {"restartCount": 1}, MINE) is None
    assert guarded_ops(job({}), {"restartCount": 1}, MINE) is None


def test_stale_fields_are_the_owned_ones_that_changed() -> None:
    read = job({"restartCount": 1, "targetWorkers": ["a"]})
    fresh = job({"restartCount": 2, "targetWorkers": ["b"]})
    assert stale_fields(read, fresh, MINE) == ["restartCount"]
    assert stale_fields(read, fresh, THEIRS) == ["targetWorkers"]


def test_an_older_version_shows_the_writers_last_write_of_its_fields() -> None:
    written = job({"targetWorkers": ["b"], "restartCount": 0}, rv="9")
    older = job({"targetWorkers": ["a"], "currentWorkers": ["a"], "restartCount": 3}, rv="7")
    shown = overlaid(older, written, (*THEIRS, "currentWorkers"))
    assert shown["status"] == {"targetWorkers": ["b"], "restartCount": 3}
    assert older["status"]["targetWorkers"] == ["a"]  # a copy: the cache's object is untouched
    newer = job({"targetWorkers": ["c"]}, rv="10")  # another writer's later change is the truth
    assert overlaid(newer, written, THEIRS) is newer
    successor = {**older, "metadata": {**older["metadata"], "uid": "u2"}}
    assert overlaid(successor, written, THEIRS) is successor
    opaque = job({"targetWorkers": ["a"]}, rv="x7")  # versions that are not integers: never
    assert overlaid(opaque, written, THEIRS) is opaque


STAMP = "2026-01-01T00:00:00Z"


async def created(env: Any, ledger: WriteLedger, cache: FrozenCache) -> KubeObject:
    obj = env.storage.create(SIMPLEJOBS, simplejob("j"), namespace=env.ns)
    cache.held["j"] = obj
    return dict(obj)


async def test_two_writers_of_different_fields_both_land(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), raw=True) as env:
        cache = FrozenCache()
        ledger = WriteLedger(env.client, cache, clock=env.clock)
        read = await created(env, ledger, cache)
        # Both read the job without status: both merge, in either order.
        first = await ledger.patch_own_status(SIMPLEJOBS, read, {"restartCount": 1}, owned=MINE)
        other = await ledger.patch_own_status(
            SIMPLEJOBS, read, {"lastReconcileTime": STAMP}, owned=("lastReconcileTime",)
        )
        assert other["status"]["restartCount"] == 1
        # Each writes again from the version the other's write moved past: no conflict.
        mine = await ledger.patch_own_status(SIMPLEJOBS, first, {"restartCount": 2}, owned=MINE)
        assert mine["status"]["restartCount"] == 2
        theirs = await ledger.patch_own_status(
            SIMPLEJOBS, other, {"lastReconcileTime": None}, owned=("lastReconcileTime",)
        )
        assert theirs["status"] == {"restartCount": 2}
        assert not env.server.requests.find(verb="patch", code=409)


async def test_a_change_of_an_owned_field_since_the_read_is_a_conflict(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), raw=True) as env:
        cache = FrozenCache()
        ledger = WriteLedger(env.client, cache, clock=env.clock)
        read = await ledger.patch_own_status(
            SIMPLEJOBS, await created(env, ledger, cache), {"restartCount": 1}, owned=MINE
        )
        await ledger.patch_own_status(SIMPLEJOBS, read, {"restartCount": 5}, owned=MINE)
        with pytest.raises(Conflict, match="restartCount changed"):
            await ledger.patch_own_status(SIMPLEJOBS, read, {"restartCount": 2}, owned=MINE)
        stored = env.storage.get(SIMPLEJOBS, "j", namespace=env.ns)
        assert stored["status"]["restartCount"] == 5
        # An invalid write with a current guard is refused as what it is.
        fresh = dict(stored)
        with pytest.raises(Invalid):
            await ledger.patch_own_status(SIMPLEJOBS, fresh, {"restartCount": "x"}, owned=MINE)
        # A successor of the same name is not written.
        env.storage.delete(SIMPLEJOBS, "j", namespace=env.ns)
        env.storage.create(SIMPLEJOBS, simplejob("j"), namespace=env.ns)
        with pytest.raises(NotFound):
            await ledger.patch_own_status(SIMPLEJOBS, fresh, {"restartCount": 6}, owned=MINE)


async def test_reads_show_every_field_written_not_only_the_guarded_ones(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), raw=True) as env:
        cache = FrozenCache()
        ledger = WriteLedger(env.client, cache, clock=env.clock)
        stale = await created(env, ledger, cache)  # the cache holds it as created, and keeps it
        written = await ledger.patch_own_status(
            SIMPLEJOBS, stale, {"restartCount": 1, "lastReconcileTime": STAMP}, owned=MINE
        )
        read = await ledger.read(SIMPLEJOBS, env.ns, "j")
        assert read is not None
        # The unguarded field too: read as it was, it would be written again for nothing.
        assert read["status"] == {"restartCount": 1, "lastReconcileTime": STAMP}
        removed = await ledger.patch_own_status(
            SIMPLEJOBS, written, {"lastReconcileTime": None}, owned=MINE
        )
        assert "lastReconcileTime" not in removed["status"]
        read = await ledger.read(SIMPLEJOBS, env.ns, "j")
        assert read is not None
        assert read["status"] == {"restartCount": 1}


@pytest.mark.etctl_hooks("fault injection: a guarded status write's answer lost")
async def test_a_retry_that_meets_its_own_lost_write_is_a_success(tmp_path: Path) -> None:
    async with cluster(tmp_path, SimpleJobPlugin()) as env:
        cache = FrozenCache()
        ledger = WriteLedger(env.client, cache, clock=env.clock)
        read = await ledger.patch_own_status(
            SIMPLEJOBS, await created(env, ledger, cache), {"restartCount": 1}, owned=MINE
        )
        lost = env.server.inject(
            Fault(verb="patch", resource="simplejobs", subresource="status", drop_answer=True)
        )
        written = await ledger.patch_own_status(SIMPLEJOBS, read, {"restartCount": 2}, owned=MINE)
        assert lost.fired == 1
        assert written["status"]["restartCount"] == 2
        assert objects.uid(written) == objects.uid(read)


REPLICAS = ("spec", "replicaSpecs", "Worker", "replicas")


async def test_a_field_write_meets_status_writes_without_conflict_and_a_change_of_it_with_one(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, SimpleJobPlugin(), raw=True) as env:
        cache = FrozenCache()
        ledger = WriteLedger(env.client, cache, clock=env.clock)
        read = await created(env, ledger, cache)
        # Another writer's status write moves the version on: no conflict for the count.
        await ledger.patch_own_status(SIMPLEJOBS, read, {"restartCount": 1}, owned=MINE)
        written = await ledger.patch_field(SIMPLEJOBS, read, REPLICAS, 3)
        assert written["spec"]["replicaSpecs"]["Worker"]["replicas"] == 3
        # A user changes the count after it was read: that is one.
        await env.client.patch(
            SIMPLEJOBS,
            "j",
            {"spec": {"replicaSpecs": {"Worker": {"replicas": 5}}}},
            namespace=env.ns,
        )
        with pytest.raises(Conflict, match="replicas changed"):
            await ledger.patch_field(SIMPLEJOBS, written, REPLICAS, 4)
        assert not env.server.requests.find(verb="patch", code=409)
