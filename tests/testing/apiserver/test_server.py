"""The ApiServer's hooks: faults, pause, request log, background tasks, subresource routes, CRDs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web

from etctl.errors import ConfigError, Invalid
from etctl.runtime import CONFIGMAPS, FakeClock
from etctl.runtime import PODS as POD_RESOURCE
from etctl.testing import ApiServer, Fault, SubresourceRequest
from tests.testing.apiserver._client import PODS, WIDGET_CRD, Api, configmap, open_watch, pod

CM = "/api/v1/namespaces/default/configmaps"


async def test_starts_fast_on_a_free_port_and_stops() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    server = ApiServer()
    await server.start()
    elapsed = loop.time() - started
    assert server.running
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"
    assert elapsed < 0.5
    await server.stop()
    assert not server.running


async def test_an_injected_error_answers_with_its_status(api: Api, server: ApiServer) -> None:
    fault = server.inject(Fault(verb="create", resource="configmaps", status=500, times=2))
    first = await api.post(CM, configmap("a"))
    assert first.status == 500
    assert first.body["reason"] == "InternalError"
    assert (await api.post(CM, configmap("a"))).status == 500
    assert (await api.post(CM, configmap("a"))).status == 201
    assert fault.fired == 2
    assert len(server.faults) == 0


async def test_faults_match_on_namespace_name_and_verb(api: Api, server: ApiServer) -> None:
    server.inject(
        Fault(
            verb="get",
            resource="configmaps",
            namespace="default",
            name="b",
            status=429,
            message="slow down",
            times=None,
        )
    )
    await api.create(CM, configmap("a"))
    await api.create(CM, configmap("b"))
    assert (await api.get(f"{CM}/a")).status == 200
    throttled = await api.get(f"{CM}/b")
    assert throttled.status == 429
    assert throttled.body["message"] == "slow down"
    assert throttled.body["details"] == {"retryAfterSeconds": 1}
    assert throttled.headers["Retry-After"] == "1"
    assert (await api.get(f"{CM}/b")).status == 429


async def test_faults_match_on_text_in_the_query(api: Api, server: ApiServer) -> None:
    await api.create(CM, configmap("a"))
    server.inject(
        Fault(resource="configmaps", query_contains={"labelSelector": "team=b"}, status=503)
    )
    assert (await api.get(CM, params={"labelSelector": "team=a"})).status == 200
    assert (await api.get(CM)).status == 200  # no such parameter: no match
    assert (await api.get(CM, params={"labelSelector": "x,team=b"})).status == 503


async def test_faults_match_on_text_in_the_body(api: Api, server: ApiServer) -> None:
    fault = server.inject(Fault(verb="create", body_contains='"bee"', status=500))
    assert (await api.post(CM, configmap("a"))).status == 201  # the body is read only once
    assert (await api.post(CM, configmap("bee"))).status == 500
    assert fault.fired == 1
    assert (await api.get(f"{CM}/a")).body["data"] == configmap("a")["data"]


async def test_a_dropped_answer_comes_after_the_write(api: Api, server: ApiServer) -> None:
    created = await api.create(CM, configmap("a"))
    server.inject(Fault(verb="patch", resource="configmaps", name="a", drop_answer=True))
    guarded = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}}
    with pytest.raises(aiohttp.ClientError):
        await api.patch(f"{CM}/a", {**guarded, "data": {"k": "written"}})
    # The write was committed before the answer was dropped: a retry meets it as a Conflict.
    assert (await api.get(f"{CM}/a")).body["data"] == {"k": "written"}
    assert (await api.patch(f"{CM}/a", {**guarded, "data": {"k": "again"}})).status == 409
    record = next(r for r in server.requests if r.verb == "patch")
    assert (record.code, record.dropped) == (200, True)


async def test_a_held_answer_comes_after_the_write(
    api: Api, server: ApiServer, clock: FakeClock
) -> None:
    server.inject(Fault(verb="create", resource="configmaps", answer_delay=10))
    request = asyncio.create_task(api.post(CM, configmap("a")), name="held-answer")
    await clock.settle()
    await asyncio.sleep(0.05)
    assert not request.done()
    assert (await api.get(f"{CM}/a")).status == 200  # committed; only its answer waits
    await clock.advance(10)
    assert (await asyncio.wait_for(request, 5)).status == 201


async def test_a_delay_uses_the_server_clock(api: Api, server: ApiServer, clock: FakeClock) -> None:
    server.inject(Fault(verb="list", resource="configmaps", delay=10))
    request = asyncio.create_task(api.get(CM), name="delayed-list")
    await clock.settle()
    await asyncio.sleep(0.05)
    assert not request.done()
    await clock.advance(10)
    reply = await asyncio.wait_for(request, 5)
    assert reply.status == 200


async def test_a_dropped_watch_ends_without_events(api: Api, server: ApiServer) -> None:
    await api.create(CM, configmap("a"))
    server.inject(Fault(verb="watch", resource="configmaps", drop_watch=True))
    status, events = await api.watch_lines(CM, {"resourceVersion": "0"})
    assert status == 200
    assert events == []
    _, events = await api.watch_lines(CM, {"resourceVersion": "0"}, count=1)
    assert events[0]["type"] == "ADDED"


async def test_a_forced_410_on_watch(api: Api, server: ApiServer) -> None:
    server.inject(Fault(verb="watch", resource="configmaps", expire_watch=True))
    status, events = await api.watch_lines(CM, {"resourceVersion": "3"})
    assert status == 200
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"
    assert events[0]["object"]["message"].startswith("too old resource version: 3")


async def test_pause_holds_requests_until_resumed(api: Api, server: ApiServer) -> None:
    server.pause()
    request = asyncio.create_task(api.get(CM), name="held-list")
    await asyncio.sleep(0.05)
    assert not request.done()
    server.resume()
    reply = await asyncio.wait_for(request, 5)
    assert reply.status == 200


async def test_request_log_records_verbs_codes_agents_and_managers(
    api: Api, server: ApiServer
) -> None:
    server.requests.clear()
    await api.post(CM, configmap("a"), params={"fieldManager": "me"}, headers={"User-Agent": "t/1"})
    await api.get(f"{CM}/missing")
    await api.patch(f"{CM}/a/status", {})
    records = list(server.requests)
    assert [(r.verb, r.resource, r.name, r.code) for r in records] == [
        ("create", "configmaps", "", 201),
        ("get", "configmaps", "missing", 404),
        ("patch", "configmaps", "a", 404),
    ]
    assert records[0].field_manager == "me"
    assert records[0].user_agent == "t/1"
    assert records[0].namespace == "default"
    assert records[2].subresource == "status"
    assert [r.name for r in server.requests.find(verb="get", code=404)] == ["missing"]


async def test_request_log_is_bounded() -> None:
    async with ApiServer(request_log_size=3) as server:
        async with aiohttp.ClientSession() as session:
            for _ in range(5):
                async with session.get(server.url + "/version"):
                    pass
        assert len(server.requests) == 3


async def test_watch_requests_are_logged_when_they_start(api: Api, server: ApiServer) -> None:
    server.requests.clear()
    async with open_watch(api, CM) as stream:
        await api.create(CM, configmap("a"))
        await stream.next()
        assert [(r.verb, r.code) for r in server.requests][:1] == [("watch", 200)]


async def test_spawned_tasks_run_in_the_server_and_stop_with_it(clock: FakeClock) -> None:
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            await clock.sleep(1)
            ticks.append(clock.monotonic())

    server = ApiServer(clock=clock)
    await server.start()
    task = server.spawn(ticker(), name="ticker")
    assert task.get_name() == "ticker"
    await clock.advance(3)
    assert ticks == [1.0, 2.0, 3.0]
    await server.stop()
    assert task.cancelled()


async def test_spawn_needs_a_running_server() -> None:
    async def idle() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="not running"):
        ApiServer().spawn(idle(), name="idle")


async def test_subscribers_see_commits_in_order_even_when_they_write(server: ApiServer) -> None:
    seen: list[tuple[str, str]] = []

    def copy_on_create(event: object) -> None:
        name = event.key.split("/")[-1]  # type: ignore[attr-defined]
        if event.type == "ADDED" and not name.endswith("-copy"):  # type: ignore[attr-defined]
            server.storage.create(CONFIGMAPS, configmap(f"{name}-copy"), namespace="default")

    server.subscribe(copy_on_create)
    server.subscribe(lambda e: seen.append((e.type, e.key)))
    server.storage.create(CONFIGMAPS, configmap("a"), namespace="default")
    assert seen == [("ADDED", "default/a"), ("ADDED", "default/a-copy")]


async def test_subresource_routes_serve_pods_log(api: Api, server: ApiServer) -> None:
    async def log(request: web.Request, sub: SubresourceRequest) -> web.StreamResponse:
        pod_obj = sub.storage.get(POD_RESOURCE, sub.name, namespace=sub.namespace)
        return web.Response(text=f"log of {pod_obj['metadata']['name']}\n")

    server.add_subresource("", "pods", "log", log)
    await api.create(PODS, pod("p"))
    reply = await api.get(f"{PODS}/p/log")
    assert (reply.status, reply.body) == (200, "log of p\n")


async def test_subresources_without_a_handler_are_unavailable(api: Api) -> None:
    await api.create(PODS, pod("p"))
    reply = await api.get(f"{PODS}/p/log")
    assert reply.status == 503
    assert reply.body["reason"] == "ServiceUnavailable"


async def test_binding_assigns_a_node(api: Api) -> None:
    await api.create(PODS, pod("p"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    reply = await api.post(f"{PODS}/p/binding", binding)
    assert reply.status == 201
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    bound = (await api.get(f"{PODS}/p")).body
    assert bound["spec"]["nodeName"] == "node-1"
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    again = await api.post(f"{PODS}/p/binding", binding)
    assert again.status == 409
    assert again.body["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": '
        'pod p is already assigned to node "node-1"'
    )


async def test_kubeconfig_names_the_server(server: ApiServer, tmp_path: Path) -> None:
    path = server.write_kubeconfig(tmp_path / "cfg" / "kubeconfig")
    config = yaml.safe_load(path.read_text())
    assert config["clusters"][0]["cluster"]["server"] == server.url
    assert config["current-context"] == "etctl"
    assert config["users"][0]["user"]["token"]


async def test_crds_load_from_files_directories_and_mappings(tmp_path: Path) -> None:
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "widgets.yaml").write_text(yaml.safe_dump(WIDGET_CRD))
    (tmp_path / "notes.txt").write_text("ignored")
    async with ApiServer(crds=[tmp_path / "crds"]) as server:
        assert server.registry.get("example.com", "widgets") is not None
        again = server.load_crds(WIDGET_CRD)
        assert again[0]["metadata"]["generation"] == 1


async def test_loading_something_else_than_a_crd_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod("p")))
    with pytest.raises(ConfigError, match="holds a Pod"):
        ApiServer().load_crds(path)


async def test_loading_an_invalid_crd_raises_invalid() -> None:
    crd = {**WIDGET_CRD, "metadata": {"name": "wrong"}}
    with pytest.raises(Invalid):
        ApiServer().load_crds(crd)
