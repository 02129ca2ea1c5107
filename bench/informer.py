"""Watch ingest: events per second from the embedded API server into an informer's cache.

The server runs in its own process (so it has its own core and GIL) with N pods created and then
given a status: 2N events (an ADDED and a MODIFIED per pod) in its watch history. Each consumer
watches from the resourceVersion before the first create, so the server replays all of them as
fast as it can, and the clock stops when the last one has been handled. Four figures:

* the server's ceiling: a raw consumer that only reads the bytes and counts lines;
* etctl end to end: an :class:`Informer` (watch decoding, transform, compaction, indexed store,
  a no-op handler) fed by that watch, with and without compaction;
* the runtime's ceiling: the same informer fed the bytes the raw consumer recorded, through the
  same line splitter and decoder, with no server and no network.

Whichever ceiling is lower is what saturates end to end.

Then the cold start: a fresh informer listing ``--cold-pods`` pods (10,000 by default) until it has
synced, against the same pieces: the server's ceiling (the list pages fetched as bytes only), etctl
end to end, the runtime's ceiling (the recorded pages decoded, transformed, compacted and stored
with no server), and a cold process (interpreter start, imports, kubeconfig, list, synced).

    .venv/bin/python bench/informer.py [--pods N] [--cold-pods N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, cast

import aiohttp

from _report import figure, header
from cache_memory import sample_pod
from etctl.runtime import NAMESPACES, PODS, ObjectView, RealClock, Resource, Tombstone
from etctl.runtime import _requests as wire
from etctl.runtime._client import Client, ClientOptions, ObjectList, WatchEvent, WatchStream
from etctl.runtime._exchange import HttpResponse
from etctl.runtime._informer import Informer
from etctl.runtime._reflector import ListerWatcher
from etctl.testing import ApiServer

NAMESPACE = "bench"
CHUNK = 64 * 1024


# -- the server process


def _pod(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = sample_pod(index)
    meta = pod["metadata"]
    for generated in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        meta.pop(generated)
    meta["namespace"] = NAMESPACE
    status = pod.pop("status")
    return pod, status


async def _serve(conn: Connection, pods: int) -> None:
    async with ApiServer(watch_buffer=4 * pods) as server:
        storage = server.storage
        storage.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        start = server.store.rv
        for index in range(pods):
            pod, status = _pod(index)
            created = storage.create(PODS, pod, namespace=NAMESPACE)
            storage.update(
                PODS, {**created, "status": status}, namespace=NAMESPACE, subresource="status"
            )
        conn.send((server.url, str(start), str(server.store.rv)))
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)


def serve(conn: Connection, pods: int) -> None:
    """The server process: create the pods, report (url, start RV, end RV), serve until told."""
    asyncio.run(_serve(conn, pods))


# -- consumers


async def raw_rate(url: str, start: str, events: int) -> tuple[float, list[bytes]]:
    """Events per second a consumer that only counts lines gets; the chunks it received."""
    chunks: list[bytes] = []
    lines = 0
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        began = time.perf_counter()
        query = {"watch": "true", "resourceVersion": start}
        async with session.get(f"{url}/api/v1/namespaces/{NAMESPACE}/pods", params=query) as resp:
            while lines < events:
                chunk = await resp.content.readany()
                if not chunk:
                    break
                chunks.append(chunk)
                lines += chunk.count(b"\n")
        elapsed = time.perf_counter() - began
    assert lines >= events, f"the server sent {lines} of {events} events"
    return events / elapsed, chunks


class NoOp:
    """A handler that does nothing but count, and says when it has seen enough."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.seen = 0
        self.done = asyncio.Event()

    def _count(self) -> None:
        self.seen += 1
        if self.seen >= self.target:
            self.done.set()

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        self._count()

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        self._count()

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        self._count()


