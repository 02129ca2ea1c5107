"""Jobs at scale: hundreds of jobs created at once, until all run, against the floor.

Run: ``.venv/bin/python bench/jobs_at_scale.py [--trainingjobs N] [--tfjobs N] [--pytorchjobs N]
[--rounds R]``

The embedded API server with its simulated kubelet runs in one process (``python -m
etctl.testing``), the operator in another (``etctl run`` for one job kind, with its defaults unless
``--max-concurrent-reconciles`` is given), and this process is the user: it creates every job at
once (16 clients, as fast as the server takes them) and watches until each job has its ``Running``
condition. Three workloads, each on a fresh server and operator:

* ``--trainingjobs`` TrainingJobs of ``--workers`` workers. Each also gets a launcher (started once
  every worker runs), a headless service per worker, an ssh Secret, and the launcher's
  ServiceAccount, Role, RoleBinding and ConfigMap. ``--scaleout-at`` seconds after the first
  create, while most jobs are still starting, a ScaleOut of 2 workers is submitted for the first
  job that runs by then: the figure is how long until both new worker pods exist;
* ``--tfjobs`` TFJobs of ``--workers`` workers (a pod and a service each);
* ``--pytorchjobs`` elastic PyTorchJobs of ``--workers`` workers (``elasticPolicy`` 1 to
  workers + 8, c10d): a pod and a Service per worker and the job's rendezvous Service. As for
  TrainingJobs, ``--scaleout-at`` seconds in, a ScaleOut of 2 workers naming the first PyTorchJob
  that runs (``selector.kind: PyTorchJob``) is timed until both new worker pods exist.

The operator's writes are counted from the server's request log, by verb and resource: creates
against the objects it had to make, and its status writes against the changes they made to the
jobs (the job watch sees each), so a write that changed nothing shows, and so does a write the
server refused (the operator's own count of answers 409, a Conflict, and 422, a failed ``test`` of
a guarded JSON patch or an invalid object). The server's watch events
are as late as a lightly loaded real server's (``python -m etctl.testing``'s default).

The comparison is the floor: the very objects the operator created (read back from the server,
server-set fields removed), written directly to a fresh server in the order the operator created
them, by the same 16 clients, from the first create until every pod runs: the server's own create
rate, and its kubelet's start rate, for exactly that work. The target is the operator within 1.5x
of it. Each round runs the operator, then the floor; with ``--rounds`` above 1 the medians are
printed (the machine's other load moves both). CPU shares over the operator's run are printed
too: an operator far below a core while jobs wait is an operator that waits instead of working.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

import _report
from _cluster import (
    SERVER_SET,
    Server,
    api_server,
    cpu_seconds,
    create_all,
    metric_sums,
    operator,
    post,
    request_counts,
    watch,
)

_NS = "default"
_CLIENTS = 16
_TIMEOUT = 900.0
_TJ_API = "apis/kai.alibabacloud.com/v1alpha1"

# What the operator writes for a job; the floor replays it in the operator's order.
_CHILDREN = (
    ("api/v1", "secrets"),
    ("api/v1", "configmaps"),
    ("api/v1", "serviceaccounts"),
    ("apis/rbac.authorization.k8s.io/v1", "roles"),
    ("apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    ("api/v1", "services"),
    ("api/v1", "pods"),
)
_DEFAULTS = {("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")}


# -- the workloads


def trainingjob(name: str, workers: int) -> dict[str, Any]:
    """A TrainingJob of ``workers`` workers and a launcher (ssh mode: a generated key)."""
    container = {"name": "main", "image": "horovod:0.28", "command": ["sleep", "infinity"]}
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": name, "namespace": _NS},
        "spec": {
            "etReplicaSpecs": {
                "launcher": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
                "worker": {
                    "replicas": workers,
                    "minReplicas": 1,
                    "maxReplicas": workers + 8,
                    "template": {"spec": {"containers": [container]}},
                },
            }
        },
    }


def tfjob(name: str, workers: int) -> dict[str, Any]:
    """A TFJob of ``workers`` workers."""
    container = {"name": "tensorflow", "image": "tensorflow:2.16", "command": ["sleep", "inf"]}
    template = {"spec": {"containers": [container]}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": _NS},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"replicas": workers, "restartPolicy": "Never", "template": template}
            }
        },
    }


def pytorchjob(name: str, workers: int) -> dict[str, Any]:
    """An elastic PyTorchJob of ``workers`` workers (torchrun, c10d rendezvous)."""
    container = {"name": "pytorch", "image": "pytorch:2.5", "command": ["sleep", "infinity"]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": _NS},
        "spec": {
            "elasticPolicy": {
                "rdzvBackend": "c10d",
                "minReplicas": 1,
                "maxReplicas": workers + 8,
            },
            "pytorchReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                }
            },
        },
    }


def scaleout(job: str, count: int, kind: str | None = None) -> dict[str, Any]:
    """A ScaleOut adding ``count`` workers to job ``job`` (a TrainingJob, unless ``kind``)."""
    selector = {"name": job} if kind is None else {"name": job, "kind": kind}
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "ScaleOut",
        "metadata": {"name": f"{job}-out", "namespace": _NS},
        "spec": {"selector": selector, "toAdd": {"count": count}, "timeout": 600},
    }


@dataclass(frozen=True)
class Workload:
    """One kind of job: its plugin, collection, how to build one, how many.

    ``kind`` names the job's kind in a ScaleOut's selector (None: the scalers' default,
    TrainingJob); ``scales`` says whether the run times a ScaleOut during the load.
    """

    plugin: str
    api: str
    plural: str
    build: Callable[[str, int], dict[str, Any]]
    jobs: int
    workers: int
    kind: str | None = None
    scales: bool = False

    def names(self) -> list[str]:
        return [f"{self.plugin}-{index:04d}" for index in range(self.jobs)]

    def describe(self) -> str:
        return f"{self.jobs} {self.plugin}s x {self.workers} workers"


# -- one operator run


@dataclass
class Run:
    """What one operator run measured."""

    seconds: float = 0.0
    first_running: float = 0.0
    operator_cpu: float = 0.0
    server_cpu: float = 0.0
    scaleout: float | None = None
    scaleout_at: float = 0.0
    starting_at_scaleout: int = 0
    written: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    writes: Counter[str] = field(default_factory=Counter)
    job_changes: int = 0
    conflicts: int = 0
    refused: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def pods(self) -> int:
        return sum(1 for path, _ in self.written if path.endswith("/pods"))


def _running(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Running" and c.get("status") == "True" for c in conditions)


class _Progress:
    """When each job ran and each pod appeared, fed by watches."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.running: dict[str, float] = {}
        self.pods: dict[str, float] = {}
        self.versions: set[tuple[str, str]] = set()
        self.all_running = asyncio.Event()
        self.some_running = asyncio.Event()
        self.pod_seen = asyncio.Event()

    def on_job(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        self.versions.add((name, obj["metadata"]["resourceVersion"]))
        if name not in self.running and _running(obj):
            self.running[name] = time.perf_counter()
            self.some_running.set()
            if len(self.running) == self.jobs:
                self.all_running.set()

    def on_pod(self, obj: dict[str, Any]) -> None:
        self.pods.setdefault(obj["metadata"]["name"], time.perf_counter())
        self.pod_seen.set()


async def run_operator(
    workload: Workload, workdir: Path, flags: list[str], scaleout_at: float | None, verbose: bool
) -> Run:
    """Create every job at once with the operator running; measure until every one runs."""
    connector = aiohttp.TCPConnector(limit=_CLIENTS + 8)
    pods = workload.jobs * (workload.workers + 1) + 16
    log = workdir / f"requests-{workload.plugin}-{time.monotonic_ns()}.jsonl"
    async with (
        api_server(workdir, pods=pods, request_log=log) as server,
        aiohttp.ClientSession(connector=connector) as session,
        operator(server, session, ["--jobs", workload.plugin, *flags]) as op,
    ):
        collection = f"{server.url}/{workload.api}/namespaces/{_NS}/{workload.plural}"
        progress = _Progress(workload.jobs)
        run = Run()
        jobs = [(collection, workload.build(name, workload.workers)) for name in workload.names()]
        async with asyncio.timeout(_TIMEOUT), asyncio.TaskGroup() as group:
            watches = [
                group.create_task(watch(session, collection, progress.on_job), name="jobs"),
                group.create_task(
                    watch(session, f"{server.url}/api/v1/pods", progress.on_pod), name="pods"
                ),
            ]
            await asyncio.sleep(0.2)  # the watches are open
            skip = sum(1 for _ in log.open(encoding="utf-8"))
            operator_cpu = cpu_seconds(op.process.pid)
            server_cpu = cpu_seconds(server.process.pid)
            start = time.perf_counter()
            group.create_task(create_all(session, jobs, _CLIENTS), name="create")
            if scaleout_at is not None:
                scaling = _Scaling(workload, server, start, scaleout_at)
                await _scale_out(session, scaling, progress, run, verbose)
            await progress.all_running.wait()
            run.seconds = max(progress.running.values()) - start
            run.operator_cpu = (cpu_seconds(op.process.pid) - operator_cpu) / run.seconds
            run.server_cpu = (cpu_seconds(server.process.pid) - server_cpu) / run.seconds
            await _settled(log)  # every write made has its event seen: writes vs changes
            for task in watches:
                task.cancel()
        run.first_running = min(progress.running.values()) - start
        if verbose:
            run.notes += _controllers(await op.metrics(session))
        run.written = await _children(session, server.url)
        run.writes = request_counts(log, user_agent="etctl/", skip=skip)
        codes = metric_sums(
            await op.metrics(session), ("rest_client_requests_total",), label="code"
        )
        run.conflicts = int(sum(value for (_, code), value in codes.items() if code == "409"))
        run.refused = int(sum(value for (_, code), value in codes.items() if code == "422"))
        run.job_changes = len(progress.versions) - workload.jobs  # each job's creation aside
        return run


@dataclass(frozen=True)
class _Scaling:
    """The ScaleOut timed during a run: of which workload, on which server, when."""

    workload: Workload
    server: Server
    start: float
    at: float


async def _scale_out(
    session: aiohttp.ClientSession,
    scaling: _Scaling,
    progress: _Progress,
    run: Run,
    verbose: bool,
) -> None:
    """Scale out the first job that runs ``at`` seconds in; time until its new pods exist."""
    workload, server, start = scaling.workload, scaling.server, scaling.start
    await asyncio.sleep(max(start + scaling.at - time.perf_counter(), 0))
    await progress.some_running.wait()
    job = min(progress.running, key=progress.running.__getitem__)
    body = scaleout(job, 2, workload.kind)
    first = workload.workers
    wanted = [f"{job}-worker-{index}" for index in (first, first + 1)]
    jobs = f"{workload.api}/namespaces/{_NS}/{workload.plural}"
    timeline: list[str] = []
    submitted = time.perf_counter()

    def note(obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] in (job, body["metadata"]["name"]):
            status = obj.get("status") or {}
            summary = {
                "kind": obj["kind"],
                "owners": len(obj["metadata"].get("ownerReferences") or []),
                "targets": len(status.get("targetWorkers") or []),
                "scaler": status.get("currentScaler"),
                "phase": status.get("phase"),
            }
            line = f"{time.perf_counter() - submitted:6.2f} s  {summary}"
            if not timeline or timeline[-1].split("  ", 1)[1] != line.split("  ", 1)[1]:
                timeline.append(line)

    async with asyncio.TaskGroup() as group:
        watchers = [
            group.create_task(watch(session, f"{server.url}/{path}", note))
            for path in ((jobs, f"{_TJ_API}/namespaces/{_NS}/scaleouts") if verbose else ())
        ]
        await asyncio.sleep(0.1 if verbose else 0)
        submitted = time.perf_counter()
        run.scaleout_at = submitted - start
        run.starting_at_scaleout = progress.jobs - len(progress.running)
        await post(session, f"{server.url}/{_TJ_API}/namespaces/{_NS}/scaleouts", body)
        while not all(name in progress.pods for name in wanted):
            progress.pod_seen.clear()
            await progress.pod_seen.wait()
        run.scaleout = max(progress.pods[name] for name in wanted) - submitted
        for task in watchers:
            task.cancel()
    run.notes += [f"scale-out of {job}: {line}" for line in timeline]


async def _settled(log: Path, quiet: float = 1.0, bound: float = 30.0) -> None:
    """Wait until the request log has not grown for ``quiet`` seconds (at most ``bound``)."""
    lines, still, waited = -1, 0.0, 0.0
    while still < quiet and waited < bound:
        await asyncio.sleep(0.25)
        waited += 0.25
        count = sum(1 for _ in log.open(encoding="utf-8"))
        still = still + 0.25 if count == lines else 0.0
        lines = count


def _controllers(page: str) -> list[str]:
    names = (
        "controller_runtime_reconcile_time_seconds_count",
        "controller_runtime_reconcile_time_seconds_sum",
        "workqueue_queue_duration_seconds_sum",
    )
    values = metric_sums(page, names)
    lines = []
    for controller in sorted({c for _, c in values if c}):
        count, busy, queued = (values.get((n, controller), 0.0) for n in names)
        lines.append(
            f"{controller}: {count:.0f} reconciles, {busy / max(count, 1) * 1000:.0f} ms each, "
            f"{queued / max(count, 1) * 1000:.0f} ms queued each"
        )
    return lines


async def _children(session: aiohttp.ClientSession, url: str) -> list[tuple[str, dict[str, Any]]]:
    """Every child the operator wrote, in its order, as the floor writes it."""
    written: list[tuple[int, str, dict[str, Any]]] = []
    for prefix, plural in _CHILDREN:
        path = f"/{prefix}/namespaces/{_NS}/{plural}"
        async with session.get(url + path) as response:
            items = (await response.json())["items"]
        for item in items:
            meta = item["metadata"]
            if (plural, meta["name"]) in _DEFAULTS:
                continue
            order = int(meta["resourceVersion"])
            for key in SERVER_SET:
                meta.pop(key, None)
            item.pop("status", None)
            spec = item.get("spec") or {}
            if plural == "pods":
                spec.pop("nodeName", None)
            if plural == "services" and spec.get("clusterIP") != "None":
                spec.pop("clusterIP", None)
                spec.pop("clusterIPs", None)
            written.append((order, path, item))
    return [(path, item) for _, path, item in sorted(written, key=lambda w: w[0])]


# -- the floor


async def run_floor(
    written: list[tuple[str, dict[str, Any]]], workdir: Path, pods: int
) -> tuple[float, float]:
    """Write the operator's children directly to a fresh server: seconds until every pod runs,
    and the server's CPU share meanwhile."""
    connector = aiohttp.TCPConnector(limit=_CLIENTS + 8)
    async with (
        api_server(workdir, pods=pods + 16) as server,
        aiohttp.ClientSession(connector=connector) as session,
    ):
        writes = [(server.url + path, body) for path, body in written]
        running: set[str] = set()
        done = asyncio.Event()

        def on_pod(obj: dict[str, Any]) -> None:
            if (obj.get("status") or {}).get("phase") == "Running":
                running.add(obj["metadata"]["name"])
                if len(running) == pods:
                    done.set()

        async with asyncio.timeout(_TIMEOUT), asyncio.TaskGroup() as group:
            pods_watch = group.create_task(watch(session, f"{server.url}/api/v1/pods", on_pod))
            await asyncio.sleep(0.2)
            cpu = cpu_seconds(server.process.pid)
            start = time.perf_counter()
            group.create_task(create_all(session, writes, _CLIENTS), name="create")
            await done.wait()
            elapsed = time.perf_counter() - start
            pods_watch.cancel()
        return elapsed, (cpu_seconds(server.process.pid) - cpu) / elapsed


# -- the report


async def measure(workload: Workload, args: argparse.Namespace, workdir: Path) -> None:
    flags = []
    if args.max_concurrent_reconciles is not None:
        flags = ["--max-concurrent-reconciles", str(args.max_concurrent_reconciles)]
    scaleout_at = args.scaleout_at if workload.scales else None
    runs: list[Run] = []
    floors: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        runs.append(await run_operator(workload, workdir, flags, scaleout_at, args.verbose))
        floors.append(await run_floor(runs[-1].written, workdir, runs[-1].pods))
    seconds = statistics.median(r.seconds for r in runs)
    floor = statistics.median(f for f, _ in floors)
    ratios = [r.seconds / f for r, (f, _) in zip(runs, floors, strict=True)]
    median = "" if args.rounds == 1 else "median "
    each = ", ".join(f"{r:.2f}x" for r in ratios)
    _report.figure(
        f"{workload.describe()}: all Running",
        seconds,
        "s",
        compare=f"{median}floor {floor:.1f} s ({len(runs[0].written)} objects written directly): "
        f"{statistics.median(ratios):.2f}x ({each}), target <= 1.5x",
    )
    _report.figure(
        "  first job Running",
        statistics.median(r.first_running for r in runs),
        "s",
        compare="CPU over the run: operator "
        f"{statistics.median(r.operator_cpu for r in runs):.0%} of a core, server "
        f"{statistics.median(r.server_cpu for r in runs):.0%} (floor's server "
        f"{statistics.median(c for _, c in floors):.0%})",
    )
    scaleouts = [r for r in runs if r.scaleout is not None]
    if scaleouts:
        _report.figure(
            "  ScaleOut: its new workers created after",
            statistics.median(r.scaleout or 0.0 for r in scaleouts),
            "s",
            compare=", ".join(
                f"{r.scaleout:.2f} s (at {r.scaleout_at:.1f} s, {r.starting_at_scaleout} jobs "
                "still starting)"
                for r in scaleouts
            )
            + "; target <= 2 s",
        )
    for index, run in enumerate(runs):
        writes = _writes(run, workload)
        print(f"     round {index + 1}: the operator's writes until all ran: {writes}")
        for line in run.notes:
            print(f"     round {index + 1}: {line}")


def _writes(run: Run, workload: Workload) -> str:
    """The operator's writes by verb and resource, creates against the objects it had to make."""
    made = Counter(path.rsplit("/", 1)[1] for path, _ in run.written)
    made[workload.plural] = 0  # the jobs are the user's
    parts = []
    for name, count in sorted(run.writes.items()):
        verb, resource = name.split(" ", 1)
        if verb == "create" and resource in made:
            parts.append(f"{name} {count} (objects to make: {made[resource]})")
        elif resource == f"{workload.plural}/status":
            idle = max(count - run.job_changes - run.conflicts - run.refused, 0)
            parts.append(
                f"{name} {count} ({count / workload.jobs:.2f} per job; {run.job_changes} "
                f"changed the job, {idle} changed nothing; the operator's refused writes, all "
                f"resources: {run.conflicts} Conflicts (409), {run.refused} failed guards or "
                "invalid objects (422))"
            )
        else:
            parts.append(f"{name} {count}")
    missing = sorted(f"create {r}" for r in made if made[r] and f"create {r}" not in run.writes)
    return ", ".join(parts + [f"{m} 0 (objects to make: {made[m[7:]]})" for m in missing])


async def main(args: argparse.Namespace) -> None:
    _report.header("jobs at scale: the operator against writing the same objects directly")
    with tempfile.TemporaryDirectory(prefix="etctl-bench-") as tmp:
        workdir = Path(tmp)
        workloads = [
            Workload(
                "trainingjob",
                _TJ_API,
                "trainingjobs",
                trainingjob,
                args.trainingjobs,
                args.workers,
                scales=True,
            ),
            Workload("tfjob", "apis/kubeflow.org/v1", "tfjobs", tfjob, args.tfjobs, args.workers),
            Workload(
                "pytorchjob",
                "apis/kubeflow.org/v1",
                "pytorchjobs",
                pytorchjob,
                args.pytorchjobs,
                args.workers,
                kind="PyTorchJob",
                scales=True,
            ),
        ]
        for workload in workloads:
            if workload.jobs:
                await measure(workload, args, workdir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trainingjobs", type=int, default=200)
    parser.add_argument("--tfjobs", type=int, default=500)
    parser.add_argument("--pytorchjobs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--scaleout-at", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--max-concurrent-reconciles",
        type=int,
        default=None,
        help="passed to etctl run (default: the operator's own default)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also print each controller's reconciles and queue waits, and the scale-out's steps",
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(parser.parse_args()))
