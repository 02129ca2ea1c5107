"""Processes the operator benchmarks share: the embedded API server, ``etctl run``, and a user.

* :func:`api_server`: ``python -m etctl.testing`` (the simulated kubelet and scheduler included,
  every CRD of ``manifests/crds`` served) in its own process, with a kubeconfig for it;
* :func:`operator`: ``etctl run`` against it in another process, entered once ``/readyz`` says its
  caches synced;
* the user: plain aiohttp (:func:`post`, :func:`create_all`, :func:`watch`), so that the figures
  are the operator's and the server's, not a client library's;
* the measures: CPU seconds and resident memory of a process, from Linux ``/proc``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
CRDS = ROOT / "manifests" / "base" / "crds"
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences")
"""Metadata the server sets (or that names objects elsewhere), removed before writing one again."""
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_bytes(pid: int) -> int:
    """Resident memory of a process."""
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE


def request_counts(log: Path, *, user_agent: str, skip: int = 0) -> Counter[str]:
    """Writes in a server's request log (past its first ``skip`` lines) by one client.

    Keyed ``verb resource[/subresource]`` (create, update, patch, delete), as the verbs are named
    in RBAC.
    """
    counts = Counter[str]()
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    with log.open(encoding="utf-8") as lines:
        for index, line in enumerate(lines):
            if index < skip:
                continue
            record = json.loads(line)
            verb = verbs.get(record["method"])
            if verb is None or not record["user_agent"].startswith(user_agent):
                continue
            counts[f"{verb} {_resource_of(record['path'])}"] += 1
    return counts


def _resource_of(path: str) -> str:
    """``plural[/subresource]`` of a resource path (``/api/v1/namespaces/ns/pods/p/status``)."""
    parts = path.strip("/").split("/")
    parts = parts[2:] if parts[0] == "api" else parts[3:]
    if len(parts) >= 2 and parts[0] == "namespaces" and len(parts) > 2:
        parts = parts[2:]
    plural = parts[0] if parts else ""
    return f"{plural}/{parts[2]}" if len(parts) > 2 else plural


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def stop(process: asyncio.subprocess.Process) -> None:
    """Terminate ``process`` and wait for it (killed after 30 s)."""
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()


@dataclass
class Server:
    """The API server process, its URL and a kubeconfig for it."""

    process: asyncio.subprocess.Process
    url: str
    kubeconfig: Path


@contextlib.asynccontextmanager
async def api_server(
    workdir: Path,
    *,
    pods: int = 300,
    nodes: int = 16,
    kubelet: bool = True,
    request_log: Path | None = None,
) -> AsyncIterator[Server]:
    """``python -m etctl.testing`` with room for ``pods`` pods on ``nodes`` nodes.

    Its watch events are as late as a lightly loaded real server's (the command's default);
    ``request_log`` names a file that gets a line per request.
    """
    kubeconfig = workdir / f"kubeconfig-{time.monotonic_ns()}"
    args = ["--kubeconfig", str(kubeconfig), "--crds", str(CRDS)]
    if request_log is not None:
        args += ["--request-log", str(request_log)]
    if kubelet:
        args += ["--nodes", str(nodes), "--node-pods", str(pods // nodes + 50)]
        args += ["--node-cpu", "1000", "--node-memory", "4000Gi"]
    else:
        args.append("--no-kubelet")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "etctl.testing", *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        url = (await process.stdout.readline()).decode().strip()
        if not url:
            msg = "the API server did not start"
            raise RuntimeError(msg)
        yield Server(process, url, kubeconfig)
    finally:
        await stop(process)


@dataclass
class Operator:
    """The ``etctl run`` process and where its metrics are served."""

    process: asyncio.subprocess.Process
    metrics_url: str

    async def metrics(self, session: aiohttp.ClientSession) -> str:
        """The operator's ``/metrics`` page."""
        async with session.get(self.metrics_url) as response:
            return await response.text()


@contextlib.asynccontextmanager
async def operator(
    server: Server, session: aiohttp.ClientSession, extra: Sequence[str] = ()
) -> AsyncIterator[Operator]:
    """``etctl run`` against ``server`` with ``extra`` flags, entered once its caches synced."""
    probes, metrics = free_port(), free_port()
    args = ["run", "--kubeconfig", str(server.kubeconfig), "--log-level", "warning"]
    # Plain metrics: the benchmarks' API server authenticates no one, so no token could be
    # reviewed (bench/startup.py measures the default, secure metrics).
    args += ["--metrics-bind-address", f"127.0.0.1:{metrics}", "--metrics-secure=false"]
    args += ["--health-probe-bind-address", f"127.0.0.1:{probes}", *extra]
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "etctl.cli", *args)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.returncode is not None:
                msg = f"the operator exited with {process.returncode}"
                raise RuntimeError(msg)
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{probes}/readyz") as response:
                    if response.status == 200:
                        break
            if time.monotonic() > deadline:
                msg = "the operator did not become ready"
                raise RuntimeError(msg)
            await asyncio.sleep(0.05)
        yield Operator(process, f"http://127.0.0.1:{metrics}/metrics")
    finally:
        await stop(process)


async def post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> None:
    """Create ``body`` at collection ``url``."""
    async with session.post(url, json=body) as response:
        if response.status != 201:
            msg = f"create failed: {response.status} {await response.text()}"
            raise RuntimeError(msg)
        await response.read()


async def create_all(
    session: aiohttp.ClientSession, writes: Sequence[tuple[str, dict[str, Any]]], clients: int
) -> None:
    """POST every ``(collection url, body)``, in order, with ``clients`` concurrent clients."""
    pending = iter(writes)

    async def client() -> None:
        for url, body in pending:
            await post(session, url, body)

    async with asyncio.TaskGroup() as group:
        for index in range(clients):
            group.create_task(client(), name=f"client-{index}")


async def watch(
    session: aiohttp.ClientSession, url: str, on_event: Callable[[dict[str, Any]], None]
) -> None:
    """Follow collection ``url`` from now on, until cancelled (a closed watch is reopened)."""
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    version = ""
    while True:
        params = {"watch": "true", "timeoutSeconds": "3600"}
        if version:
            params["resourceVersion"] = version
        async with session.get(url, params=params, timeout=timeout) as response:
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line:
                        continue
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        msg = f"watch of {url} failed: {event['object']}"
                        raise RuntimeError(msg)
                    version = event["object"]["metadata"].get("resourceVersion", version)
                    on_event(event["object"])


def metric_sums(
    page: str, names: Sequence[str], *, label: str = ""
) -> dict[tuple[str, str], float]:
    """``(metric, controller) -> value`` of ``names`` on a Prometheus text page, summed.

    With ``label``, keyed by that label's value instead of the controller (or resource).
    """
    values: dict[tuple[str, str], float] = {}
    for line in page.splitlines():
        name, _, rest = line.partition("{")
        if line.startswith("#") or name not in names:
            continue
        labels, _, value = rest.rpartition("} ")
        found = dict(part.split("=", 1) for part in labels.split(",") if "=" in part)
        controller = found.get("controller", found.get("resource", '""')).strip('"')
        if label:
            controller = found.get(label, '""').strip('"')
        values[(name, controller)] = values.get((name, controller), 0.0) + float(value)
    return values
