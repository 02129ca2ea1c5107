"""The client end to end against the cluster under test: every verb as Kubernetes answers it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from etctl.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    UnsupportedMediaType,
)
from etctl.runtime import (
    CONFIGMAPS,
    EVENTS,
    PODS,
    Client,
    ClientOptions,
    FakeClock,
    PatchType,
    Resource,
    objects,
)
from etctl.runtime._recorder import ClientEventSink, EventRecorder
from etctl.testing import (
    ApiServer,
    ClusterTarget,
    Fault,
    History,
    Kubelet,
    cluster_target,
    eventually,
)
from tests.runtime.scripted import InstantClock

WIDGETS = Resource("example.com", "v1", "widgets", "Widget")

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0},
                                    "owner": {"type": "string"},
                                    "size": {"type": "string"},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


def configmap(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "t"}},
        "data": data,
    }


def widget(name: str, ns: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": replicas},
    }


@pytest_asyncio.fixture
async def target(tmp_path: Path) -> AsyncIterator[ClusterTarget]:
    """The cluster under test (on the embedded server: 50 events of history, fast bookmarks)."""
    options: dict[str, Any] = {
        "history": History(watch_cache_min=50, watch_cache_max=50),
        "bookmark_interval": 0.05,
    }
    async with cluster_target(tmp_path, crds=[WIDGET_CRD], **options) as found:
        yield found


@pytest.fixture
def server(target: ClusterTarget) -> ApiServer:
    """The embedded server's hooks (tests using them are marked etctl_hooks)."""
    return target.hooks


@pytest.fixture
def ns(target: ClusterTarget) -> str:
    return target.namespace


@pytest_asyncio.fixture
async def client(target: ClusterTarget) -> AsyncIterator[Client]:
    # Retry sleeps return at once (and are recorded): no test waits for a real backoff.
    options = ClientOptions(request_timeout=10, watch_idle_timeout=10, clock=InstantClock())
    async with await Client.from_kubeconfig(target.kubeconfig, options=options) as api:
        yield api


async def test_crud(client: Client, ns: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("a", ns, k="1"))
    assert objects.uid(created)
    assert created["data"] == {"k": "1"}
    assert await client.get(CONFIGMAPS, "a", namespace=ns) == created
    with pytest.raises(AlreadyExists):
        await client.create(CONFIGMAPS, configmap("a", ns))

    changed = {**created, "data": {"k": "2"}}
    replaced = await client.replace(CONFIGMAPS, changed)
    assert replaced["data"] == {"k": "2"}
    assert objects.resource_version(replaced) != objects.resource_version(created)
    with pytest.raises(Conflict):
        await client.replace(CONFIGMAPS, changed)  # carries the old resourceVersion

    dry = await client.create(CONFIGMAPS, configmap("dry", ns), dry_run=True)
    assert objects.name(dry) == "dry"
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "dry", namespace=ns)

    await client.delete(CONFIGMAPS, "a", namespace=ns)
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "a", namespace=ns)
    with pytest.raises(NotFound):
        await client.delete(CONFIGMAPS, "a", namespace=ns)


async def test_delete_preconditions_and_collections(client: Client, ns: str) -> None:
    kept = await client.create(CONFIGMAPS, configmap("kept", ns))
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAPS, "kept", namespace=ns, preconditions={"uid": "other"})
    await client.delete(CONFIGMAPS, "kept", namespace=ns, preconditions={"uid": objects.uid(kept)})
    for i in range(3):
        await client.create(CONFIGMAPS, configmap(f"gone-{i}", ns))
    await client.create(
        CONFIGMAPS, {**configmap("other", ns), "metadata": {"name": "other"}}, namespace=ns
    )
    await client.delete_collection(CONFIGMAPS, namespace=ns, label_selector="app=t")
    left = await client.list(CONFIGMAPS, namespace=ns)
    assert [objects.name(i) for i in left.items if objects.name(i) != "kube-root-ca.crt"] == [
        "other"
    ]


@pytest.mark.etctl_hooks("compacting the server's history on demand")
async def test_paged_list_and_an_expired_continue_token(
    server: ApiServer, client: Client, ns: str
) -> None:
    for i in range(25):
        await client.create(CONFIGMAPS, configmap(f"cm-{i:02d}", ns))
    listed = await client.list(CONFIGMAPS, namespace=ns, limit=10, label_selector="app=t")
    assert sorted(objects.name(i) for i in listed.items) == [f"cm-{i:02d}" for i in range(25)]
    assert all(i["kind"] == "ConfigMap" for i in listed.items)
    assert int(listed.resource_version) > 0

    pages = client.pages(CONFIGMAPS, namespace=ns, limit=10)
    first = await anext(pages)
    assert first.continue_token
    await client.patch(CONFIGMAPS, "cm-00", {"data": {"n": "1"}}, namespace=ns)
    server.store.compact()  # etcd compacted past the snapshot of the first page
    with pytest.raises(Gone):
        await anext(pages)
    await pages.aclose()


