"""Cluster noise: the operator's memory follows its own jobs, not the cluster around them.

Run: ``.venv/bin/python bench/cluster_noise.py [--pods N] [--secrets N] [--jobs N]``

The embedded API server runs in its own process (no kubelet: the pods stay Pending, which changes
nothing for the operator), ``etctl run`` (every job kind, its defaults) in another. Twice, on a
fresh server each time:

* an empty cluster, where ``--jobs`` TrainingJobs of 4 workers and as many TFJobs of 4 workers
  are submitted;
* the same, in a cluster that already holds ``--pods`` pods (realistic ones of about 5 KiB, from
  ``bench/cache_memory.py``, over 20 namespaces of other teams), ``--secrets`` Secrets of other
  teams (2 KiB of data each: tokens, keys and certificates) and ``--configmaps`` of their
  ConfigMaps (1 KiB each).

Each time the operator runs until its caches hold every child of its jobs and it is idle, then its
resident memory is sampled ten times over two seconds (the highest sample counts). The two figures
must be within 10%. The operator's own metrics then say how many objects each of its informers
holds: the Secrets in its cache must be exactly its TrainingJobs' ssh Secrets, not one of the
others' (and the same is printed for pods and ConfigMaps).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

import _report
from _cluster import (
    SERVER_SET,
    Operator,
    api_server,
    create_all,
    metric_sums,
    operator,
    post,
    rss_bytes,
)
from cache_memory import sample_pod
from jobs_at_scale import tfjob, trainingjob

_NS = "default"
_TEAMS = 20
_CLIENTS = 16
_OURS = "training.kubeflow.org/operator-name=etctl"
_SECRETS = ("secrets/v1", "/api/v1/secrets")
_PODS = ("pods/v1", "/api/v1/pods")
_CONFIGMAPS = ("configmaps/v1", "/api/v1/configmaps")


def foreign_pods(count: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` pods of other teams, as (collection path, body)."""
    writes = []
    for index in range(count):
        pod = sample_pod(index)
        meta = pod["metadata"]
        # Their owners (a Job of theirs) do not exist here: the garbage collector would take them.
        for generated in SERVER_SET:
            meta.pop(generated, None)
        pod.pop("status", None)
        pod["spec"].pop("nodeName", None)
        namespace = f"team-{index % _TEAMS}"
        meta["namespace"] = namespace
        writes.append((f"/api/v1/namespaces/{namespace}/pods", pod))
    return writes


