"""CPU per request of a "fanout" operator: etctl's public runtime API against kopf and the floor.

The workload: N parent custom resources (``Fanout``), each needing 4 ConfigMaps it controls and a
status patch saying so: 5 writes per parent, 5N in all, the minimum any operator can make. Each
run starts a fresh embedded API server in its own process, its watch events as late as a real
server's (``--watch-delay``, ``--watch-interval``: a lightly loaded control plane's by default,
which is what makes a reconcile run before the watch brings back its own writes), then the
operator in another process (so its CPU time is its own), waits until the operator watches,
idles, then has the server create the N parents at once (through its storage: those writes are
not the operator's) and waits until every parent has its ConfigMaps and its status. The modes
alternate in one series (etctl, kopf, direct, direct, kopf, etctl, ...), so a machine that slows
down mid-series hurts all alike.

``direct`` is the floor (``_fanout_direct.py``): no operator, the same writes made by a plain
watch of the parents and four workers, as soon as each parent's event arrives. An operator's
convergence is compared to it (target: within 1.05x).

Per run, from outside the operator:

* CPU ms per request: the operator process's CPU time (user + system, from ``/proc``) from the
  moment the parents are created until the operator settles, divided by the requests the
  server's request log recorded from it in that time;
* requests: all of them, by verb and resource, against the minimum (N status patches and 4N
  ConfigMap creates); any request during the idle windows before and after the load is reported
  too (there should be none);
* convergence: seconds from the first parent's creation until the last parent is done;
* RSS: idle (after the caches synced, before the load) and peak (the process's high-water mark).

Both operators run the same plain logic (create the children that are missing, patch the status
when it is not the desired one; nothing remembered between reconciles), the way their own
documentation says to: etctl through a ``Manager`` whose controller is ``for_`` the parents and
``owns`` the ConfigMaps, reconciling from its cache with four workers; kopf with a creation
handler that creates the children and patches the status through kopf's own patch, tuned as its
documentation allows (no Kubernetes events posted, no peering, no cluster scanning, its progress
and diff-base kept in the status so that one patch carries all of it, warnings-only logging) and
creating the ConfigMaps with a plain aiohttp session (the cheapest client a kopf handler can use).
kopf is a benchmark-only dependency: ``pip install kopf``.

    .venv/bin/python bench/fanout.py [--parents N] [--rounds R] [--modes etctl,kopf,direct]

A mode ``etctl@DIR`` runs the same etctl operator on the ``etctl`` package under ``DIR`` (another
checkout, e.g. ``git archive <commit> | tar -x -C DIR``), with this bench and this server:
``--modes etctl,etctl@DIR`` compares two runtimes in one alternating series.

Each mode's CPU per request is its median over the rounds, printed with its spread (lowest,
quartiles, highest), and against kopf both as the ratio of the medians (the target's figure) and
as the median of each round's ratio to kopf's run of the same round: on a shared machine, runs of
one round met the same load. Telling a difference of a few percent apart takes many short rounds
(``--parents 500 --rounds 10``); ``client_requests.py`` measures the client's requests alone.
``--instructions`` counts instead what each etctl mode's operator executes per request, under
valgrind (a run of ``--parents`` and one of three times as many, subtracted): a figure the
machine's load does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from _fanout_workload import CHILDREN, CRD, GROUP, KIND, NAMESPACE, PLURAL, VERSION, parent
from _report import figure, header, spread
from etctl.runtime import CONFIGMAPS, NAMESPACES, Resource
from etctl.testing import ApiServer, WatchLatency

TARGET = 0.39
"""CPU per request at most this times kopf's: what etctl reached when its own HTTP/1.1 client
landed, and what the later changes (strict parsing, reading its own writes) must keep."""
IDLE_SECONDS = 2.0
SETTLE_SECONDS = 2.0
OPERATORS = {"etctl": "_fanout_etctl.py", "kopf": "_fanout_kopf.py", "direct": "_fanout_direct.py"}


# -- the server process


async def _serve(conn: Connection, parents: int, kubeconfig: Path, latency: WatchLatency) -> None:
    fanouts = Resource(GROUP, VERSION, PLURAL, KIND)
    loop = asyncio.get_running_loop()
    async with ApiServer(
        crds=[CRD], request_log_size=50 * parents + 10_000, watch_latency=latency
    ) as server:
        server.storage.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        server.write_kubeconfig(kubeconfig, namespace=NAMESPACE)
        done = asyncio.Event()
        counts = Counter[str]()

        def observe(event: Any) -> None:
            if event.resource == ("", "configmaps") and event.type == "ADDED":
                counts["children"] += 1
            elif event.resource == (GROUP, PLURAL) and event.type == "MODIFIED":
                ready = (event.object.get("status") or {}).get("configMaps") == CHILDREN
                was = ((event.previous or {}).get("status") or {}).get("configMaps") == CHILDREN
                if ready and not was:
                    counts["parents"] += 1
            if counts["parents"] >= parents and counts["children"] >= CHILDREN * parents:
                done.set()

        server.store.subscribe(observe)
        conn.send(server.url)
        while True:
            command, *args = await loop.run_in_executor(None, conn.recv)
            if command == "stop":
                return
            if command == "requests":
                records = list(server.requests)[args[0] :]
                conn.send([(r.verb, r.resource, r.subresource, r.code) for r in records])
            elif command == "load":
                began = time.perf_counter()
                for index in range(parents):
                    server.storage.create(fanouts, parent(index), namespace=NAMESPACE)
                    if index % 100 == 99:
                        await asyncio.sleep(0)  # let the watches flow while creating
                await done.wait()
                conn.send(time.perf_counter() - began)
            elif command == "objects":
                children = sum(  # the kube-root-ca.crt every namespace holds aside
                    1
                    for _, obj in server.store.items(("", CONFIGMAPS.plural), NAMESPACE)
                    if obj["metadata"].get("ownerReferences")
                )
                conn.send((children, server.store.count((GROUP, PLURAL))))


def serve(conn: Connection, parents: int, kubeconfig: str, latency: WatchLatency) -> None:
    """The server process: serve, answer the coordinator's commands until told to stop."""
    asyncio.run(_serve(conn, parents, Path(kubeconfig), latency))