async def test_every_patch_type(client: Client, ns: str) -> None:
    await client.create(CONFIGMAPS, configmap("p", ns, a="1"))
    merged = await client.patch(CONFIGMAPS, "p", {"data": {"b": "2"}}, namespace=ns)
    assert merged["data"] == {"a": "1", "b": "2"}

    rv = objects.resource_version(merged)
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "remove", "path": "/data/a"},
    ]
    patched = await client.patch(CONFIGMAPS, "p", guarded, namespace=ns, patch_type=PatchType.JSON)
    assert patched["data"] == {"b": "2"}
    with pytest.raises(ApiError):  # the test op now fails: the resourceVersion moved on
        await client.patch(CONFIGMAPS, "p", guarded, namespace=ns, patch_type=PatchType.JSON)

    strategic = await client.patch(
        CONFIGMAPS,
        "p",
        {"metadata": {"labels": {"tier": "x"}}},
        namespace=ns,
        patch_type=PatchType.STRATEGIC,
    )
    assert objects.labels(strategic) == {"app": "t", "tier": "x"}

    await client.create(WIDGETS, widget("w", ns))
    with pytest.raises(UnsupportedMediaType):
        await client.patch(
            WIDGETS,
            "w",
            {"spec": {"replicas": 2}},
            namespace=ns,
            patch_type=PatchType.STRATEGIC,
        )
    with pytest.raises(Invalid):
        await client.patch(WIDGETS, "w", {"spec": {"replicas": -1}}, namespace=ns)


async def test_server_side_apply(client: Client, ns: str) -> None:
    applied = await client.patch(
        WIDGETS,
        "sa",
        {"metadata": {"name": "sa"}, "spec": {"replicas": 3, "owner": "alice"}},
        namespace=ns,
        patch_type=PatchType.APPLY,
        field_manager="alice",
    )
    assert applied["spec"] == {"replicas": 3, "owner": "alice"}
    managers = {entry["manager"] for entry in applied["metadata"]["managedFields"]}
    assert "alice" in managers
    with pytest.raises(Conflict):
        await client.patch(
            WIDGETS,
            "sa",
            {"metadata": {"name": "sa"}, "spec": {"replicas": 5}},
            namespace=ns,
            patch_type=PatchType.APPLY,
            field_manager="bob",
        )
    forced = await client.patch(
        WIDGETS,
        "sa",
        {"metadata": {"name": "sa"}, "spec": {"replicas": 5}},
        namespace=ns,
        patch_type=PatchType.APPLY,
        field_manager="bob",
        force=True,
    )
    assert forced["spec"]["replicas"] == 5
    defaulted = await client.patch(
        WIDGETS,
        "sa",
        {"metadata": {"name": "sa"}, "spec": {"size": "m"}},
        namespace=ns,
        patch_type=PatchType.APPLY,  # the client's default field manager
    )
    assert "etctl" in {entry["manager"] for entry in defaulted["metadata"]["managedFields"]}


async def test_status_and_scale_subresources(client: Client, ns: str) -> None:
    created = await client.create(WIDGETS, {**widget("s", ns), "status": {"replicas": 9}})
    assert "status" not in created or created["status"] != {"replicas": 9}  # dropped on create
    status = await client.patch_status(
        WIDGETS, "s", {"status": {"replicas": 1}, "spec": {"replicas": 7}}, namespace=ns
    )
    assert status["status"] == {"replicas": 1}
    assert status["spec"]["replicas"] == 1  # spec is ignored through /status
    replaced = await client.replace_status(WIDGETS, {**status, "status": {"replicas": 2}})
    assert replaced["status"] == {"replicas": 2}
    scale = await client.get_subresource(WIDGETS, "s", "scale", namespace=ns)
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 1
    await client.patch(WIDGETS, "s", {"spec": {"replicas": 4}}, namespace=ns, subresource="scale")
    assert (await client.get(WIDGETS, "s", namespace=ns))["spec"]["replicas"] == 4


async def test_watch_from_a_list_with_bookmarks(
    client: Client, ns: str, target: ClusterTarget
) -> None:
    # The embedded server sends a bookmark every 50 ms; a real one about once a minute, so
    # there the stream is read up to the delete.
    last = "BOOKMARK" if target.embedded else "DELETED"
    listed = await client.list(CONFIGMAPS, namespace=ns)
    seen: list[tuple[str, str]] = []
    async with client.watch(
        CONFIGMAPS, namespace=ns, resource_version=listed.resource_version
    ) as stream:
        await client.create(CONFIGMAPS, configmap("w1", ns))
        await client.patch(CONFIGMAPS, "w1", {"data": {"x": "1"}}, namespace=ns)
        await client.delete(CONFIGMAPS, "w1", namespace=ns)
        async with asyncio.timeout(5):
            async for event in stream:
                name = objects.name(event.object)
                seen.append((event.type, name))
                if event.type == last and ("DELETED", "w1") in seen:
                    break
    changes = [item for item in seen if item[0] != "BOOKMARK"]
    assert changes == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
    assert stream.resource_version


