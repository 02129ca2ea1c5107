"""The work an admitted create adds over a plain one, counted in one process, whatever the load.

Run: ``.venv/bin/python bench/admission_work.py [--writes N] [--rounds N] [--instructions]``

``bench/admission.py`` times the webhooks across three processes, as on a cluster; on a shared
machine its latencies, and even its CPU times, move with everyone else's load. This one puts the
embedded API server, the operator's webhook server (the TFJob mutating and validating webhooks of
``etctl run --webhooks``, over TLS with their own CA, through URL-based configurations) and a
plain aiohttp client in one event loop, and creates the same TFJob in a namespace the webhooks
select and in one they do not: blocks of ``--writes`` creates each, the cycle collector paused
during a block (collected before it), so that the difference per create is the webhooks' work on
both sides (building, sending, parsing and answering the two reviews) and nothing else.

Reported: the process's CPU per plain create, per admitted create and the difference, the median
of ``--rounds`` rounds (the range in brackets). With ``--instructions`` it instead counts the
instructions the difference takes, with valgrind's callgrind (when installed): three runs of this
script under it, with 10 and 60 creates of either kind, give the instructions per plain and per
admitted create; deterministic to about one percent, so two trees can be compared on a busy machine
(callgrind runs the interpreter some 50 times slower: a few minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime
import gc
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

import _report
from _admission import ADMITTED_LABELS, configurations, tfjob
from etctl._certificates import issue_serving_certificate, new_ca
from etctl.common import crd_manifest, setup_job_webhooks
from etctl.jobs.tfjob import TFJOB, TFJobPlugin
from etctl.runtime import WebhookServer, WebhookServerOptions
from etctl.testing import ApiServer

_ADMITTED, _PLAIN = "admitted", "plain"
_COUNTS = ((10, 10), (60, 10), (10, 60))
"""The (plain, admitted) creates of the three runs under callgrind."""


class Writes:
    """Creates through the embedded server's HTTP API, one at a time, numbered across blocks."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url
        self.created = 0

    async def post(self, path: str, body: Any) -> None:
        async with self.session.post(self.url + path, json=body) as response:
            if response.status not in (200, 201):
                msg = f"POST {path}: {response.status} {await response.text()}"
                raise RuntimeError(msg)
            await response.read()

    async def block(self, namespace: str, count: int) -> float:
        """CPU seconds per create of ``count`` creates in ``namespace``, collector paused."""
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            for _ in range(count):
                self.created += 1
                job = tfjob(f"job-{self.created}")
                await self.post(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs", job)
            return (time.process_time() - started) / max(count, 1)
        finally:
            gc.enable()


@contextlib.asynccontextmanager
async def admitting(workdir: Path) -> AsyncIterator[Writes]:
    """The server, the webhook server and the configurations that admit one namespace."""
    now = datetime.datetime.now(datetime.UTC)
    ca = new_ca("admission-bench-ca", now=now, validity=datetime.timedelta(days=1))
    serving = issue_serving_certificate(
        ca,
        dns_names=["localhost"],
        ip_addresses=["127.0.0.1"],
        now=now,
        validity=datetime.timedelta(hours=12),
    )
    (workdir / "tls.crt").write_bytes(serving.cert_pem)
    (workdir / "tls.key").write_bytes(serving.key_pem)
    hooks = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=workdir))
    setup_job_webhooks(hooks, TFJobPlugin())
    async with (
        ApiServer(crds=[crd_manifest(TFJOB)]) as server,
        aiohttp.ClientSession() as session,
        asyncio.TaskGroup() as group,
    ):
        running = group.create_task(hooks.run(), name="bench:webhook-server")
        try:
            while hooks.address is None:
                if running.done():
                    running.result()
                await asyncio.sleep(0.01)
            writes = Writes(session, server.url)
            for name, extra in (("etctl-system", {}), (_ADMITTED, ADMITTED_LABELS)):
                await writes.post(
                    "/api/v1/namespaces", {"metadata": {"name": name, "labels": extra}}
                )
            await writes.post("/api/v1/namespaces", {"metadata": {"name": _PLAIN}})
            url = f"https://127.0.0.1:{hooks.address[1]}"
            bundle = base64.b64encode(ca.cert_pem).decode()
            for path, document in configurations("etctl-system", url, bundle):
                await writes.post(path, document)
            await writes.block(_ADMITTED, 30)  # both paths warm: models built, connection open
            await writes.block(_PLAIN, 30)
            yield writes
        finally:
            running.cancel()


async def cpu(writes_per_block: int, rounds: int) -> None:
    us = 1e6
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        async with admitting(Path(tmp)) as writes:
            for _ in range(rounds):
                plain = await writes.block(_PLAIN, writes_per_block)
                admitted = await writes.block(_ADMITTED, writes_per_block)
                for name, value in (("plain", plain), ("admitted", admitted)):
                    figures.setdefault(name, []).append(value * us)
                figures.setdefault("added", []).append((admitted - plain) * us)
    for name, label in (
        ("plain", "CPU per create without webhooks"),
        ("admitted", "CPU per create through both webhooks"),
        ("added", "CPU added per create by the webhooks"),
    ):
        values = figures[name]
        spread = f"rounds {min(values):,.0f}-{max(values):,.0f}, one process, collector paused"
        _report.figure(label, statistics.median(values), "µs", compare=spread)


async def counted(plain: int, admitted: int) -> None:
    """The creates of one run under callgrind (its total is what is read)."""
    with tempfile.TemporaryDirectory() as tmp:
        async with admitting(Path(tmp)) as writes:
            await writes.block(_PLAIN, plain)
            await writes.block(_ADMITTED, admitted)


def instructions() -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        _report.figure("instructions", 0, "", compare="valgrind is not installed: skipped")
        return
    totals = []
    for plain, admitted in _COUNTS:
        command = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
        command += [sys.executable, __file__, "--counted", str(plain), str(admitted)]
        run = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        found = re.search(r"Collected\s*:\s*(\d+)", run.stderr)
        if found is None:
            msg = f"callgrind printed no count:\n{run.stderr[-2000:]}"
            raise RuntimeError(msg)
        totals.append(int(found[1]))
    base, more_plain, more_admitted = totals
    per_plain = (more_plain - base) / (_COUNTS[1][0] - _COUNTS[0][0])
    per_admitted = (more_admitted - base) / (_COUNTS[2][1] - _COUNTS[0][1])
    compare = "callgrind, one process, collector paused"
    for label, value in (
        ("instructions per create without webhooks", per_plain),
        ("instructions per create through both webhooks", per_admitted),
        ("instructions added per create by the webhooks", per_admitted - per_plain),
    ):
        _report.figure(label, value / 1e3, "k", compare=compare)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300, help="creates per block")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds of a plain and an admitted block"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with callgrind instead"
    )
    parser.add_argument("--counted", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.counted:
        asyncio.run(counted(*args.counted))
        return
    _report.header("admission webhooks: the work an admitted create adds, in one process")
    if args.instructions:
        instructions()
    else:
        asyncio.run(cpu(args.writes, args.rounds))


if __name__ == "__main__":
    main()
