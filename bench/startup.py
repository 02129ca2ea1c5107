"""Start-up of the ``etctl`` binary on real processes: help, time to synced caches, memory.

Three figures, each the median of ``--runs`` fresh processes:

* ``etctl --help``: wall time from spawning the process to its exit;
* ``etctl run`` to caches synced: wall time from spawning ``etctl run`` against an empty cluster
  (``python -m etctl.testing`` with the CRDs of ``manifests/base/crds``, already listening) until it
  logs ``caches synced`` (interpreter start, imports, kubeconfig, every informer's list and watch);
* idle RSS of ``etctl run``: the process's resident memory once its caches have synced and it has
  idled for ``--idle`` seconds, with the default plugins, metrics and probes (on free ports): the
  metrics secure, over HTTPS with a self-signed certificate, behind TokenReviews and
  SubjectAccessReviews (the cluster authenticates tokens and enforces RBAC, over plain HTTP); then
  again after ``/metrics`` (with a token) and ``/readyz`` were each fetched once, as a scrape and
  a probe would;
* idle RSS of ``etctl run --webhooks``, as the manifests run it: the same, plus the admission
  webhooks of every kind served over HTTPS and their certificate provisioned by the operator (a
  CA and a serving certificate in a Secret, made by a child process), reached by URL as an
  operator outside the cluster is.

The memory depends on what is installed beside etctl: a package the process loads without being
one of etctl's dependencies (structlog imports ``rich`` whenever it is installed, and the test
tools bring it) is named, with what it alone costs, so the figure can be read for an install with
etctl's dependencies only (the image's, or ``pip install etctl``).

etctl's modules are compiled to bytecode first, as the image does when it installs the package: a
checkout run with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile them again in every process.
The wall times depend on what else the machine runs; the CPU time ``etctl run`` had used when its
caches synced is printed beside its wall time for that reason.

    .venv/bin/python bench/startup.py [--runs N] [--idle SECONDS]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib import metadata
from pathlib import Path

import yaml

import etctl
from _cluster import CRDS, cpu_seconds, free_port, rss_bytes
from _report import figure, header

HELP_TARGET = 0.3
SYNC_TARGET = 1.0
RSS_TARGET = 50.0


def _etctl() -> list[str]:
    script = Path(sys.executable).with_name("etctl")
    return [str(script)] if script.exists() else [sys.executable, "-m", "etctl.cli"]


def help_seconds() -> float:
    began = time.perf_counter()
    subprocess.run([*_etctl(), "--help"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def run_once(
    kubeconfig: Path, idle: float, webhook_certs: Path | None = None
) -> tuple[float, float, float, float]:
    """Seconds to ``caches synced``, CPU seconds by then, idle RSS, RSS after a scrape (MB).

    With ``webhook_certs``, the operator serves its webhooks, its certificate written there.
    """
    metrics, probes = free_port(), free_port()
    command = [
        *_etctl(),
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--log-format",
        "json",
        "--metrics-bind-address",
        f"127.0.0.1:{metrics}",
        "--health-probe-bind-address",
        f"127.0.0.1:{probes}",
    ]
    if webhook_certs is not None:
        port = free_port()
        command += [
            "--webhooks",
            "--webhook-host=127.0.0.1",
            f"--webhook-port={port}",
            f"--webhook-url=https://127.0.0.1:{port}",
            "--webhook-namespace=default",
            f"--webhook-cert-path={webhook_certs}",
        ]
    began = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        for line in process.stderr:
            if json.loads(line).get("msg") == "caches synced":
                synced = time.perf_counter() - began
                cpu = cpu_seconds(process.pid)
                break
        else:
            msg = f"etctl run exited with {process.wait()} before its caches synced"
            raise RuntimeError(msg)
        time.sleep(idle)
        idle_rss = rss_bytes(process.pid) / 2**20
        token = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
        scrape = urllib.request.Request(
            f"https://127.0.0.1:{metrics}/metrics", headers={"Authorization": f"Bearer {token}"}
        )
        unverified = ssl.create_default_context()
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE  # the operator's self-signed certificate
        with urllib.request.urlopen(scrape, timeout=10, context=unverified) as answer:
            answer.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{probes}/readyz", timeout=10) as answer:
            answer.read()
        time.sleep(0.5)
        return synced, cpu, idle_rss, rss_bytes(process.pid) / 2**20
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


_LOADED = """
import sys
for name in sys.argv[1:]:
    sys.modules[name] = None  # importing it raises ImportError, as if it were not installed