class FromVersion:
    """A lister whose list is empty at a given RV, so the watch replays the server's history."""

    def __init__(self, inner: ListerWatcher, start: str) -> None:
        self._inner = inner
        self._start = start

    async def pages(self, res: Resource, **_: Any) -> AsyncIterator[ObjectList]:
        yield ObjectList([], self._start)

    def watch(
        self, res: Resource, **options: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        return self._inner.watch(res, **options)


class _Recorded:
    """Stands for an HTTP response: hands out recorded chunks, then the end of the body."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = iter(chunks)

    async def read(self) -> bytes:
        return next(self._chunks, b"")

    def close(self) -> None:
        self._chunks = iter(())


class Recorded:
    """A lister that replays recorded watch bytes once, through the client's own decoder."""

    def __init__(self, chunks: list[bytes], start: str) -> None:
        self._chunks = chunks
        self._start = start
        self._served = False

    async def pages(self, res: Resource, **_: Any) -> AsyncIterator[ObjectList]:
        yield ObjectList([], self._start)

    def watch(
        self, res: Resource, **_: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        first, self._served = not self._served, True
        return self._stream(self._chunks if first else [])

    @asynccontextmanager
    async def _stream(self, chunks: list[bytes]) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        if not chunks:
            await asyncio.Event().wait()  # later watches stay open and quiet until cancelled
        yield WatchStream(
            _Recorded(chunks), description="recorded", idle_timeout=None, max_line_bytes=2**25
        )


async def informer_rate(lister: ListerWatcher, events: int, *, compact: bool) -> float:
    gc.collect()  # every run starts from the same heap: the previous cache is gone
    informer = Informer(lister, PODS, clock=RealClock(), namespace=NAMESPACE, compact=compact)
    handler = NoOp(events)
    informer.add_handler(handler)
    async with asyncio.TaskGroup() as group:
        began = time.perf_counter()
        task = group.create_task(informer.run(), name="bench:informer")
        await handler.done.wait()
        elapsed = time.perf_counter() - began
        task.cancel()
    return events / elapsed


async def measure(url: str, start: str, events: int) -> None:
    server, chunks = await raw_rate(url, start, events)
    size = sum(map(len, chunks)) / events
    figure("event size on the wire", size, "bytes")
    figure("server ceiling (raw consumer, no decoding)", server, "events/s")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "kubeconfig"
        config.write_text(json.dumps(_kubeconfig(url)))
        options = ClientOptions(request_timeout=60, watch_idle_timeout=600)
        async with Client.connect(config, options=options) as client:
            for compact in (True, False):
                rate = await informer_rate(FromVersion(client, start), events, compact=compact)
                label = "etctl end to end" + ("" if compact else ", compact=False")
                figure(label, rate, "events/s", compare=f"{rate / server:.2f}x the server ceiling")
    ceilings = {}
    for compact in (True, False):
        rate = await informer_rate(Recorded(chunks, start), events, compact=compact)
        ceilings[compact] = rate
        label = "runtime ceiling (recorded bytes)" + ("" if compact else ", compact=False")
        figure(label, rate, "events/s", compare=f"{rate / server:.2f}x the server ceiling")
    side = "the runtime" if ceilings[True] < server else "the server"
    print(f"   saturates (default informer): {side}")


# -- cold start


async def raw_list(url: str, limit: int) -> tuple[float, list[bytes]]:
    """Seconds a consumer that only reads the bytes takes to fetch every list page; the pages."""
    pages: list[bytes] = []
    timeout = aiohttp.ClientTimeout(total=600)
    path = f"{url}/api/v1/namespaces/{NAMESPACE}/pods"
    async with aiohttp.ClientSession(timeout=timeout) as session:
        began = time.perf_counter()
        token = ""
        while True:
            query = {"limit": str(limit), **({"continue": token} if token else {})}
            if not token:
                query["resourceVersion"] = "0"
            async with session.get(path, params=query) as resp:
                body = await resp.read()
            pages.append(body)
            # Only the token is looked up, with a byte search: no decoding on this side.
            marker = body.find(b'"continue":"')
            if marker < 0:
                break
            start = marker + len(b'"continue":"')
            token = body[start : body.index(b'"', start)].decode()
            if not token:
                break
        return time.perf_counter() - began, pages


class RecordedPages:
    """A lister that serves recorded list pages through the client's own decoding."""

    def __init__(self, pages: list[bytes]) -> None:
        self._pages = pages

    async def pages(self, res: Resource, **_: Any) -> AsyncIterator[ObjectList]:
        for body in self._pages:
            raw = HttpResponse(200, {}, body)
            yield wire.list_page(res, wire.decode_object(raw))

    def watch(
        self, res: Resource, **_: Any
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent]]:
        return self._quiet()

    @asynccontextmanager
    async def _quiet(self) -> AsyncIterator[AsyncIterator[WatchEvent]]:
        await asyncio.Event().wait()  # the watch after the list: open and quiet until cancelled
        yield cast(AsyncIterator[WatchEvent], None)


async def sync_seconds(lister: ListerWatcher) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) from a fresh informer's start until synced."""
    gc.collect()
    informer = Informer(lister, PODS, clock=RealClock(), namespace=NAMESPACE)
    async with asyncio.TaskGroup() as group:
        began = time.perf_counter()
        cpu = time.process_time()
        task = group.create_task(informer.run(), name="bench:informer")
        await informer.wait_for_sync(600)
        elapsed = time.perf_counter() - began
        cpu = time.process_time() - cpu
        task.cancel()
    return elapsed, cpu


