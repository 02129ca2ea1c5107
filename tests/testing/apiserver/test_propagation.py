"""Watch events as late as a real watch cache delivers them, and where each watch cache starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from etctl.errors import Gone
from etctl.runtime import CONFIGMAPS, Client, ClientOptions, RetryPolicy, objects
from etctl.testing import ApiServer, WatchLatency, eventually


def cm(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": "1"}}


async def collect(client: Client, into: list[tuple[str, str]], **options: Any) -> None:
    async with client.watch(CONFIGMAPS, namespace="default", **options) as stream:
        async for event in stream:  # each event counts as it arrives
            into.append((event.type, objects.name(event.object)))  # noqa: PERF401


async def test_events_arrive_late_and_together(tmp_path: Path) -> None:
    latency = WatchLatency(delay=0.2, interval=0.05)
    async with ApiServer(watch_latency=latency, controllers=False) as server:
        listed = server.storage.list(CONFIGMAPS, namespace="default")
        seen: list[tuple[str, str]] = []
        async with connect(server, tmp_path) as client, asyncio.TaskGroup() as group:
            task = group.create_task(
                collect(client, seen, resource_version=listed.resource_version)
            )
            await eventually(lambda: server.store.sinks(("", "configmaps")) == 1)
            loop = asyncio.get_running_loop()
            written = loop.time()
            for name in ("a", "b", "c"):
                server.storage.create(CONFIGMAPS, cm(name), namespace="default")
            assert server.store.unsent() >= 3  # on their way, counted as unsent
            await asyncio.sleep(0.1)
            assert seen == []  # not before the delay
            await eventually(lambda: len(seen) == 3)
            assert loop.time() - written >= 0.2
            assert seen == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
            task.cancel()


async def test_a_held_resource_lags_and_nothing_claims_its_events() -> None:
    async with ApiServer(controllers=False) as server:
        server.hold_watch_events(CONFIGMAPS)
        created = server.storage.create(CONFIGMAPS, cm("a"), namespace="default")
        assert server.store.unsent() == 1
        rv = int(objects.resource_version(created))
        # A bookmark never claims an event still on its way; a replay stops short of it.
        assert server.store.watch_rv(("", "configmaps")) == rv - 1
        assert server.store.history_after(("", "configmaps"), rv - 1) == []
        server.release_watch_events(CONFIGMAPS)
        await eventually(lambda: server.store.unsent() == 0)
        assert server.store.watch_rv(("", "configmaps")) == server.store.rv
        assert [e.rv for e in server.store.history_after(("", "configmaps"), rv - 1) or []] == [rv]


async def test_each_watch_cache_starts_where_the_server_began_serving(tmp_path: Path) -> None:
    server = ApiServer(controllers=False)
    before = server.storage.create(CONFIGMAPS, cm("early"), namespace="default")
    async with server:
        started = server.store.rv
        async with connect(server, tmp_path) as client:
            old = str(int(objects.resource_version(before)) - 1)
            with pytest.raises(Gone):
                await drain(client, old)
            seen: list[tuple[str, str]] = []
            async with asyncio.TaskGroup() as group:
                task = group.create_task(collect(client, seen, resource_version=str(started)))
                await eventually(lambda: server.store.sinks(("", "configmaps")) == 1)
                server.storage.create(CONFIGMAPS, cm("late"), namespace="default")
                await eventually(lambda: seen == [("ADDED", "late")])
                task.cancel()


async def drain(client: Client, resource_version: str) -> None:
    async with client.watch(
        CONFIGMAPS, namespace="default", resource_version=resource_version
    ) as stream:
        async for _ in stream:
            pass


@asynccontextmanager
async def connect(server: ApiServer, tmp_path: Path) -> AsyncIterator[Client]:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    options = ClientOptions(retry=RetryPolicy(max_attempts=1))
    async with Client.connect(kubeconfig, options=options) as client:
        yield client