async def drain(client: Client, resource_version: str) -> None:
    async with client.watch(CONFIGMAPS, resource_version=resource_version) as stream:
        async with asyncio.timeout(5):
            async for _event in stream:
                pass


@pytest.mark.etctl_hooks("a 50-event watch history")
async def test_watch_from_an_expired_version_raises_gone(client: Client, ns: str) -> None:
    first = await client.create(CONFIGMAPS, configmap("old", ns))
    for i in range(60):
        await client.patch(CONFIGMAPS, "old", {"data": {"n": str(i)}}, namespace=ns)
    with pytest.raises(Gone):
        await drain(client, objects.resource_version(first))


@pytest.mark.etctl_hooks("fault injection: 503 on watch")
async def test_watch_survives_injected_faults_on_start(
    server: ApiServer, client: Client, ns: str
) -> None:
    server.inject(Fault(verb="watch", resource="configmaps", status=503, times=2))
    async with client.watch(CONFIGMAPS, namespace=ns, send_initial_events=True) as stream:
        async with asyncio.timeout(5):
            async for event in stream:
                annotations = objects.annotations(event.object)
                if event.type == "BOOKMARK" and annotations.get("k8s.io/initial-events-end"):
                    break


@pytest.mark.etctl_hooks("fault injection: 500 on get")
async def test_retries_transient_errors_from_the_server(
    server: ApiServer, client: Client, ns: str
) -> None:
    fault = server.inject(Fault(verb="get", resource="configmaps", status=500, times=2))
    await client.create(CONFIGMAPS, configmap("flaky", ns))
    got = await client.get(CONFIGMAPS, "flaky", namespace=ns)
    assert objects.name(got) == "flaky"
    assert fault.fired == 2
    assert isinstance(client.options.clock, InstantClock)
    assert len(client.options.clock.slept) == 2


@pytest.mark.etctl_hooks("fault injection: a patch committed and its answer dropped")
async def test_a_conflict_after_a_lost_answer_says_so(
    server: ApiServer, client: Client, ns: str
) -> None:
    created = await client.create(CONFIGMAPS, configmap("guarded", ns))
    guard = {"metadata": {"resourceVersion": objects.resource_version(created)}}
    server.inject(Fault(verb="patch", resource="configmaps", drop_answer=True))
    with pytest.raises(Conflict) as raised:
        await client.patch(CONFIGMAPS, "guarded", {**guard, "data": {"k": "v"}}, namespace=ns)
    assert raised.value.after_lost_answer  # it may be the write itself: read before concluding
    # A conflict that is the first answer is a plain one.
    with pytest.raises(Conflict) as plain:
        await client.patch(CONFIGMAPS, "guarded", {**guard, "data": {"k": "w"}}, namespace=ns)
    assert not plain.value.after_lost_answer


async def test_client_event_sink_writes_and_counts_events(client: Client, ns: str) -> None:
    clock = FakeClock()
    recorder = EventRecorder(
        ClientEventSink(client), component="test-controller", instance="t-0", clock=clock
    )
    owner = await client.create(CONFIGMAPS, configmap("owner", ns))
    async with asyncio.TaskGroup() as group:
        task = group.create_task(recorder.run(), name="recorder")
        recorder.event(owner, "Normal", "Synced", "all good")
        recorder.event(owner, "Normal", "Synced", "all good")
        recorder.event(owner, "Warning", "Failed", "x" * 3000)
        await recorder.flush()
        task.cancel()
    events = await client.list(EVENTS, namespace=ns, field_selector="involvedObject.name=owner")
    by_reason = {e["reason"]: e for e in events.items}
    assert by_reason["Synced"]["count"] == 2
    assert by_reason["Synced"]["involvedObject"]["uid"] == objects.uid(owner)
    assert len(by_reason["Failed"]["message"]) == 1024


def _running(kubelet: Kubelet, ns: str, name: str) -> bool:
    worker = kubelet.worker(ns, name)
    return worker is not None and worker.containers[0].running


@pytest.mark.etctl_hooks("the simulated kubelet, started by the test")
async def test_exec_when_the_server_serves_it(client: Client, server: ApiServer, ns: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "shell", "namespace": ns},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    kubelet = Kubelet(server)
    kubelet.start()
    try:
        await client.create(PODS, pod)
        await eventually(lambda: _running(kubelet, ns, "shell"))
        result = await client.exec(ns, "shell", ["echo", "hello"], timeout=10)
        piped = await client.exec(ns, "shell", ["sh", "-c", "cat; exit 3"], stdin=b"in", timeout=10)
    finally:
        kubelet.stop()
    assert result.exit_code == 0
    assert b"hello" in result.stdout
    assert (piped.exit_code, piped.stdout) == (3, b"in")


async def test_a_group_the_server_does_not_serve_is_not_found(client: Client, ns: str) -> None:
    # A real server answers it with Go's plain "404 page not found", no Status: still NotFound.
    missing = Resource("missing.etctl.io", "v1", "widgets", "Widget")
    with pytest.raises(NotFound, match="the server could not find the requested resource") as err:
        await client.list(missing, namespace=ns)
    assert err.value.reason == "NotFound"