_COLD = """
import asyncio, sys
from etctl.log import configure
from etctl.runtime import PODS, Client, ClientOptions, RealClock
from etctl.runtime._informer import Informer

async def main():
    configure(level="warning")
    options = ClientOptions(request_timeout=600)
    async with Client.connect(sys.argv[1], options=options) as client:
        informer = Informer(client, PODS, clock=RealClock(), namespace=sys.argv[2])
        async with asyncio.TaskGroup() as group:
            task = group.create_task(informer.run())
            await informer.wait_for_sync(600)
            print(len(informer.store), flush=True)
            task.cancel()

asyncio.run(main())
"""


def cold_process(config: Path) -> float:
    """Seconds from spawning a fresh Python process until its pod informer has synced."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _COLD, str(config), NAMESPACE],
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - began
    assert int(done.stdout) > 0, done.stdout
    return elapsed


async def measure_cold(url: str, pods: int) -> None:
    server, pages = await raw_list(url, 500)
    figure("server ceiling (list pages as bytes)", server, "s")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "kubeconfig"
        config.write_text(json.dumps(_kubeconfig(url)))
        options = ClientOptions(request_timeout=600)
        async with Client.connect(config, options=options) as client:
            end_to_end, cpu = await sync_seconds(client)
        figure(
            "etctl end to end (fresh informer to synced)", end_to_end, "s", compare="target <= 3 s"
        )
        figure("  etctl's CPU time in it", cpu, "s")
        runtime, cpu = await sync_seconds(RecordedPages(pages))
        figure("runtime ceiling (recorded pages, no server)", runtime, "s")
        figure("  its CPU time", cpu, "s")
        figure(
            "cold process (start, imports, list, synced)",
            cold_process(config),
            "s",
            compare="target <= 3 s",
        )
    side = "the server" if server > runtime else "the runtime"
    print(f"   the larger share of a cold sync ({pods} pods): {side}")


def _kubeconfig(url: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "bench", "cluster": {"server": url}}],
        "users": [{"name": "bench", "user": {"token": "bench"}}],
        "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        "current-context": "bench",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--cold-pods", type=int, default=10_000)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=serve, args=(theirs, args.pods), name="bench-apiserver")
    process.start()
    try:
        url, start, end = ours.recv()
        events = int(end) - int(start)
        header(f"informer ingest: {events} pod events replayed from the server's history")
        asyncio.run(measure(url, start, events))
    finally:
        ours.send("stop")
        process.join(timeout=30)
    ours, theirs = context.Pipe()
    process = context.Process(target=serve, args=(theirs, args.cold_pods), name="bench-apiserver")
    process.start()
    try:
        url, _, _ = ours.recv()
        header(f"informer cold start: {args.cold_pods} pods listed into a fresh informer")
        asyncio.run(measure_cold(url, args.cold_pods))
    finally:
        ours.send("stop")
        process.join(timeout=30)


if __name__ == "__main__":
    main()
