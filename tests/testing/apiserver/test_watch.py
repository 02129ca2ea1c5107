"""Conformance: watch streams (start points, filtering, bookmarks, timeouts, 410, slow clients)."""

from __future__ import annotations

import asyncio
import copy

import aiohttp

from etctl.runtime import CONFIGMAPS, FakeClock
from etctl.testing import ApiServer, History
from tests.testing.apiserver._client import Api, configmap, open_watch

CM = "/api/v1/namespaces/default/configmaps"


async def test_watch_from_zero_sends_existing_objects_as_added_then_live(api: Api) -> None:
    await api.create(CM, configmap("a"))
    await api.create(CM, configmap("b"))
    async with open_watch(api, CM, {"resourceVersion": "0"}) as stream:
        assert stream.status == 200
        initial = await stream.take(2)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in initial] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
        ]
        await api.create(CM, configmap("c"))
        live = await stream.next()
        assert (live["type"], live["object"]["metadata"]["name"]) == ("ADDED", "c")
        assert live["object"]["apiVersion"] == "v1"
        assert live["object"]["kind"] == "ConfigMap"


async def test_watch_without_resource_version_also_starts_with_the_state(api: Api) -> None:
    await api.create(CM, configmap("a"))
    async with open_watch(api, CM) as stream:
        event = await stream.next()
        assert event["type"] == "ADDED"


async def test_watch_from_a_resource_version_replays_later_events(api: Api) -> None:
    first = await api.create(CM, configmap("a"))
    rv = first["metadata"]["resourceVersion"]
    first["data"] = {"k": "2"}
    await api.put(f"{CM}/a", first)
    await api.delete(f"{CM}/a")
    async with open_watch(api, CM, {"resourceVersion": rv}) as stream:
        events = await stream.take(2)
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    modified_rv = int(events[0]["object"]["metadata"]["resourceVersion"])
    deleted_rv = int(events[1]["object"]["metadata"]["resourceVersion"])
    assert int(rv) < modified_rv < deleted_rv


async def test_deleted_event_carries_the_last_state_at_the_deletion_resource_version(
    api: Api, server: ApiServer
) -> None:
    await api.create(CM, configmap("a", data={"k": "last"}))
    async with open_watch(api, CM) as stream:
        await stream.next()
        await api.delete(f"{CM}/a")
        event = await stream.next()
    assert event["type"] == "DELETED"
    assert event["object"]["data"] == {"k": "last"}
    assert event["object"]["metadata"]["resourceVersion"] == str(server.store.rv)


async def test_watch_from_a_compacted_resource_version_gets_a_410_error_event(
    api: Api, server: ApiServer
) -> None:
    created = await api.create(CM, configmap("a"))
    rv = created["metadata"]["resourceVersion"]
    await api.create(CM, configmap("b"))
    server.store.compact()
    status, events = await api.watch_lines(CM, {"resourceVersion": rv})
    assert status == 200
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {rv} ({server.store.rv})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]


async def test_history_window_is_per_server_and_forces_410(clock: FakeClock) -> None:
    async with ApiServer(
        clock=clock, history=History(watch_cache_min=2, watch_cache_max=2)
    ) as server:
        async with aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            first = await api.create(CM, configmap("a"))
            for name in ("b", "c", "d"):
                await api.create(CM, configmap(name))
            _, events = await api.watch_lines(
                CM, {"resourceVersion": first["metadata"]["resourceVersion"]}
            )
            assert events[0]["type"] == "ERROR"
            assert events[0]["object"]["code"] == 410


async def test_watch_from_a_future_resource_version_is_a_504(api: Api, server: ApiServer) -> None:
    status, body = await api.watch_lines(CM, {"resourceVersion": str(server.store.rv + 100)})
    assert status == 504
    assert body[0]["reason"] == "Timeout"
    assert body[0]["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]


async def test_label_selector_turns_leaving_objects_into_deleted_and_joining_into_added(
    api: Api,
) -> None:
    created = await api.create(CM, configmap("a", labels={"app": "web"}))
    async with open_watch(api, CM, {"labelSelector": "app=web", "resourceVersion": "0"}) as stream:
        assert (await stream.next())["type"] == "ADDED"
        leaving = copy.deepcopy(created)
        leaving["metadata"]["labels"] = {"app": "db"}
        left = (await api.put(f"{CM}/a", leaving)).body
        event = await stream.next()
        assert event["type"] == "DELETED"
        assert event["object"]["metadata"]["labels"] == {"app": "web"}
        assert event["object"]["metadata"]["resourceVersion"] == left["metadata"]["resourceVersion"]
        left["metadata"]["labels"] = {"app": "web"}
        await api.put(f"{CM}/a", left)
        assert (await stream.next())["type"] == "ADDED"
        await api.create(CM, configmap("other", labels={"app": "db"}))
        await api.create(CM, configmap("b", labels={"app": "web"}))
        event = await stream.next()
        assert event["object"]["metadata"]["name"] == "b"


async def test_field_selector_on_name_watches_one_object(api: Api) -> None:
    async with open_watch(api, CM, {"fieldSelector": "metadata.name=b"}) as stream:
        await api.create(CM, configmap("a"))
        await api.create(CM, configmap("b"))
        event = await stream.next()
        assert event["object"]["metadata"]["name"] == "b"


async def test_watch_of_one_namespace_ignores_others(api: Api) -> None:
    async with open_watch(api, CM) as stream:
        await api.create("/api/v1/namespaces/kube-system/configmaps", configmap("x"))
        await api.create(CM, configmap("y"))
        event = await stream.next()
        assert event["object"]["metadata"]["name"] == "y"


async def test_watch_across_namespaces(api: Api) -> None:
    async with open_watch(api, "/api/v1/configmaps") as stream:
        await api.create("/api/v1/namespaces/kube-system/configmaps", configmap("x"))
        await api.create(CM, configmap("y"))
        names = [(e["object"]["metadata"]["namespace"]) for e in await stream.take(2)]
        assert names == ["kube-system", "default"]


async def test_timeout_seconds_ends_the_stream_on_the_server_clock(
    api: Api, clock: FakeClock
) -> None:
    async with open_watch(api, CM, {"timeoutSeconds": "30"}) as stream:
        await api.create(CM, configmap("a"))
        await stream.next()
        await clock.advance(29)
        await api.create(CM, configmap("b"))
        await stream.next()
        await clock.advance(1)
        assert await stream.ended()


async def test_bookmarks_arrive_on_the_configured_interval(
    api: Api, clock: FakeClock, server: ApiServer
) -> None:
    async with open_watch(api, CM, {"allowWatchBookmarks": "true"}) as stream:
        await api.create(CM, configmap("a"))
        await stream.next()
        await clock.advance(60)
        bookmark = await stream.next()
        assert bookmark == {
            "type": "BOOKMARK",
            "object": {
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(server.store.rv)},
            },
        }


