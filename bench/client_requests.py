"""CPU per request of the client's own path: the fanout operator's writes against a canned server.

What ``fanout.py`` measures is the whole operator (watches, cache, queue, reconciles and the
requests); this is the requests alone, so that a few percent of difference in the client's path
(building a request, the pool, the write, llhttp and its callbacks, decoding the answer) shows
above a shared machine's noise. The workload is the fanout reconcile's writes: per parent, its
four ConfigMaps created concurrently (``Client.create``), then a status patch
(``Client.patch_status``), by four workers, through ``Client.connect`` on a kubeconfig, as the
operator sends them. The server, in a process of its own, is a bare asyncio protocol that answers
each request at once with a canned body of the size and headers kube-apiserver sends (a stored
ConfigMap for a create, the parent for a status patch), so nearly all of the CPU it leaves to
measure is the client's.

Each run is a fresh client process (its CPU time from ``time.process_time`` around the workload
only, a warm-up left out). A tree of ``--trees`` is a directory holding an ``etctl`` package
(``.`` for this checkout, another checkout's ``git archive`` for a comparison); runs alternate
between the trees (a, b, b, a, ...), so a machine that slows down mid-series hurts all alike, and
each tree's median and spread (lowest, quartiles, highest) is printed, with the ratio of medians
to the first tree and the median of each round's ratio to the first tree's run of that round.

    .venv/bin/python bench/client_requests.py [--parents N] [--rounds R] [--trees .,DIR]

``--instructions`` counts instead what the client executes per request, under valgrind's
callgrind (two runs per tree, ``--parents`` apart, subtracted so that start-up cancels out): a
count that the machine's load does not change, for telling a few percent apart on a shared
machine. It runs some fifty times slower; a few hundred parents are enough.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from _fanout_workload import CHILDREN, GROUP, KIND, NAMESPACE, PLURAL, VERSION, WORKERS, child
from _report import figure, header, spread
from etctl.runtime import CONFIGMAPS, Client, Resource  # a client run's: its tree's (PYTHONPATH)

WARM_UP = 50
"""Parents written before the clock starts (connections opened, code paths warmed)."""

_HEADERS = (
    "Audit-Id: 6c3d0c58-5d4d-4b1c-9d2a-5b8f0b7b2f6e\r\n"
    "Cache-Control: no-cache, private\r\n"
    "Content-Type: application/json\r\n"
    "X-Kubernetes-Pf-Flowschema-Uid: 3d3b3b5e-0c3f-4f5a-8d0e-9a1b2c3d4e5f\r\n"
    "X-Kubernetes-Pf-Prioritylevel-Uid: 7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d\r\n"
    "Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n"
)


def _stored(body: dict[str, Any], version: int) -> dict[str, Any]:
    """``body`` as the API server stores and returns it (uid, version, managed fields)."""
    meta = body["metadata"]
    return {
        **body,
        "metadata": {
            **meta,
            "uid": "2f0d7c8e-6d3a-4a8e-9a51-0c7b5e0f4a11",
            "resourceVersion": str(version),
            "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "managedFields": [
                {
                    "manager": "etctl",
                    "operation": "Update",
                    "apiVersion": body["apiVersion"],
                    "time": "2024-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:fanout": {}}}},
                }
            ],
        },
    }


def _answer(status: str, body: dict[str, Any]) -> bytes:
    data = json.dumps(body, separators=(",", ":")).encode()
    head = f"HTTP/1.1 {status}\r\n{_HEADERS}Content-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


def _answers() -> tuple[bytes, bytes]:
    """The canned answers: a created ConfigMap (201), a patched parent (200)."""
    owner = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": "parent-00000", "namespace": NAMESPACE, "uid": "u"},
        "spec": {"data": {"owner": "parent-00000", "size": str(CHILDREN)}},
    }
    created = _answer("201 Created", _stored(child(owner, 0), 1001))
    patched = _stored({**owner, "status": {"configMaps": CHILDREN, "observedGeneration": 1}}, 1002)
    return created, _answer("200 OK", patched)


# -- the server process


class _Canned(asyncio.Protocol):
    """Answers each request (head and ``Content-Length`` body) as soon as it is whole."""

    def __init__(self, created: bytes, patched: bytes) -> None:
        self._created = created
        self._patched = patched
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer + data
        out = []
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = buffer[:end].lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15 : head.find(b"\r\n", at)]) if at >= 0 else 0
            if len(buffer) < end + 4 + length:
                break
            out.append(self._created if head.startswith(b"post") else self._patched)
            buffer = buffer[end + 4 + length :]
        self._buffer = buffer
        if out and self._transport is not None:
            self._transport.write(b"".join(out))


async def _serve(conn: Connection) -> None:
    created, patched = _answers()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Canned(created, patched), "127.0.0.1", 0)
    conn.send(server.sockets[0].getsockname()[1])
    await loop.run_in_executor(None, conn.recv)  # until told to stop
    server.close()


def serve(conn: Connection) -> None:
    """The server process."""
    asyncio.run(_serve(conn))


# -- the client process (run on the tree under measurement)


async def _client(kubeconfig: str, parents: int) -> dict[str, float]:
    fanouts = Resource(GROUP, VERSION, PLURAL, KIND)
    desired = {"status": {"configMaps": CHILDREN, "observedGeneration": 1}}

    async def reconcile(index: int) -> None:
        name = f"parent-{index:05d}"
        owner = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{index}"},
            "spec": {"data": {"owner": name, "size": str(CHILDREN)}},
        }
        async with asyncio.TaskGroup() as group:
            for number in range(CHILDREN):
                group.create_task(client.create(CONFIGMAPS, child(owner, number)))
        await client.patch_status(fanouts, name, desired, namespace=NAMESPACE)

    async def work(indices: range) -> None:
        queue = iter(indices)

        async def worker() -> None:
            for index in queue:
                await reconcile(index)

        async with asyncio.TaskGroup() as group:
            for _ in range(WORKERS):
                group.create_task(worker())

    async with Client.connect(kubeconfig) as client:
        await work(range(WARM_UP))
        began = time.process_time()
        await work(range(WARM_UP, WARM_UP + parents))
        cpu = time.process_time() - began
    return {"cpu_s": cpu, "requests": parents * (CHILDREN + 1)}


def _package_root() -> str:
    """The directory this process's ``etctl`` package was imported from."""
    return str(Path(sys.modules["etctl"].__file__ or "").resolve().parents[1])