def foreign_configmaps(count: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` ConfigMaps of other teams (1 KiB of settings each), as (collection path, body)."""
    writes = []
    for index in range(count):
        namespace = f"team-{index % _TEAMS}"
        settings = "\n".join(f"option_{n} = value-{index}-{n}" for n in range(40))
        body = {
            "metadata": {"name": f"settings-{index}", "namespace": namespace},
            "data": {"app.conf": settings},
        }
        writes.append((f"/api/v1/namespaces/{namespace}/configmaps", body))
    return writes


def foreign_secrets(count: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` Secrets of other teams (2 KiB of data each), as (collection path, body)."""
    rng = random.Random(7)
    writes = []
    for index in range(count):
        namespace = f"team-{index % _TEAMS}"
        data = {
            key: base64.b64encode(rng.randbytes(size)).decode()
            for key, size in (("token", 512), ("tls.key", 768), ("tls.crt", 768))
        }
        body = {
            "metadata": {
                "name": f"credentials-{index}",
                "namespace": namespace,
                "labels": {"app": f"service-{index % 97}", "team": namespace},
            },
            "type": "Opaque",
            "data": data,
        }
        writes.append((f"/api/v1/namespaces/{namespace}/secrets", body))
    return writes


async def _cached(op: Operator, session: aiohttp.ClientSession) -> dict[str, float]:
    values = metric_sums(await op.metrics(session), ["etctl_informer_objects"])
    return {resource: value for (_, resource), value in values.items()}


async def _count(session: aiohttp.ClientSession, url: str, selector: str | None = None) -> int:
    params = {"labelSelector": selector} if selector else {}
    async with session.get(url, params=params) as response:
        return len((await response.json())["items"])


async def measure(
    workdir: Path, *, pods: int, secrets: int, configmaps: int, jobs: int
) -> tuple[int, dict[str, float], dict[str, int]]:
    """Peak idle RSS of the operator, what its informers hold, and what the server holds."""
    async with (
        api_server(workdir, kubelet=False) as server,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=_CLIENTS + 4)) as session,
    ):
        namespaces = [f"team-{index}" for index in range(_TEAMS)]
        for namespace in namespaces:
            await post(
                session, f"{server.url}/api/v1/namespaces", {"metadata": {"name": namespace}}
            )
        noise = foreign_pods(pods) + foreign_secrets(secrets) + foreign_configmaps(configmaps)
        await create_all(session, [(server.url + path, body) for path, body in noise], _CLIENTS)
        async with operator(server, session) as op:
            submitted = [
                (
                    f"{server.url}/apis/kai.alibabacloud.com/v1alpha1/namespaces/{_NS}/trainingjobs",
                    trainingjob(f"tj-{index}", 4),
                )
                for index in range(jobs)
            ] + [
                (
                    f"{server.url}/apis/kubeflow.org/v1/namespaces/{_NS}/tfjobs",
                    tfjob(f"tf-{index}", 4),
                )
                for index in range(jobs)
            ]
            await create_all(session, submitted, _CLIENTS)
            wanted = jobs * 8  # four workers of each job (the launchers wait for running workers)
            deadline = time.monotonic() + 300
            while (await _cached(op, session)).get(_PODS[0], 0) < wanted:
                if time.monotonic() > deadline:
                    msg = "the operator did not create its jobs' pods"
                    raise RuntimeError(msg)
                await asyncio.sleep(0.2)
            await asyncio.sleep(2)  # the last writes, events and status patches settle
            peak = 0
            for _ in range(10):
                peak = max(peak, rss_bytes(op.process.pid))
                await asyncio.sleep(0.2)
            cached = await _cached(op, session)
            stored = {
                _SECRETS[0]: await _count(session, server.url + _SECRETS[1]),
                "ours:" + _SECRETS[0]: await _count(session, server.url + _SECRETS[1], _OURS),
                _PODS[0]: await _count(session, server.url + _PODS[1]),
                "ours:" + _PODS[0]: await _count(session, server.url + _PODS[1], _OURS),
                _CONFIGMAPS[0]: await _count(session, server.url + _CONFIGMAPS[1]),
                "ours:" + _CONFIGMAPS[0]: await _count(session, server.url + _CONFIGMAPS[1], _OURS),
            }
            return peak, cached, stored


async def main(args: argparse.Namespace) -> None:
    _report.header("cluster noise: operator memory with and without other teams' objects")
    with tempfile.TemporaryDirectory(prefix="etctl-bench-") as tmp:
        workdir = Path(tmp)
        empty, _, _ = await measure(workdir, pods=0, secrets=0, configmaps=0, jobs=args.jobs)
        noisy, cached, stored = await measure(
            workdir,
            pods=args.pods,
            secrets=args.secrets,
            configmaps=args.configmaps,
            jobs=args.jobs,
        )
    mib = 1024 * 1024
    growth = noisy / empty - 1
    _report.figure(
        f"operator RSS, {args.jobs} + {args.jobs} jobs, empty cluster",
        empty / mib,
        "MiB",
    )
    verdict = "within" if abs(growth) <= 0.10 else "NOT within"
    _report.figure(
        f"  + others' {args.pods:,} pods, {args.secrets:,} Secrets, {args.configmaps:,} CMs",
        noisy / mib,
        "MiB",
        compare=f"{growth:+.1%}: {verdict} 10% of the empty cluster's",
    )
    for label, (resource, _) in (
        ("Secrets", _SECRETS),
        ("pods", _PODS),
        ("ConfigMaps", _CONFIGMAPS),
    ):
        held = int(cached.get(resource, 0))
        ours = stored["ours:" + resource]
        foreign = stored[resource] - ours
        leaked = max(held - ours, 0)
        check = "ok" if leaked == 0 else "FOREIGN OBJECTS CACHED"
        _report.figure(
            f"  {label} in the operator's cache",
            held,
            "",
            compare=f"its own on the server: {ours}; others' cached: {leaked} of {foreign:,} "
            f"({check})",
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--secrets", type=int, default=5_000)
    parser.add_argument("--configmaps", type=int, default=1_000)
    parser.add_argument("--jobs", type=int, default=10)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(parser.parse_args()))