async def test_no_bookmarks_unless_allowed(api: Api, clock: FakeClock) -> None:
    async with open_watch(api, CM, {"timeoutSeconds": "200"}) as stream:
        await clock.advance(150)
        await api.create(CM, configmap("a"))
        assert (await stream.next())["type"] == "ADDED"


async def test_send_initial_events_ends_with_the_initial_events_end_bookmark(
    api: Api, server: ApiServer
) -> None:
    await api.create(CM, configmap("a"))
    params = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    async with open_watch(api, CM, params) as stream:
        added, bookmark = await stream.take(2)
        assert added["type"] == "ADDED"
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["metadata"] == {
            "resourceVersion": str(server.store.rv),
            "annotations": {"k8s.io/initial-events-end": "true"},
        }


async def test_send_initial_events_requires_not_older_than(api: Api) -> None:
    status, body = await api.watch_lines(CM, {"sendInitialEvents": "true"})
    assert status == 422
    assert body[0]["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    )


async def test_watch_parameter_is_parsed_like_go_parse_bool(api: Api) -> None:
    for value in ("True", "1", "t", "TRUE"):
        status, _ = await api.watch_lines(CM, {"watch": value, "timeoutSeconds": "1"}, count=0)
        assert status == 200, value
    reply = await api.get(CM, params={"watch": "yes"})
    assert reply.status == 400
    assert reply.body["message"] == 'strconv.ParseBool: parsing "yes": invalid syntax'
    listing = await api.get(CM, params={"watch": "false"})
    assert listing.body["kind"] == "ConfigMapList"


async def test_a_slow_watcher_is_closed_instead_of_buffering(clock: FakeClock) -> None:
    async with ApiServer(clock=clock, watch_buffer=5) as server:
        assert server.http.watch.max_buffer == 5
        watcher = server.storage.watch(CONFIGMAPS, namespace="default", max_buffer=5)
        for index in range(6):
            server.storage.create(CONFIGMAPS, configmap(f"c{index}"), namespace="default")
        assert watcher.closed
        assert watcher.close_reason == "overflow"
        assert watcher.pending == 0
        assert server.store.sinks(("", "configmaps")) == 0
        assert await watcher.next_chunk() is None


async def test_stopping_the_server_ends_open_watches(clock: FakeClock) -> None:
    server = ApiServer(clock=clock)
    await server.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, server.url)
        async with open_watch(api, CM) as stream:
            stop = asyncio.create_task(server.stop(), name="stop-server")
            assert await stream.ended()
            await stop


async def test_watch_of_a_table_sends_rows(api: Api) -> None:
    headers = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    async with open_watch(api, CM, headers=headers) as stream:
        await api.create(CM, configmap("a"))
        await api.create(CM, configmap("b"))
        first, second = await stream.take(2)
    assert first["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert first["object"]["rows"][0]["cells"][:2] == ["a", 1]
    assert "columnDefinitions" not in second["object"]


async def test_a_client_that_disconnects_frees_its_watcher(api: Api, server: ApiServer) -> None:
    async with open_watch(api, CM) as stream:
        await api.create(CM, configmap("a"))
        await stream.next()
        assert server.store.sinks(("", "configmaps")) == 1
        stream.response.close()
    async with asyncio.timeout(5):
        while server.store.sinks(("", "configmaps")):
            await asyncio.sleep(0.01)


async def test_watch_of_one_named_object(api: Api) -> None:
    async with open_watch(api, f"{CM}/b") as stream:
        await api.create(CM, configmap("a"))
        await api.create(CM, configmap("b"))
        event = await stream.next()
        assert event["object"]["metadata"]["name"] == "b"
