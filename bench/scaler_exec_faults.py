"""Scalers whose script's exec meets 429/503/500 refusals: outcomes, and scripts run exactly once.

Run: ``.venv/bin/python bench/scaler_exec_faults.py [--rounds N]``

The operator runs in the sandbox (embedded API server, simulated kubelet, real clock) with the
example TrainingJob. Each round creates a ScaleOut, then a ScaleIn, both running the script
``/scripts/on-scale.sh`` on the launcher (it appends a line to ``/scripts/runs``); before each, the
server is told to refuse that script's exec upgrade a number of times (429, 503 or 500, cycling
through 0, 1, 3, 5 and 7 refusals: the client itself tries an exec 5 times, so 7 makes the scaler
back off on its own). A last scaler meets a permanent 403. Printed:

* scalers that succeeded under transient refusals (all of them must; before the fix, every one
  that met a refusal failed with ``ScriptFailed: ... did not report an end``);
* the script's runs counted in the launcher (exactly one per succeeded scaler: never twice);
* what the 403 gives (``ScriptNotStarted``, and no run);
* how long a scaler took, by the number of refusals its script's exec met.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from itertools import cycle
from pathlib import Path
from typing import Any

import yaml

import _report
from etctl.cli import Sandbox, SandboxOptions, run_sandbox
from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import Client, Resource
from etctl.testing import Fault

_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "trainingjob" / "training-job.yaml"
_NS = "default"
_JOB = "elastic-training"
_LAUNCHER = f"{_JOB}-launcher"
_SCRIPT = "/scripts/on-scale.sh"
_STATUSES = (429, 503, 500)
_REFUSALS = (0, 1, 3, 5, 7)


async def _until(condition: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            msg = f"timed out waiting for {what}"
            raise RuntimeError(msg)
        await asyncio.sleep(0.05)


def _scaler(res: Resource, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": res.kind,
        "metadata": {"name": name, "namespace": _NS},
        "spec": {"selector": {"name": _JOB}, "script": _SCRIPT, "timeout": 60, **spec},
    }


async def _run_scaler(
    client: Client, res: Resource, name: str, spec: dict[str, Any]
) -> tuple[str, str, float]:
    """Create a scaler and wait for it to finish: ``(outcome condition, reason, seconds)``."""
    started = time.monotonic()
    await client.create(res, _scaler(res, name, spec))

    async def done() -> bool:
        scaler = await client.get(res, name, namespace=_NS)
        job = await client.get(TRAININGJOBS, _JOB, namespace=_NS)
        finished = (scaler.get("status") or {}).get("step") == "Done"
        return finished and not (job.get("status") or {}).get("currentScaler")

    await _until(done, timeout=180, what=f"{res.kind} {name}")
    status = (await client.get(res, name, namespace=_NS))["status"]
    last = status["conditions"][-1]
    return last["type"], last.get("reason", ""), time.monotonic() - started


async def _drill(sandbox: Sandbox, rounds: int) -> None:
    async with Client.connect(sandbox.kubeconfig) as client:
        await client.create(TRAININGJOBS, yaml.safe_load(_EXAMPLE.read_text()), namespace=_NS)

        async def launcher_running() -> bool:
            job = await client.get(TRAININGJOBS, _JOB, namespace=_NS)
            return (job.get("status") or {}).get("phase") == "Running"

        await _until(launcher_running, timeout=120, what="the job to run")
        setup = await client.exec(
            _NS,
            _LAUNCHER,
            ["sh", "-c", f"mkdir -p /scripts && cat > {_SCRIPT}"],
            stdin=b'echo "$1" >> /scripts/runs\n',
            timeout=10,
        )
        assert setup.exit_code == 0, setup.stderr
        refusals = cycle(_REFUSALS)
        statuses = cycle(_STATUSES)
        outcomes: list[tuple[str, str]] = []
        durations: dict[int, list[float]] = {}
        injected = 0
        for index in range(rounds):
            for res, spec in (
                (SCALEOUTS, {"toAdd": {"count": 1}}),
                (SCALEINS, {"toDelete": {"count": 1}}),
            ):
                times, status = next(refusals), next(statuses)
                fault = Fault(
                    subresource="exec",
                    query_contains={"command": _SCRIPT},
                    status=status,
                    times=times,
                )
                if times:
                    sandbox.server.inject(fault)
                kind, reason, seconds = await _run_scaler(
                    client, res, f"{res.kind.lower()}-{index}", spec
                )
                injected += fault.fired
                outcomes.append((kind, reason))
                durations.setdefault(times, []).append(seconds)
                print(
                    f"   {res.kind} {index}: {times} x {status} -> {kind} {reason} "
                    f"({seconds:.1f}s, refused {fault.fired} times)"
                )
        sandbox.server.inject(
            Fault(subresource="exec", query_contains={"command": _SCRIPT}, status=403)
        )
        forbidden = await _run_scaler(client, SCALEOUTS, "forbidden", {"toAdd": {"count": 1}})
        print(f"   ScaleOut forbidden: 1 x 403 -> {forbidden[0]} {forbidden[1]}")
        runs = await client.exec(_NS, _LAUNCHER, ["cat", "/scripts/runs"], timeout=10)
        lines = runs.stdout.decode().splitlines()
    succeeded = sum(1 for kind, _ in outcomes if kind == "ScaleSucceeded")
    _report.figure(
        "scalers succeeded under transient exec refusals",
        succeeded,
        f"of {len(outcomes)}",
        compare=f"{injected} refusals injected; before: each refused one failed (ScriptFailed)",
    )
    _report.figure(
        "script runs counted in the launcher",
        len(lines),
        f"for {succeeded} successes",
        compare="must be equal: never twice, never lost",
    )
    _report.figure(
        "permanent 403: outcome ScriptNotStarted",
        1.0 if forbidden[1] == "ScriptNotStarted" else 0.0,
        "(1 = yes)",
        compare=f"{forbidden[0]} {forbidden[1]}",
    )
    for times in sorted(durations):
        _report.figure(
            f"scaler duration with {times} refusals (median)",
            statistics.median(durations[times]),
            "s",
        )


async def main(rounds: int) -> None:
    _report.header("scaler scripts under exec refusals (sandbox, real clock)")
    options = SandboxOptions(
        nodes=4,
        node_gpus=8,
        pod_start_delay=0.0,
        metrics_bind_address="0",
        health_probe_bind_address="0",
    )
    await run_sandbox(options, lambda sandbox: _drill(sandbox, rounds))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="ScaleOut + ScaleIn pairs")
    asyncio.run(main(parser.parse_args().rounds))
