"""The controller builder, wired to a manager and the cluster under test.

Absence of a reconcile is asserted through order: one informer delivers events in order and one
worker takes keys first in, first out, so a key that a wrong mapping had enqueued earlier would be
reconciled before the key a later event enqueues.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from etctl.errors import ConfigError
from etctl.runtime import (
    CONFIGMAPS,
    SECRETS,
    CacheOptions,
    Client,
    CreateEvent,
    EnqueueRequestsFromMapFunc,
    FakeClock,
    Manager,
    ManagerOptions,
    ObjectView,
    Request,
    Result,
    objects,
    predicate_func,
)
from etctl.testing import ClusterTarget, cluster_target, eventually
from tests._cluster import PRESET_CONFIGMAP
from tests.runtime._fakes import owner_ref, sample, unique_name
from tests.runtime._realtime import client_of, run_manager


@pytest_asyncio.fixture
async def target(tmp_path: Path) -> AsyncIterator[ClusterTarget]:
    # No garbage collector on the embedded server: most owners are made up. (A real cluster's
    # collects the dependents of those: their deletes enqueue nothing either.)
    async with cluster_target(tmp_path, controllers=False) as found:
        yield found


@pytest.fixture
def ns(target: ClusterTarget) -> str:
    return target.namespace


@pytest_asyncio.fixture
async def client(target: ClusterTarget) -> AsyncIterator[Client]:
    async with client_of(target) as api:
        yield api


def new_manager(client: Client, ns: str, clock: FakeClock | None = None) -> Manager:
    """A manager whose cache covers the test's namespace."""
    options = ManagerOptions(
        metrics_bind_address="0",
        health_probe_bind_address="0",
        cache=CacheOptions(namespaces=[ns]),
    )
    return Manager(client, options=options, clock=clock or FakeClock())