# -- the coordinator


def _proc(pid: int) -> tuple[float, int, int]:
    """(CPU seconds, RSS bytes, peak RSS bytes) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    status = Path(f"/proc/{pid}/status").read_text()
    values = {}
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) * 1024
    return cpu, values["VmRSS"], values["VmHWM"]


def _system_seconds(pid: int) -> float:
    """The CPU time a process spent in the kernel (loopback TCP included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[12]) / os.sysconf("SC_CLK_TCK")


def _writes(records: list[tuple[str, str, str, int]]) -> int:
    return sum(1 for verb, *_ in records if verb in ("create", "update", "patch", "delete"))


def _by_verb(records: list[tuple[str, str, str, int]]) -> Counter[str]:
    """Requests by ``verb resource[/subresource]`` (and the answer's code when not a success)."""
    counts = Counter[str]()
    for verb, resource, subresource, code in records:
        name = f"{verb} {resource}/{subresource}" if subresource else f"{verb} {resource}"
        counts[name if 200 <= code < 300 else f"{name} ({code})"] += 1
    return counts


def _py_spy() -> str:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else "py-spy"


def _top(collapsed: Path, limit: int = 25) -> None:
    """Print the functions with the most samples (self, and total including callees)."""
    own = Counter[str]()
    total = Counter[str]()
    samples = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[-1].split(":")[0].rsplit("/", 1)[-1]
            for f in stack.split(";")
            if f
        ]
        n = int(count)
        samples += n
        if frames:
            own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    print(f"   profile: {samples} samples; self / total %, top {limit} by self")
    for frame, n in own.most_common(limit):
        print(f"   {100 * n / samples:5.1f} {100 * total[frame] / samples:5.1f}  {frame}")


