"""The fence of leader-only work: writes, execs and events refused once it lapsed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from etctl.errors import Fenced
from etctl.runtime import CONFIGMAPS, EVENTS, Client, FakeClock
from etctl.runtime._fence import check_fence, current_fence, fenced_context, under_fence
from etctl.runtime._recorder import ClientEventSink, EventRecorder
from etctl.runtime._transport import Transport
from etctl.testing import ApiServer, eventually
from tests.runtime._fakes import unique_name
from tests.runtime._realtime import client_of


class Switch:
    """A fence that lapses when told to."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def lapsed(self) -> str | None:
        return self.reason


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ApiServer]:
    async with ApiServer() as api:
        yield api


@pytest_asyncio.fixture
async def client(server: ApiServer, tmp_path: Path) -> AsyncIterator[Client]:
    async with client_of(server, tmp_path) as api:
        yield api


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def writes(server: ApiServer) -> int:
    return sum(1 for r in server.requests if r.verb not in ("get", "list", "watch"))


async def test_no_fence_outside_leader_only_work() -> None:
    assert current_fence() is None
    check_fence("anything")  # work that needs no leadership is never fenced


@pytest.mark.etctl_hooks("the request log shows that nothing reached the server")
async def test_a_lapsed_fence_refuses_writes_and_execs_before_they_are_sent(
    server: ApiServer, client: Client
) -> None:
    fence = Switch()
    name = unique_name("cm")

    async def leader_work() -> None:
        await client.create(CONFIGMAPS, configmap(name), namespace="default")  # allowed
        fence.reason = "renew deadline passed"
        before = writes(server)
        for write in (
            client.create(CONFIGMAPS, configmap(name + "-2"), namespace="default"),
            client.patch(CONFIGMAPS, name, {"data": {"a": "b"}}, namespace="default"),
            client.delete(CONFIGMAPS, name, namespace="default"),
            client.exec("default", "p", ["ls"], timeout=5),
        ):
            with pytest.raises(Fenced, match="refused: renew deadline passed"):
                await write
        assert writes(server) == before  # nothing reached the server
        assert (await client.get(CONFIGMAPS, name, namespace="default"))["metadata"]["name"]

    await asyncio.create_task(leader_work(), context=fenced_context(fence))
    # The same client, outside the fenced task, writes as before.
    await client.patch(CONFIGMAPS, name, {"data": {"a": "b"}}, namespace="default")
    assert len(server.requests.find(verb="exec")) == 0


async def test_tasks_started_by_fenced_work_inherit_its_fence() -> None:
    fence = Switch()
    seen: list[object] = []

    async def child() -> None:
        seen.append(current_fence())

    async def parent() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(child())

    await asyncio.create_task(parent(), context=fenced_context(fence))
    assert seen == [fence]
    with under_fence(None):
        assert current_fence() is None


@pytest.mark.etctl_hooks("a fresh server, whose default namespace holds only these events")
async def test_events_of_fenced_work_are_dropped_once_the_fence_lapsed(
    server: ApiServer, client: Client
) -> None:
    clock = FakeClock()
    recorder = EventRecorder(ClientEventSink(client), component="test", clock=clock)
    fence = Switch()
    involved = configmap(unique_name("about"))
    involved["metadata"] = {"name": involved["metadata"]["name"], "namespace": "default"}  # type: ignore[index]

    async def leader_work() -> None:
        recorder.event(involved, "Normal", "Leading", "recorded while leading")

    await asyncio.create_task(leader_work(), context=fenced_context(fence))
    recorder.event(involved, "Normal", "Anyone", "recorded outside leader-only work")
    fence.reason = "lost"  # the fence lapses before the recorder sends
    async with asyncio.TaskGroup() as group:
        sending = group.create_task(recorder.run())
        await recorder.flush()
        sending.cancel()
    listed = await client.list(EVENTS, namespace="default")
    reasons = [e["reason"] for e in listed.items]
    assert reasons == ["Anyone"]
    assert recorder.fenced == 1


@pytest.mark.etctl_hooks("the server is paused to hold the only connection's answer")
async def test_a_write_whose_fence_lapses_while_it_waits_for_a_connection_is_not_sent(
    server: ApiServer, tmp_path: Path
) -> None:
    # A process paused between its check and its send (waiting for a free connection, or for
    # one to open) must not send once it resumes past its renew deadline.
    fence = Switch()
    name = unique_name("cm")
    async with client_of(server, tmp_path, pool_size=1) as client:
        await client.create(CONFIGMAPS, configmap(name), namespace="default")
        transport = client._caller.transport
        assert isinstance(transport, Transport)  # the client's own, pooled transport
        pool = transport._api
        refused: list[Fenced] = []

        async def late_write() -> None:
            try:
                await client.patch(CONFIGMAPS, name, {"data": {"late": "yes"}}, namespace="default")
            except Fenced as exc:
                refused.append(exc)

        server.pause()
        async with asyncio.TaskGroup() as group:
            # The only connection is busy with a read the server holds.
            group.create_task(client.get(CONFIGMAPS, name, namespace="default"))
            await eventually(lambda: pool._taken == 1)  # the only slot is in use
            group.create_task(late_write(), context=fenced_context(fence))
            await eventually(lambda: bool(pool._queue))  # checked, and waiting for a slot
            fence.reason = "renew deadline passed"
            before = writes(server)
            server.resume()
        assert [str(exc) for exc in refused] == [
            f"PATCH /api/v1/namespaces/default/configmaps/{name} refused: renew deadline passed"
        ]
        assert writes(server) == before  # nothing reached the server
        stored = await client.get(CONFIGMAPS, name, namespace="default")
        assert "data" not in stored
        # The connection it did not use serves the next request.
        await client.patch(CONFIGMAPS, name, {"data": {"a": "b"}}, namespace="default")
