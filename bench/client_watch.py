"""Watch throughput: etctl's client against kubernetes_asyncio's ``Watch``, same bytes, same server.

A local aiohttp server streams N pod events (pre-encoded, about 4 KiB each) as one chunked watch
response; each client reads and decodes all of them. etctl yields plain dicts; kubernetes_asyncio's
``Watch`` over ``CoreV1Api.list_namespaced_pod`` builds ``V1Pod`` models, its normal use.

    .venv/bin/python bench/client_watch.py [--events N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

import yaml
from aiohttp import web
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

from _report import figure, header
from cache_memory import sample_pod
from etctl.runtime import PODS, Client


def encoded_events(count: int) -> bytes:
    lines = (
        json.dumps({"type": "ADDED", "object": sample_pod(i)}).encode() + b"\n"
        for i in range(count)
    )
    return b"".join(lines)


async def serve(body: bytes) -> tuple[web.AppRunner, str]:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        view = memoryview(body)
        for start in range(0, len(view), 256 * 1024):
            await response.write(view[start : start + 256 * 1024].tobytes())
        return response

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/{ns}/pods", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


def kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


async def etctl_rate(config: Path, count: int) -> float:
    async with Client.connect(config) as client:
        started = time.perf_counter()
        seen = 0
        async with client.watch(PODS, namespace="bench") as stream:
            async for _event in stream:
                seen += 1
        assert seen == count
        return count / (time.perf_counter() - started)


async def kubernetes_asyncio_rate(config: Path, count: int) -> float:
    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(config), client_configuration=configuration)
    async with k8s.ApiClient(configuration) as api:
        core = k8s.CoreV1Api(api)
        watcher = k8s_watch.Watch()
        started = time.perf_counter()
        seen = 0
        async with watcher.stream(core.list_namespaced_pod, "bench", timeout_seconds=60) as events:
            async for _event in events:
                seen += 1
        await watcher.close()
        assert seen == count
        return count / (time.perf_counter() - started)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20000)
    args = parser.parse_args()
    body = encoded_events(args.events)
    runner, url = await serve(body)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = kubeconfig(Path(tmp) / "kubeconfig", url)
            header(f"watch throughput: {args.events} pod events ({len(body) / 2**20:.0f} MiB)")
            theirs = await kubernetes_asyncio_rate(config, args.events)
            ours = await etctl_rate(config, args.events)
            figure("kubernetes_asyncio Watch (V1Pod models)", theirs, "events/s")
            figure(
                "etctl Client.watch (plain dicts)",
                ours,
                "events/s",
                compare=f"{ours / theirs:.1f}x",
            )
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
