"""The cache end to end: shared informers, namespace scoping and reads, on the embedded server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from etctl.errors import CacheSyncError, ConfigError, NotFound
from etctl.runtime import (
    CONFIGMAPS,
    NAMESPACES,
    SECRETS,
    ByObject,
    Cache,
    CacheOptions,
    KubeObject,
    NotCachedError,
    ObjectView,
    SelectorError,
    objects,
)
from etctl.runtime._informer import Informer
from etctl.testing import Fault, eventually
from tests._cluster import NEVER, Cluster, cluster
from tests.runtime._realtime import running
from tests.runtime._recorder import Recorder


def new_cache(env: Cluster, **options: Any) -> Cache:
    options.setdefault("idle_timeout", NEVER)
    return Cache(env.client, clock=env.clock, options=CacheOptions(**options))


def owner_uid(env: Cluster, owner: str, namespace: str = "") -> str:
    """The uid of the Secret ``owner`` (created the first time): a real owner, which a garbage
    collector keeps the dependents of."""
    namespace = namespace or env.ns
    try:
        found = env.target.storage.get(SECRETS, owner, namespace=namespace)
    except NotFound:
        body = {"metadata": {"name": owner, "namespace": namespace}}
        found = env.target.storage.create(SECRETS, body, namespace=namespace)
    return objects.uid(found)


def owned(env: Cluster, name: str, owner: str, namespace: str = "") -> None:
    namespace = namespace or env.ns
    ref = {
        "apiVersion": "v1",
        "kind": "Secret",
        "name": owner,
        "uid": owner_uid(env, owner, namespace),
        "controller": True,
    }
    body = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"job": owner},
            "ownerReferences": [ref],
        }
    }
    env.target.storage.create(CONFIGMAPS, body, namespace=namespace)


async def test_informers_are_shared_per_resource_and_canonical_selectors(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        cache = new_cache(env)
        plain = cache.informer(CONFIGMAPS)
        assert cache.informer(CONFIGMAPS) is plain
        selected = cache.informer(CONFIGMAPS, label_selector="b=2,a=1")
        assert cache.informer(CONFIGMAPS, label_selector="a=1, b=2") is selected
        assert selected is not plain
        assert cache.informer(CONFIGMAPS, label_selector="") is plain
        with pytest.raises(SelectorError):
            cache.informer(CONFIGMAPS, label_selector="a in (")
        assert isinstance(plain, Informer)
        assert plain.resource == CONFIGMAPS


async def test_reads_never_start_an_informer(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        cache = new_cache(env)
        with pytest.raises(NotCachedError, match=r"secrets/v1 is not cached"):
            cache.get(SECRETS, "x", namespace=env.ns)
        with pytest.raises(NotCachedError):
            cache.list(SECRETS)
        with pytest.raises(NotCachedError):
            cache.controlled_by(SECRETS, "uid-1")
        assert issubclass(NotCachedError, ConfigError)
        cache.informer(CONFIGMAPS)
        with pytest.raises(ValueError, match="needs a namespace"):
            cache.get(CONFIGMAPS, "x")
        assert cache.get(CONFIGMAPS, "x", namespace=env.ns) is None  # cached, just not there


async def test_reads_follow_the_server_and_the_owner_index(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        other = env.namespace("other")
        owned(env, "w-0", "job-a")
        owned(env, "w-1", "job-a")
        owned(env, "w-0", "job-b", namespace=other)
        env.configmap("loose")
        cache = new_cache(env)
        source = cache.informer(CONFIGMAPS)
        async with running(cache):
            await cache.wait_for_sync(5)
            assert cache.has_synced()
            assert source.has_synced()
            assert env.keys(cache.list(CONFIGMAPS)) == [
                f"{env.ns}/loose",
                f"{env.ns}/w-0",
                f"{env.ns}/w-1",
                f"{other}/w-0",
            ]
            assert env.keys(cache.list(CONFIGMAPS, namespace=other)) == [f"{other}/w-0"]
            assert env.keys(cache.list(CONFIGMAPS, label_selector="job=job-a")) == [
                f"{env.ns}/w-0",
                f"{env.ns}/w-1",
            ]
            assert env.keys(cache.controlled_by(CONFIGMAPS, owner_uid(env, "job-a"))) == [
                f"{env.ns}/w-0",
                f"{env.ns}/w-1",
            ]
            env.delete("w-1")
            owned(env, "w-2", "job-a")
            await eventually(lambda: cache.get(CONFIGMAPS, "w-2", namespace=env.ns) is not None)
            assert env.keys(cache.controlled_by(CONFIGMAPS, owner_uid(env, "job-a"))) == [
                f"{env.ns}/w-0",
                f"{env.ns}/w-2",
            ]
            assert cache.get(CONFIGMAPS, "w-1", namespace=env.ns) is None
            got = cache.get(CONFIGMAPS, "loose", namespace=env.ns)
            assert got is not None
            assert objects.name(got) == "loose"


async def test_user_indexes_apply_to_informers_created_before_and_after(tmp_path: Path) -> None:
    def by_job(obj: ObjectView) -> list[str]:
        job = objects.labels(obj).get("job")
        return [job] if job else []

    async with cluster(tmp_path, raw=True) as env:
        owned(env, "w-0", "job-a")
        env.target.storage.create(
            SECRETS, {"metadata": {"name": "s", "labels": {"job": "job-a"}}}, namespace=env.ns
        )
        cache = new_cache(env)
        cache.informer(CONFIGMAPS)
        cache.add_indexers(CONFIGMAPS, {"job": by_job})
        cache.add_indexers(SECRETS, {"job": by_job})
        cache.informer(SECRETS)
        with pytest.raises(ValueError, match="already exist"):
            cache.add_indexers(SECRETS, {"job": by_job})
        with pytest.raises(ValueError, match="already exist"):
            cache.add_indexers(SECRETS, {"controller": by_job})
        async with running(cache):
            await cache.wait_for_sync(5)
            assert env.keys(cache.by_index(CONFIGMAPS, "job", "job-a")) == [f"{env.ns}/w-0"]
            assert env.keys(cache.by_index(SECRETS, "job", "job-a")) == [f"{env.ns}/s"]
            with pytest.raises(KeyError):
                cache.by_index(SECRETS, "nope", "x")


async def test_a_namespace_scoped_cache_holds_only_its_namespaces(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        a, b, c = (env.namespace(ns) for ns in ("a", "b", "c"))
        for ns in (a, b, c):
            env.configmap("cm", namespace=ns)
        cache = new_cache(env, namespaces=[a, b, a])
        assert cache.namespaces == (a, b)
        source = cache.informer(CONFIGMAPS)
        assert not isinstance(source, Informer)  # one informer per namespace behind it
        seen = Recorder()
        registration = source.add_handler(seen)
        namespaces = cache.informer(NAMESPACES)  # cluster-scoped: the list does not apply
        async with running(cache):
            await source.wait_for_sync(5)
            await namespaces.wait_for_sync(5)
            assert registration.has_synced()
            assert env.keys(cache.list(CONFIGMAPS)) == [f"{a}/cm", f"{b}/cm"]
            assert env.keys(cache.list(CONFIGMAPS, namespace=b)) == [f"{b}/cm"]
            assert cache.get(CONFIGMAPS, "cm", namespace=a) is not None
            with pytest.raises(NotCachedError, match=f"namespace '{c}' is not cached"):
                cache.get(CONFIGMAPS, "cm", namespace=c)
            with pytest.raises(NotCachedError):
                cache.list(CONFIGMAPS, namespace=c)
            assert {a, b, c, "default"} <= {objects.name(n) for n in cache.list(NAMESPACES)}
            env.configmap("new", namespace=b)
            env.configmap("new", namespace=c)
            await eventually(lambda: f"{b}/new" in seen.view)
            assert cache.get(CONFIGMAPS, "new", namespace=b) is not None
        assert env.keys(seen.view.values()) == [f"{a}/cm", f"{b}/cm", f"{b}/new"]
        if env.embedded:  # the server's request log: one list per namespace, none cluster-wide
            listed = env.server.requests.find(verb="list", resource="configmaps")
            assert sorted(r.namespace for r in listed) == sorted([a, b])


async def test_informers_requested_while_running_start_at_once(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        env.configmap("a")
        cache = new_cache(env)
        assert cache.has_synced()  # nothing requested, nothing to wait for
        async with running(cache):
            late = cache.informer(CONFIGMAPS)
            assert not cache.has_synced()
            await late.wait_for_sync(5)
            await cache.wait_for_sync(5)
            assert env.keys(cache.list(CONFIGMAPS)) == [f"{env.ns}/a"]
            with pytest.raises(RuntimeError, match="already running"):
                await cache.run()


async def test_selected_informers_are_merged_on_reads(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        owned(env, "w-0", "job-a")
        owned(env, "w-1", "job-b")
        env.configmap("loose")
        cache = new_cache(env)
        cache.informer(CONFIGMAPS, label_selector="job=job-a")
        cache.informer(CONFIGMAPS, label_selector="job=job-b")
        async with running(cache):
            await cache.wait_for_sync(5)
            assert env.keys(cache.list(CONFIGMAPS)) == [f"{env.ns}/w-0", f"{env.ns}/w-1"]
            assert cache.get(CONFIGMAPS, "loose", namespace=env.ns) is None
            cache.informer(CONFIGMAPS)  # an unfiltered one as well: keys are not repeated
            await cache.wait_for_sync(5)
            assert env.keys(cache.list(CONFIGMAPS)) == [
                f"{env.ns}/loose",
                f"{env.ns}/w-0",
                f"{env.ns}/w-1",
            ]
            assert env.keys(cache.controlled_by(CONFIGMAPS, owner_uid(env, "job-b"))) == [
                f"{env.ns}/w-1"
            ]


@pytest.mark.etctl_hooks("fault injection: a 403 on list")
async def test_wait_for_sync_names_the_informer_that_did_not_sync(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        env.server.inject(Fault(verb="list", resource="secrets", status=403, times=None))
        cache = new_cache(env)
        cache.informer(CONFIGMAPS)
        cache.informer(SECRETS)
        async with running(cache):
            await eventually(lambda: cache.informer(CONFIGMAPS).has_synced())
            await eventually(env.backing_off)  # the secrets list was refused
            waiting = asyncio.create_task(cache.wait_for_sync(30))
            await env.clock.advance(30)
            with pytest.raises(CacheSyncError, match=r"secrets/v1: cache did not sync within"):
                await waiting
            assert not cache.has_synced()
        assert "403" in str(waiting.exception())


def test_an_empty_namespace_list_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least one namespace"):
        CacheOptions(namespaces=[])


def labelled(env: Cluster, name: str, namespace: str, **labels: str) -> None:
    body = {"metadata": {"name": name, "namespace": namespace, "labels": labels}}
    env.target.storage.create(CONFIGMAPS, body, namespace=namespace)


def mark(obj: KubeObject) -> KubeObject:
    obj["metadata"].setdefault("annotations", {})["seen-by"] = "scope"
    return obj


async def test_by_object_scopes_every_informer_of_its_resource(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        a, b = (env.namespace(ns) for ns in ("a", "b"))
        labelled(env, "ours", a, team="ours", job="j")
        labelled(env, "ours-other-job", a, team="ours", job="k")
        labelled(env, "theirs", a, team="theirs", job="j")
        labelled(env, "ours", b, team="ours", job="j")
        env.target.storage.create(SECRETS, {"metadata": {"name": "s", "namespace": b}}, namespace=b)
        scope = ByObject(label_selector="team = ours", namespaces=[a], transform=mark)
        cache = new_cache(env, by_object={CONFIGMAPS: scope})
        assert scope.label_selector == "team=ours"  # canonical
        assert cache.namespaces_of(CONFIGMAPS) == (a,)
        assert cache.namespaces_of(SECRETS) is None
        whole = cache.informer(CONFIGMAPS)
        one_job = cache.informer(CONFIGMAPS, label_selector="job=j")
        assert cache.informer(CONFIGMAPS, label_selector="team=ours,job=j") is one_job
        secrets = cache.informer(SECRETS)  # no scope: everything, everywhere
        async with running(cache):
            await cache.wait_for_sync(5)
            assert env.keys(cache.list(CONFIGMAPS)) == [f"{a}/ours", f"{a}/ours-other-job"]
            assert cache.get(CONFIGMAPS, "theirs", namespace=a) is None  # never cached
            with pytest.raises(NotCachedError, match=f"namespace '{b}' is not cached"):
                cache.get(CONFIGMAPS, "ours", namespace=b)
            found = cache.get(CONFIGMAPS, "ours", namespace=a)
            assert found is not None
            assert objects.annotations(found) == {"seen-by": "scope"}
            assert f"{b}/s" in env.keys(cache.list(SECRETS))
            labelled(env, "late", a, team="ours", job="j")
            labelled(env, "late-theirs", a, team="theirs", job="j")
            await eventually(lambda: cache.get(CONFIGMAPS, "late", namespace=a) is not None)
            assert cache.get(CONFIGMAPS, "late-theirs", namespace=a) is None
        assert isinstance(whole, Informer)
        assert isinstance(one_job, Informer)
        assert isinstance(secrets, Informer)
        assert (whole.namespace, whole.label_selector) == (a, "team=ours")
        assert (one_job.namespace, one_job.label_selector) == (a, "job=j,team=ours")
        assert (secrets.namespace, secrets.label_selector) == (None, None)
        assert cache.scopes(CONFIGMAPS) == [(a, "team=ours", None), (a, "job=j,team=ours", None)]


def test_by_object_is_checked_when_built() -> None:
    with pytest.raises(ConfigError, match="ByObject selector"):
        ByObject(label_selector="team in (")
    with pytest.raises(ConfigError, match="at least one namespace"):
        ByObject(namespaces=[])
    with pytest.raises(ConfigError, match="cluster-scoped"):
        CacheOptions(by_object={NAMESPACES: ByObject(namespaces=["a"])})
    options = CacheOptions(by_object={CONFIGMAPS: ByObject(field_selector="metadata.name=x")})
    with pytest.raises(TypeError):
        options.by_object[SECRETS] = ByObject()  # type: ignore[index]