class Recorder:
    """A reconciler that records the names it is called for."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def reconcile(self, request: Request) -> Result:
        if request.name != PRESET_CONFIGMAP:  # a real cluster's, in every namespace
            self.names.append(request.name)
        return Result()


def configmap(name: str, ns: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
    }


def secret(name: str, ns: str, *owners: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "ownerReferences": list(owners),
        },
    }


ref = partial(owner_ref, api_version="v1")  # an owner reference to a core-group kind


async def test_owns_wakes_the_controller_owner_of_the_for_kind(client: Client, ns: str) -> None:
    manager = new_manager(client, ns)
    reconciler = Recorder()
    manager.controller(unique_name("owns"), reconciler).for_(CONFIGMAPS).owns(SECRETS).build()
    async with run_manager(manager):
        await owned_events(client, ns, reconciler)


async def owned_events(client: Client, ns: str, reconciler: Recorder) -> None:
    job = await client.create(CONFIGMAPS, configmap("job", ns))
    await eventually(lambda: reconciler.names == ["job"])

    owner = {**ref("ConfigMap", "job", controller=True), "uid": objects.uid(job)}  # it is real
    await client.create(SECRETS, secret("child", ns, owner))
    await eventually(lambda: reconciler.names == ["job", "job"])

    # None of these may enqueue anything: an owner that is not the controller, a controller of
    # another kind, of another group, and no owner at all.
    await client.create(SECRETS, secret("shared", ns, ref("ConfigMap", "other", controller=False)))
    await client.create(SECRETS, secret("svc", ns, ref("Service", "other-svc", controller=True)))
    await client.create(
        SECRETS,
        secret(
            "crd", ns, ref("ConfigMap", "other-crd", controller=True, api_version="example.com/v1")
        ),
    )
    await client.create(SECRETS, secret("orphan", ns))
    await client.patch(SECRETS, "child", {"data": {"k": "dg=="}}, namespace=ns)
    await eventually(lambda: reconciler.names.count("job") == 3)
    assert reconciler.names == ["job", "job", "job"]


async def test_predicates_filters_and_watches(client: Client, ns: str) -> None:
    manager = new_manager(client, ns)
    reconciler = Recorder()

    def not_ignored(event: CreateEvent) -> bool:
        return objects.name(event.obj) != "ignored"

    def job_label(obj: ObjectView) -> list[Request]:
        job = objects.labels(obj).get("job")
        return [Request(objects.namespace(obj), job)] if job else []

    (
        manager.controller(unique_name("filters"), reconciler)
        .for_(CONFIGMAPS, predicate_func(create=not_ignored))
        .watches(SECRETS, EnqueueRequestsFromMapFunc(job_label))
        .with_event_filter(predicate_func(create=lambda e: "skip" not in objects.labels(e.obj)))
        .build()
    )
    async with run_manager(manager):
        await client.create(CONFIGMAPS, configmap("ignored", ns))  # the for_ predicate drops it
        await client.create(
            CONFIGMAPS, configmap("skipped", ns, skip="yes")
        )  # the event filter too
        await client.create(CONFIGMAPS, configmap("noticed", ns))
        await eventually(lambda: reconciler.names == ["noticed"])
        await client.create(SECRETS, secret("unlabelled", ns))
        await client.create(SECRETS, secret("filtered", ns, job="nope", skip="yes"))
        await client.create(SECRETS, secret("mapped", ns, job="from-secret"))
        await eventually(lambda: reconciler.names == ["noticed", "from-secret"])


async def test_options_reach_the_controller(client: Client, ns: str) -> None:
    clock = FakeClock()
    manager = new_manager(client, ns, clock)
    name = unique_name("options")
    started: list[str] = []
    release = asyncio.Event()

    async def reconcile(request: Request) -> Result:  # a plain function is a reconciler too
        started.append(request.name)
        await release.wait()
        return Result()

    controller = (
        manager.controller(name, reconcile)
        # Not the kube-root-ca.crt every namespace holds: the test's own ConfigMaps only.
        .for_(CONFIGMAPS, field_selector="metadata.name!=kube-root-ca.crt")
        .with_options(max_concurrent_reconciles=3, reconcile_timeout=5.0)
        .with_options(needs_leader_election=False, recover_panic=True)
        .build()
    )
    assert not controller.needs_leader_election
    assert sample("controller_runtime_max_concurrent_reconciles", controller=name) == 3
    for cm in ("a", "b", "c", "d"):
        await client.create(CONFIGMAPS, configmap(cm, ns))
    async with run_manager(manager):
        await eventually(lambda: len(started) == 3)  # three workers, all busy
        assert sorted(started) == ["a", "b", "c"]
        await clock.advance(5.0)
        await eventually(
            lambda: sample("controller_runtime_reconcile_timeouts_total", controller=name) == 3
        )
        await eventually(lambda: "d" in started)
        release.set()


async def test_watches_take_selectors_and_share_their_informers(client: Client, ns: str) -> None:
    manager = new_manager(client, ns)
    reconciler = Recorder()
    controller = (
        manager.controller(unique_name("selected"), reconciler)
        .for_(CONFIGMAPS, label_selector="app=web")
        .owns(SECRETS, label_selector="app = web")
        .build()
    )
    assert controller.sources == (
        manager.cache.informer(CONFIGMAPS, label_selector="app=web"),
        manager.cache.informer(SECRETS, label_selector="app=web"),
    )
    async with run_manager(manager):
        await client.create(CONFIGMAPS, configmap("other", ns, app="db"))
        job = await client.create(CONFIGMAPS, configmap("job", ns, app="web"))
        await eventually(lambda: reconciler.names == ["job"])
        owner = {**ref("ConfigMap", "job", controller=True), "uid": objects.uid(job)}
        await client.create(SECRETS, secret("unlabelled", ns, owner))  # never cached
        await client.create(SECRETS, secret("child", ns, owner, app="web"))
        await eventually(lambda: reconciler.names == ["job", "job"])
        assert manager.cache.get(SECRETS, "unlabelled", namespace=ns) is None
        assert manager.cache.get(CONFIGMAPS, "other", namespace=ns) is None


async def test_new_objects_of_the_for_kind_wait_behind_follow_ups(client: Client, ns: str) -> None:
    manager = new_manager(client, ns)
    first = asyncio.Event()
    release = asyncio.Event()
    order: list[str] = []

    async def reconcile(request: Request) -> Result:
        if request.name == PRESET_CONFIGMAP:  # a real cluster's, in every namespace
            return Result()
        order.append(request.name)
        first.set()
        await release.wait()
        return Result()

    manager.controller(unique_name("priority"), reconcile).for_(CONFIGMAPS).owns(SECRETS).build()
    async with run_manager(manager):
        known = await client.create(CONFIGMAPS, configmap("known", ns))
        await eventually(first.is_set)  # the one worker is busy with it
        await client.create(CONFIGMAPS, configmap("new-1", ns))
        await client.create(CONFIGMAPS, configmap("new-2", ns))
        owner = {**ref("ConfigMap", "known", controller=True), "uid": objects.uid(known)}
        await client.create(SECRETS, secret("child", ns, owner))
        await eventually(lambda: manager.controllers[0].queue.depth == 3)
        release.set()
        await eventually(lambda: len(order) == 4)
    # The follow-up of the object in progress went first; the new objects in their order.
    assert order == ["known", "known", "new-1", "new-2"]


def test_misuse_is_reported(client: Client, ns: str) -> None:
    manager = new_manager(client, ns)
    reconciler = Recorder()
    with pytest.raises(ConfigError, match="name"):
        manager.controller("", reconciler)
    builder = manager.controller("twice", reconciler).for_(CONFIGMAPS)
    with pytest.raises(ConfigError, match="once"):
        builder.for_(SECRETS)
    with pytest.raises(ConfigError, match="for_"):
        manager.controller("nothing", reconciler).build()
    with pytest.raises(ConfigError, match="for_"):
        manager.controller("orphan-owns", reconciler).owns(SECRETS).build()
    with pytest.raises(ConfigError, match="batch must be 0 or more seconds, got -1"):
        builder.watches(SECRETS, EnqueueRequestsFromMapFunc(lambda _: []), batch=-1)
    with pytest.raises(ConfigError, match="batch must be 0 or more seconds, got nan"):
        builder.owns(SECRETS, batch=float("nan"))
    builder.build()
    with pytest.raises(ConfigError, match="built already"):
        builder.build()
    with pytest.raises(ValueError, match="unique"):
        manager.controller("twice", reconciler).for_(CONFIGMAPS).build()
    assert "twice" in repr(manager)