# -- the coordinator


def _kubeconfig(path: Path, port: int) -> None:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "bench-token"}}],
                "contexts": [
                    {"name": "c", "context": {"cluster": "c", "user": "u", "namespace": NAMESPACE}}
                ],
                "current-context": "c",
            }
        )
    )


def _run(tree: str, kubeconfig: Path, parents: int) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    out = subprocess.run(
        [sys.executable, __file__, "--client", str(kubeconfig), "--parents", str(parents)],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if result["package"] != str(Path(tree).resolve()):
        msg = f"the client run on {tree} imported etctl from {result['package']}"
        raise RuntimeError(msg)
    return result


def _instructions(tree: str, kubeconfig: Path, parents: int) -> int:
    """Instructions a client run on ``tree`` executes in all (valgrind's callgrind counts them)."""
    environment = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "PYTHONHASHSEED": "0"}
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--client",
            str(kubeconfig),
            "--parents",
            str(parents),
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        msg = f"callgrind printed no count for {tree}: {out.stderr[-500:]}"
        raise RuntimeError(msg)
    return int(found.group(1))


def count_instructions(trees: list[str], kubeconfig: Path, parents: int) -> None:
    """Instructions per request of each tree: two runs, ``parents`` apart, subtracted.

    What both runs share (start-up, imports, the warm-up) cancels out; an instruction count does
    not depend on what else the machine runs, so one round tells a few percent apart.
    """
    first = 0.0
    for tree in trees:
        small = _instructions(tree, kubeconfig, WARM_UP)
        large = _instructions(tree, kubeconfig, WARM_UP + parents)
        per_request = (large - small) / (parents * (CHILDREN + 1))
        first = first or per_request
        compare = f"{per_request / first:.3f}x {trees[0]}" if tree != trees[0] else ""
        figure(f"instructions per request ({tree})", per_request / 1000, "k", compare=compare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trees", default=".")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count instructions per request under valgrind (deterministic; needs valgrind)",
    )
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        result = asyncio.run(_client(args.client, args.parents))
        print(json.dumps({**result, "package": _package_root()}), flush=True)
        return
    trees = args.trees.split(",")
    header(
        f"client requests: {args.parents} parents x ({CHILDREN} creates + a status patch) by "
        f"{WORKERS} workers against a canned server, {args.rounds} alternating rounds"
    )
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    server = context.Process(target=serve, args=(theirs,))
    server.start()
    per_request: dict[str, list[float]] = {tree: [] for tree in trees}
    try:
        port = ours.recv()
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = Path(tmp) / "kubeconfig"
            _kubeconfig(kubeconfig, port)
            if args.instructions:
                count_instructions(trees, kubeconfig, args.parents)
                return
            for round_ in range(args.rounds):
                for tree in trees if round_ % 2 == 0 else trees[::-1]:
                    result = _run(tree, kubeconfig, args.parents)
                    micros = result["cpu_s"] * 1e6 / result["requests"]
                    per_request[tree].append(micros)
                    print(f"   round {round_ + 1} {tree}: {micros:.1f} µs/request", flush=True)
    finally:
        ours.send("stop")
        server.join(timeout=30)
    base = per_request[trees[0]]
    for tree, values in per_request.items():
        median = statistics.median(values)
        compare = f"lowest [quartiles] highest: {spread(values)}"
        if tree != trees[0]:
            compare += f"; {median / statistics.median(base):.3f}x {trees[0]}"
        figure(f"CPU per request ({tree})", median, "µs", compare=compare)
        if tree != trees[0]:  # each round's run against the first tree's run of the same round
            paired = [mine / theirs for mine, theirs in zip(values, base, strict=True)]
            print(
                f"     x {trees[0]} in the same round: median {statistics.median(paired):.3f}, "
                f"{spread(paired, 3)}"
            )


if __name__ == "__main__":
    main()
