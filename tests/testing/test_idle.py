"""wait_idle: an operator and the server are idle only when nothing can happen until time moves."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from etctl.runtime import CONFIGMAPS, PODS, FakeClock, Manager, ManagerOptions, Request, Result
from etctl.testing import ApiServer, KubeletConfig, eventually, wait_idle
from tests.runtime._realtime import NoJitter, client_of, run_manager

NS = "default"


class Gated:
    """Reconciles each key once the test opens the gate, then asks to come back in 60 s."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls: list[str] = []

    async def reconcile(self, request: Request) -> Result:
        await self.gate.wait()
        self.calls.append(request.name)
        return Result(requeue_after=60)


def configmap(server: ApiServer, name: str) -> None:
    body = {"metadata": {"name": name, "namespace": NS}, "data": {}}
    server.storage.create(CONFIGMAPS, body, namespace=NS)


@asynccontextmanager
async def operator(server: ApiServer, tmp_path: Path, reconciler: Gated) -> AsyncIterator[Manager]:
    async with client_of(server, tmp_path) as client:
        options = ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0")
        assert isinstance(server.clock, FakeClock)
        manager = Manager(client, options=options, clock=server.clock, rng=NoJitter())
        # Not the kube-root-ca.crt every namespace holds.
        mine = "metadata.name!=kube-root-ca.crt"
        manager.controller("gated", reconciler).for_(CONFIGMAPS, field_selector=mine).build()
        async with run_manager(manager):
            yield manager


async def test_a_reconcile_in_flight_is_waited_for_and_its_timer_is_set(tmp_path: Path) -> None:
    clock = FakeClock()
    async with ApiServer(clock=clock) as server:
        work = Gated()
        async with operator(server, tmp_path, work) as manager:
            configmap(server, "a")
            waiting = asyncio.create_task(wait_idle(server, manager), name="test:wait")
            await asyncio.sleep(0.1)
            assert not waiting.done()  # the reconcile of "a" is in flight
            work.gate.set()
            await asyncio.wait_for(waiting, timeout=5)
            assert work.calls == ["a"]
            # Its requeue timer was set before the clock moves: it fires exactly on time.
            await clock.advance(59)
            await wait_idle(server, manager)
            assert work.calls == ["a"]
            await clock.advance(1)
            await wait_idle(server, manager)
            assert work.calls == ["a", "a"]


async def test_a_busy_operator_times_out_saying_with_what(tmp_path: Path) -> None:
    async with ApiServer(clock=FakeClock()) as server:
        work = Gated()
        async with operator(server, tmp_path, work) as manager:
            configmap(server, "a")
            with pytest.raises(TimeoutError, match="controller gated has 0 queued and 1 in flight"):
                await wait_idle(server, manager, timeout=0.3)
            work.gate.set()


async def test_an_informer_backing_off_is_a_timer(tmp_path: Path) -> None:
    clock = FakeClock()
    async with ApiServer(clock=clock) as server:
        work = Gated()
        work.gate.set()
        async with operator(server, tmp_path, work) as manager:
            await wait_idle(server, manager)
            # The watch ends at once after it started: the informer backs off on the clock, so
            # nothing can reach the cache before the clock moves.
            server.store.close_sinks()
            await eventually(lambda: manager.cache.backing_off(CONFIGMAPS))
            configmap(server, "late")
            await wait_idle(server, manager, timeout=2)
            assert work.calls == []
            await clock.advance(2)  # past the backoff: the informer watches again
            await wait_idle(server, manager)
            assert work.calls == ["late"]
            assert not manager.cache.backing_off(CONFIGMAPS)


async def test_the_kubelet_runs_a_new_pod_before_the_server_is_idle() -> None:
    async with ApiServer(clock=FakeClock(), kubelet=KubeletConfig()) as server:
        pod = {
            "metadata": {"name": "p", "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
        server.storage.create(PODS, pod, namespace=NS)
        await wait_idle(server)
        assert server.storage.get(PODS, "p", namespace=NS)["status"]["phase"] == "Running"