import etctl.cli._run, etctl.jobs.mpijob, etctl.jobs.tfjob, etctl.jobs.trainingjob
from etctl.runtime import Client
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        print(int(line.split()[1]) / 1024)
print(" ".join(sorted(name for name, module in sys.modules.items() if module is not None)))
"""


def _load(*blocked: str) -> tuple[float, list[str]]:
    """RSS in MB and modules of a process importing what ``etctl run`` does, ``blocked`` absent."""
    out = subprocess.run(
        [sys.executable, "-c", _LOADED, *blocked], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return float(out[0]), out[1].split()


def _requirements(distribution: str, seen: set[str]) -> set[str]:
    """``distribution`` and everything it requires (extras left out), normalised names."""
    name = distribution.lower().replace("_", "-")
    if name in seen:
        return seen
    seen.add(name)
    try:
        requires = metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return seen
    for requirement in requires:
        if "extra ==" in requirement:
            continue
        head = requirement.split(";")[0].strip()
        for stop in "<>=!~[ (":
            head = head.split(stop)[0]
        _requirements(head, seen)
    return seen


def foreign_modules() -> tuple[list[str], float]:
    """Top-level modules ``etctl run`` loads from outside etctl's dependencies; what they cost.

    The cost is the difference the modules make to a process that imports what ``etctl run``
    does: the same imports with them blocked (as if not installed) take that much less memory.
    """
    with_them, loaded = _load()
    ours = _requirements("etctl", set())
    owners = metadata.packages_distributions()
    foreign = {
        module.split(".")[0]
        for module in loaded
        if module.split(".")[0] in owners
        and not any(
            owner.lower().replace("_", "-") in ours for owner in owners[module.split(".")[0]]
        )
    }
    blockable = sorted(foreign - {"_distutils_hack"})  # loaded by a .pth file, before anything
    if not blockable:
        return [], 0.0
    without, _ = _load(*blockable)
    return blockable, with_them - without


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=3.0)
    args = parser.parse_args()
    header(f"etctl start-up: median of {args.runs} fresh processes")
    compileall.compile_dir(Path(etctl.__file__).parent, quiet=1)
    helps = [help_seconds() for _ in range(args.runs)]
    help_ms = statistics.median(helps) * 1000
    figure("etctl --help", help_ms, "ms", compare=f"target <= {HELP_TARGET * 1000:g} ms")
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "etctl.testing",
                "--kubeconfig",
                str(kubeconfig),
                "--crds",
                str(CRDS),
                "--no-kubelet",
                "--auth",
                "--no-tls",
            ],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert server.stdout is not None
            server.stdout.readline()  # the URL: the server listens
            runs = [run_once(kubeconfig, args.idle) for _ in range(args.runs)]
            hooked = [
                run_once(kubeconfig, args.idle, Path(tmp) / f"webhook-certs-{run}")
                for run in range(args.runs)
            ]
        finally:
            server.send_signal(signal.SIGTERM)
            server.communicate(timeout=60)
    synced = statistics.median(run[0] for run in runs)
    cpu = statistics.median(run[1] for run in runs)
    rss = statistics.median(run[2] for run in runs)
    scraped = statistics.median(run[3] for run in runs)
    target = f"target <= {SYNC_TARGET * 1000:g} ms"
    figure("etctl run to caches synced", synced * 1000, "ms", compare=target)
    figure("  its CPU time by then", cpu * 1000, "ms")
    figure("etctl run idle RSS", rss, "MB", compare=f"target <= {RSS_TARGET:g} MB")
    figure("  after a /metrics scrape and a probe", scraped, "MB")
    hooked_rss = statistics.median(run[2] for run in hooked)
    figure("etctl run --webhooks idle RSS", hooked_rss, "MB", compare=f"+{hooked_rss - rss:.1f} MB")
    foreign, cost = foreign_modules()
    if foreign:
        figure(
            "  loaded, not etctl's dependencies",
            cost,
            "MB",
            compare=f"{', '.join(foreign)}: {rss - cost:.1f} MB without them",
        )


if __name__ == "__main__":
    main()