def run_once(
    mode: str,
    parents: int,
    latency: WatchLatency,
    profile: Path | None = None,
    *,
    counted: bool = False,
) -> dict[str, Any]:
    """One run of ``mode`` against a fresh server: the figures of :func:`main`'s table.

    ``counted`` runs the operator under valgrind's callgrind and adds ``instructions``: what the
    operator process executed in all, from its start to its exit.
    """
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        ours, theirs = context.Pipe()
        server = context.Process(target=serve, args=(theirs, parents, kubeconfig, latency))
        server.start()
        operator: subprocess.Popen[str] | None = None
        try:
            ours.recv()
            kind, _, tree = mode.partition("@")
            environment = {**os.environ, "PYTHONHASHSEED": "0"} if counted else None
            if tree:  # the same operator on the etctl package of another checkout
                environment = {
                    **(environment or os.environ),
                    "PYTHONPATH": str(Path(tree).resolve()),
                }
            command = [sys.executable, str(Path(__file__).with_name(OPERATORS[kind])), kubeconfig]
            log = Path(tmp) / "callgrind.log"
            if counted:
                command = [
                    "valgrind",
                    "--tool=callgrind",
                    "--callgrind-out-file=/dev/null",
                    f"--log-file={log}",
                    *command,
                ]
            operator = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                text=True,
                env=environment,
            )
            assert operator.stdout is not None
            if operator.stdout.readline().strip() != "ready":
                msg = f"the {mode} operator did not start"
                raise RuntimeError(msg)
            time.sleep(IDLE_SECONDS)  # the watches start, start-up garbage settles
            ours.send(("requests", 0))
            start = len(ours.recv())
            cpu0, idle_rss, _ = _proc(operator.pid)
            time.sleep(IDLE_SECONDS)
            ours.send(("requests", start))
            idle_before = len(ours.recv())
            cpu0, _, _ = _proc(operator.pid)
            sys0 = _system_seconds(operator.pid)
            ours.send(("requests", 0))
            mark = len(ours.recv())
            spy = None
            if profile is not None:
                spy = subprocess.Popen(
                    [
                        _py_spy(),
                        "record",
                        "--pid",
                        str(operator.pid),
                        "--rate",
                        "1000",
                        "--format",
                        "raw",
                        "--output",
                        str(profile),
                        "--nonblocking",
                        "--gil",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(1.0)
            ours.send(("load",))
            converged = ours.recv()
            time.sleep(SETTLE_SECONDS)  # let trailing events (its own writes) be handled
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
            cpu1, _, peak = _proc(operator.pid)
            sys1 = _system_seconds(operator.pid)
            ours.send(("requests", mark))
            records = ours.recv()
            time.sleep(IDLE_SECONDS)
            cpu2, _, _ = _proc(operator.pid)
            ours.send(("requests", mark + len(records)))
            idle_after = len(ours.recv())
            ours.send(("objects",))
            children, owners = ours.recv()
        finally:
            if operator is not None:
                operator.terminate()
                operator.wait(timeout=30)
            ours.send(("stop",))
            server.join(timeout=30)
        instructions = _collected(log) if counted else 0
    if children != CHILDREN * parents or owners != parents:
        msg = f"{mode}: {children} ConfigMaps for {owners} parents"
        raise RuntimeError(msg)
    requests = len(records)
    return {
        "cpu_ms_per_request": (cpu1 - cpu0) * 1000 / max(requests, 1),
        "cpu_s": cpu1 - cpu0,
        "system_share": (sys1 - sys0) / max(cpu1 - cpu0, 1e-9),
        "requests": requests,
        "writes": _writes(records),
        "by_verb": _by_verb(records),
        "idle_requests": idle_before + idle_after,
        "idle_cpu_ms": (cpu2 - cpu1) * 1000,
        "converged_s": converged,
        "idle_rss_mb": idle_rss / 2**20,
        "peak_rss_mb": peak / 2**20,
        "instructions": instructions,
    }


def _collected(log: Path) -> int:
    """The instruction count callgrind wrote to ``log`` as its process exited."""
    found = re.search(r"Collected : (\d+)", log.read_text())
    if found is None:
        msg = f"callgrind wrote no count: {log.read_text()[-300:]}"
        raise RuntimeError(msg)
    return int(found.group(1))


def count_instructions(modes: list[str], parents: int, latency: WatchLatency) -> None:
    """Instructions per request of each etctl mode: runs of ``parents`` and 3x, subtracted.

    The operator runs under valgrind (some fifty times slower), so what it does before and after
    the load (start-up, the cache's sync, the idle windows, the exit) is the same in both runs and
    cancels out. The count does not change with the machine's load, so one run of each tells a
    few percent apart where CPU time needs many rounds.
    """
    first = 0.0
    for mode in modes:
        if mode.partition("@")[0] != "etctl":
            continue
        small = run_once(mode, parents, latency, counted=True)
        large = run_once(mode, 3 * parents, latency, counted=True)
        added = large["requests"] - small["requests"]
        per_request = (large["instructions"] - small["instructions"]) / max(added, 1)
        first = first or per_request
        compare = f"{per_request / first:.3f}x the first" if per_request != first else ""
        figure(f"instructions per request ({mode})", per_request / 1000, "k", compare=compare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    realistic = WatchLatency.realistic()
    parser.add_argument("--parents", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="etctl,kopf,direct")
    parser.add_argument(
        "--watch-delay",
        type=float,
        default=realistic.delay,
        help=f"seconds the server's watch events lag their commit (default {realistic.delay:g})",
    )
    parser.add_argument(
        "--watch-interval",
        type=float,
        default=realistic.interval,
        help=f"seconds between the watch cache's dispatch rounds (default {realistic.interval:g})",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="record the first run of each mode with py-spy into PATH.MODE and print its top "
        "(samples while the operator holds the GIL: its Python's CPU, not its waits)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the etctl modes' instructions per request under valgrind instead "
        "(deterministic; --parents and 3x, subtracted; needs valgrind)",
    )
    args = parser.parse_args()
    modes = args.modes.split(",")
    latency = WatchLatency(delay=args.watch_delay, interval=args.watch_interval)
    header(
        f"fanout: {args.parents} parents x {CHILDREN} ConfigMaps + a status patch, "
        f"{args.rounds} alternating rounds, watch events {latency.delay * 1000:g} ms late "
        f"(dispatched every {latency.interval * 1000:g} ms)"
    )
    if args.instructions:
        count_instructions(modes, args.parents, latency)
        return
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for round_ in range(args.rounds):
        order = modes if round_ % 2 == 0 else modes[::-1]
        for mode in order:
            profile = None
            if args.profile is not None and round_ == 0:
                profile = args.profile.with_suffix("." + re.sub(r"[^A-Za-z0-9]+", "-", mode))
            result = run_once(mode, args.parents, latency, profile)
            results[mode].append(result)
            print(
                f"   round {round_ + 1} {mode:<6} "
                f"{result['cpu_ms_per_request']:.3f} ms/request, {result['requests']:.0f} "
                f"requests, {result['cpu_s']:.2f} s of CPU, {result['converged_s']:.2f} s",
                flush=True,
            )
            if profile is not None:
                _top(profile)
    medians = {
        mode: {
            key: statistics.median(r[key] for r in runs)
            for key in runs[0]
            if not isinstance(runs[0][key], Counter)
        }
        for mode, runs in results.items()
    }
    minimum = Counter(
        {
            f"create {CONFIGMAPS.plural}": CHILDREN * args.parents,
            f"patch {PLURAL}/status": args.parents,
        }
    )
    base = medians.get("kopf")
    floor = medians.get("direct")
    for mode, m in medians.items():
        ratio = ""
        if base and mode != "kopf":
            ratio = (
                f"{m['cpu_ms_per_request'] / base['cpu_ms_per_request']:.2f}x kopf; "
                f"target <= {TARGET}x"
            )
        print(f"   -- {mode} (median of {args.rounds})")
        figure("CPU per request", m["cpu_ms_per_request"] * 1000, "µs", compare=ratio)
        per_round = [1000 * r["cpu_ms_per_request"] for r in results[mode]]
        print(f"     lowest [quartiles] highest: {spread(per_round)} µs")
        if base and mode != "kopf":  # each round's ratio to kopf's run of the same round
            paired = [
                r["cpu_ms_per_request"] / k["cpu_ms_per_request"]
                for r, k in zip(results[mode], results["kopf"], strict=True)
            ]
            print(
                f"     x kopf's of the same round: median {statistics.median(paired):.3f}, "
                f"{spread(paired, 3)}"
            )
        figure("  CPU in all", m["cpu_s"] * 1000, "ms")
        figure("  of which in the kernel", 100 * m["system_share"], "%")
        figure(
            "requests",
            m["requests"],
            "",
            compare=f"{m['writes']:.0f} writes; minimum {sum(minimum.values())}",
        )
        for index, run in enumerate(results[mode]):
            counts = run["by_verb"]
            described = ", ".join(
                f"{name} {count}" + (f" (minimum {minimum[name]})" if name in minimum else "")
                for name, count in sorted(counts.items())
            )
            print(f"     round {index + 1}: {described}")
        figure("requests while idle", m["idle_requests"], "", compare="target 0")
        figure("CPU while idle", m["idle_cpu_ms"], f"ms in {IDLE_SECONDS:.0f} s")
        versus = ""
        if floor and mode != "direct":
            versus = (
                f"{m['converged_s'] / floor['converged_s']:.3f}x writing the objects directly "
                f"({floor['converged_s']:.2f} s); target <= 1.05x"
            )
        figure("convergence", m["converged_s"], "s", compare=versus)
        figure("idle RSS", m["idle_rss_mb"], "MB")
        figure("peak RSS", m["peak_rss_mb"], "MB")


if __name__ == "__main__":
    main()
