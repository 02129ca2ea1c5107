"""What admission webhooks add to a write: the same creates with and without the operator's.

Run: ``.venv/bin/python bench/admission.py [--writes N] [--rounds N] [--clients N]``

Three processes, as on a cluster: the embedded API server (``python -m etctl.testing``, CRDs of
``manifests/base/crds``, no kubelet), ``etctl run --webhooks`` (the TFJob kind, its certificate
kept by itself and its CA injected into URL-based configurations on loopback; it watches an idle
namespace, so no reconcile traffic mixes in), and this script, a plain aiohttp client.

The configurations select namespaces by label, so one namespace's writes go through the mutating
and the validating webhook and another's go straight to storage: creates of the same TFJob
alternate between the two, one at a time, so both series see the same machine at the same moment.
Reported, as the median of ``--rounds`` rounds (the range in brackets): p50/p99 latency per
create in each, the difference (target: the webhooks add at most 2 ms at p99 per write on a
two-core machine), the webhook server's own time per review (its
``controller_runtime_webhook_latency_seconds``: reading the request to writing the answer, the
rest of the difference being the API server's calls and the processes taking turns on the
cores), and its throughput: reviews per second answered when ``--clients`` clients post
AdmissionReviews to it directly.

Latency on a shared machine moves with everyone else's load; CPU time much less, so the CPU each
side spends on the webhooks is reported too (nanoseconds the kernel counts per thread, every
thread of the process): the webhook server's per admitted create (its two reviews, TLS and HTTP
included, over the alternating rounds, where it does nothing else), and what an admitted create
costs the API server over a plain one (``--writes`` creates of each in a row, then the difference
per create): the calls, their TLS, and the reviews it builds and reads. Beside it, how long the
webhook server waited, runnable, for a core per admitted create: the other developers' share of
the tail.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import ssl
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

import _report
from _admission import ADMITTED_LABELS, PLURALS, configurations, tfjob
from _cluster import api_server, free_port, stop

_TARGET_MS = 2.0
_NAMESPACE = "etctl-system"
_ADMITTED, _PLAIN = "admitted", "plain"


def scheduled(pid: int) -> tuple[float, float]:
    """Seconds every thread of a process ran, and waited runnable for a core, to the nanosecond.

    From ``/proc/<pid>/task/*/schedstat``: what the kernel counts per thread.
    """
    ran = waited = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            fields = (task / "schedstat").read_text().split()
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
    return ran / 1e9, waited / 1e9


def cpu_seconds(pid: int) -> float:
    """CPU seconds of every thread of a process, to the nanosecond."""
    return scheduled(pid)[0]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class Api:
    """The API server, spoken to as its administrator (plain HTTP on loopback)."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url

    async def send(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.session.request(method, self.url + path, json=body) as response:
            return response.status, await response.json(content_type=None)

    async def create(self, path: str, body: Any) -> None:
        status, answer = await self.send("POST", path, body)
        if status not in (200, 201):
            msg = f"POST {path}: {status} {answer}"
            raise RuntimeError(msg)


async def _operator(
    kubeconfig: Path, port: int, certs: Path, metrics: int
) -> asyncio.subprocess.Process:
    args = [
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--log-level",
        "warning",
        "--jobs",
        "tfjob",
        "--namespace",
        "idle",
        "--metrics-bind-address",
        f"127.0.0.1:{metrics}",
        "--metrics-secure=false",  # read by this script, which has no token
        "--health-probe-bind-address",
        "0",
        "--webhooks",
        "--webhook-host",
        "127.0.0.1",
        "--webhook-port",
        str(port),
        "--webhook-url",
        f"https://127.0.0.1:{port}",
        "--webhook-namespace",
        _NAMESPACE,
        "--webhook-cert-path",
        str(certs),
    ]
    return await asyncio.create_subprocess_exec(sys.executable, "-m", "etctl.cli", *args)


async def _install(api: Api, port: int) -> None:
    """Namespaces, and URL-based configurations that admit one labelled namespace only."""
    for name, extra in ((_NAMESPACE, {}), ("idle", {}), (_ADMITTED, ADMITTED_LABELS)):
        await api.create("/api/v1/namespaces", {"metadata": {"name": name, "labels": extra}})
    await api.create("/api/v1/namespaces", {"metadata": {"name": _PLAIN}})
    for path, document in configurations(_NAMESPACE, f"https://127.0.0.1:{port}"):
        await api.create(path, document)


async def _injected(api: Api, process: asyncio.subprocess.Process) -> None:
    """Wait until the operator injected its CA into both configurations."""
    deadline = time.monotonic() + 120
    while True:
        if process.returncode is not None:
            msg = f"the operator exited with {process.returncode}"
            raise RuntimeError(msg)
        bundles = []
        for plural in PLURALS.values():
            path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
            _, listed = await api.send("GET", path)
            bundles += [
                h["clientConfig"].get("caBundle") for d in listed["items"] for h in d["webhooks"]
            ]
        if bundles and all(bundles):
            return
        if time.monotonic() > deadline:
            msg = "the operator did not provision its webhook certificate"
            raise RuntimeError(msg)
        await asyncio.sleep(0.05)


async def _writes(api: Api, count: int, prefix: str) -> dict[str, list[float]]:
    """Create ``count`` TFJobs in each namespace, alternating; seconds per create."""
    latencies: dict[str, list[float]] = {_ADMITTED: [], _PLAIN: []}
    for index in range(count):
        for namespace in (_ADMITTED, _PLAIN) if index % 2 else (_PLAIN, _ADMITTED):
            job = tfjob(f"{prefix}-{index}")
            started = time.perf_counter()
            await api.create(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs", job)
            latencies[namespace].append(time.perf_counter() - started)
    return latencies


async def _added_cpu(api: Api, server: int, count: int) -> float:
    """CPU seconds the API server spends on an admitted create beyond a plain one."""
    per_create = {}
    for namespace in (_PLAIN, _ADMITTED):
        before = cpu_seconds(server)
        for index in range(count):
            job = tfjob(f"cpu-{index}")
            await api.create(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs", job)
        per_create[namespace] = (cpu_seconds(server) - before) / count
    return per_create[_ADMITTED] - per_create[_PLAIN]


async def _reviews_per_second(port: int, ca: bytes, count: int, clients: int) -> float:
    """AdmissionReviews answered per second by the webhook server, posted directly to it."""
    context = ssl.create_default_context(cadata=ca.decode())
    job = tfjob("direct")
    job["metadata"]["namespace"] = _ADMITTED
    gvk = {"group": "kubeflow.org", "version": "v1", "kind": "TFJob"}
    gvr = {"group": "kubeflow.org", "version": "v1", "resource": "tfjobs"}
    url = f"https://127.0.0.1:{port}/validate-kubeflow-org-v1-tfjob"
    pending = iter(range(count))

    async def client(session: aiohttp.ClientSession) -> None:
        for _ in pending:
            request = {"uid": str(uuid.uuid4()), "kind": gvk, "resource": gvr}
            request.update(operation="CREATE", object=job, name="direct", namespace=_ADMITTED)
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
            async with session.post(url, json={**review, "request": request}) as response:
                answer = await response.json()
                assert answer["response"]["allowed"], answer

    connector = aiohttp.TCPConnector(ssl=context, limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for _ in range(clients):
                group.create_task(client(session))
        return count / (time.perf_counter() - started)


async def _server_time(session: aiohttp.ClientSession, metrics: int) -> tuple[float, float]:
    """The webhook server's total seconds and count of reviews served, from its metrics."""
    async with session.get(f"http://127.0.0.1:{metrics}/metrics") as response:
        page = await response.text()
    total = count = 0.0
    for line in page.splitlines():
        if line.startswith("controller_runtime_webhook_latency_seconds_sum"):
            total += float(line.rpartition(" ")[2])
        elif line.startswith("controller_runtime_webhook_latency_seconds_count"):
            count += float(line.rpartition(" ")[2])
    return total, count


def _median(name: str, values: list[float], unit: str, compare: str = "") -> None:
    spread = f"rounds {min(values):.2f}-{max(values):.2f}"
    _report.figure(
        name, statistics.median(values), unit, compare=", ".join(filter(None, [spread, compare]))
    )


async def main(writes: int, rounds: int, clients: int) -> None:
    _report.header("admission webhooks: the same creates with and without them")
    ms = 1000.0
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        async with api_server(workdir, kubelet=False) as server, aiohttp.ClientSession() as session:
            api = Api(session, server.url)
            port, metrics = free_port(), free_port()
            await _install(api, port)
            operator = await _operator(server.kubeconfig, port, workdir / "certs", metrics)
            try:
                await _injected(api, operator)
                await _writes(api, max(writes // 10, 5), "warm-up")  # both paths, once
                for round_ in range(rounds):
                    before = await _server_time(session, metrics)
                    operator_before = scheduled(operator.pid)
                    latencies = await _writes(api, writes, f"round-{round_}")
                    operator_after = scheduled(operator.pid)
                    operator_cpu, operator_wait = (
                        after_ - before_
                        for after_, before_ in zip(operator_after, operator_before, strict=True)
                    )
                    after = await _server_time(session, metrics)
                    plain, admitted = latencies[_PLAIN], latencies[_ADMITTED]
                    for name, value in (
                        ("plain p50", percentile(plain, 0.5)),
                        ("plain p99", percentile(plain, 0.99)),
                        ("admitted p50", percentile(admitted, 0.5)),
                        ("admitted p99", percentile(admitted, 0.99)),
                        ("added p50", percentile(admitted, 0.5) - percentile(plain, 0.5)),
                        ("added p99", percentile(admitted, 0.99) - percentile(plain, 0.99)),
                        ("server", (after[0] - before[0]) / max(after[1] - before[1], 1)),
                        ("operator cpu", operator_cpu / len(admitted) * 1e3),
                        ("operator wait", operator_wait / len(admitted) * 1e3),
                    ):
                        figures.setdefault(name, []).append(value * ms)
                added_cpu = await _added_cpu(api, server.process.pid, writes)
                _, secret = await api.send(
                    "GET", f"/api/v1/namespaces/{_NAMESPACE}/secrets/etctl-webhook-server-cert"
                )
                ca = base64.b64decode(secret["data"]["ca.crt"])
                rate = await _reviews_per_second(port, ca, writes * 2, clients)
            finally:
                await stop(operator)
    _median("creates without webhooks, p50", figures["plain p50"], "ms")
    _median("creates without webhooks, p99", figures["plain p99"], "ms")
    _median("creates through both webhooks, p50", figures["admitted p50"], "ms")
    _median("creates through both webhooks, p99", figures["admitted p99"], "ms")
    _median("added per write by the webhooks, p50", figures["added p50"], "ms")
    _median(
        "added per write by the webhooks, p99",
        figures["added p99"],
        "ms",
        compare=f"target {_TARGET_MS:g} ms",
    )
    _median("webhook server's own time per review, mean", figures["server"], "ms")
    _median("webhook server's CPU per admitted create", figures["operator cpu"], "µs")
    _median("webhook server's wait for a core per create", figures["operator wait"], "µs")
    _report.figure(
        "API server's CPU added per admitted create",
        added_cpu * 1e6,
        "µs",
        compare=f"{writes} creates of each in a row",
    )
    _report.figure("reviews answered per second", rate, "/s", compare=f"{clients} clients, direct")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=500, help="creates per namespace per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of writes")
    parser.add_argument("--clients", type=int, default=4, help="clients posting reviews directly")
    args = parser.parse_args()
    asyncio.run(main(args.writes, args.rounds, args.clients))
