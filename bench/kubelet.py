"""Simulated kubelet throughput: pods started, exec round trips, and a virtual hour of crash loops.

Run: ``.venv/bin/python bench/kubelet.py [--pods N] [--execs N]``

Server, kubelet and clients share one process and one event loop, so each figure counts the HTTP
and WebSocket work of both ends. The comparisons are the budgets the embedded server is held to:
the API server's 1,000 creates/s (a pod start costs one create, one binding and a few status
writes), and a real kubelet's pod startup SLO (p99 under 5 s per pod, one pod at a time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import aiohttp

import _report
from etctl.runtime import PODS, FakeClock
from etctl.testing import ApiServer, KubeletConfig

_PATH = "/api/v1/namespaces/default/pods"


def _pod(name: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


async def pods_started(count: int) -> float:
    """Seconds from the first create to every pod Running, with 8 concurrent clients."""
    async with (
        ApiServer(kubelet=KubeletConfig.uniform(4, pods=count)) as server,
        aiohttp.ClientSession() as session,
    ):
        running: set[str] = set()
        done = asyncio.Event()

        async def watch() -> None:
            params = {"watch": "true", "fieldSelector": "status.phase=Running"}
            async with session.get(server.url + _PATH, params=params) as response:
                async for line in response.content:
                    running.add(json.loads(line)["object"]["metadata"]["name"])
                    if len(running) == count:
                        done.set()
                        return

        async def create(names: list[str]) -> None:
            for name in names:
                async with session.post(server.url + _PATH, json=_pod(name)) as response:
                    assert response.status == 201

        start = time.perf_counter()
        async with asyncio.timeout(300), asyncio.TaskGroup() as group:
            group.create_task(watch(), name="watch")
            names = [f"p-{i}" for i in range(count)]
            for worker in range(8):
                group.create_task(create(names[worker::8]), name=f"create-{worker}")
            await done.wait()
        return time.perf_counter() - start


async def exec_round_trips(count: int) -> float:
    """Seconds for ``count`` sequential ``pods/exec`` calls (v4 WebSocket, ``sh -c``)."""
    async with (
        ApiServer(kubelet=KubeletConfig()) as server,
        aiohttp.ClientSession() as session,
    ):
        server.storage.create(PODS, _pod("shell"), namespace="default")
        assert server.kubelet is not None
        kubelet = server.kubelet
        kubelet.step()  # binds the pod
        kubelet.step()  # starts it
        worker = kubelet.worker("default", "shell")
        assert worker is not None
        assert worker.containers[0].running
        url = server.url.replace("http", "ws") + _PATH + "/shell/exec"
        params = [("command", "sh"), ("command", "-c"), ("command", "echo $HOSTNAME")]
        params += [("stdout", "true"), ("stderr", "true")]
        start = time.perf_counter()
        for _ in range(count):
            async with session.ws_connect(
                url, params=params, protocols=("v4.channel.k8s.io",)
            ) as ws:
                async for _message in ws:
                    pass
        return time.perf_counter() - start


async def virtual_hour(pods: int) -> tuple[float, int]:
    """Wall seconds to run ``pods`` crash-looping pods for one hour of FakeClock time."""
    clock = FakeClock()
    async with ApiServer(clock=clock, kubelet=KubeletConfig.uniform(2, pods=pods)) as server:
        for index in range(pods):
            body = _pod(
                f"crash-{index}",
                **{"sim.etctl.io/run-seconds": "30", "sim.etctl.io/exit-code": "1"},
            )
            server.storage.create(PODS, body, namespace="default")
        await clock.advance(0)
        start = time.perf_counter()
        for _ in range(60):
            await clock.advance(60)
        elapsed = time.perf_counter() - start
        restarts = sum(
            p["status"]["containerStatuses"][0]["restartCount"]
            for p in server.storage.list(PODS, namespace="default").items
        )
        return elapsed, restarts


async def main(pods: int, execs: int) -> None:
    _report.header("simulated kubelet")
    seconds = await pods_started(pods)
    _report.figure(
        f"pods scheduled and Running ({pods} pods)",
        pods / seconds,
        "pods/s",
        compare="API server budget: 1,000 creates/s; a pod start is ~5 writes",
    )
    seconds = await exec_round_trips(execs)
    _report.figure(
        "exec round trips (sh -c, v4 WebSocket)",
        execs / seconds,
        "execs/s",
        compare=f"{seconds / execs * 1000:.2f} ms each",
    )
    elapsed, restarts = await virtual_hour(50)
    _report.figure(
        "virtual hour, 50 crash-looping pods (wall s)",
        elapsed,
        "s",
        compare=f"{restarts} restarts simulated",
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--execs", type=int, default=300)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.pods, arguments.execs))
