"""``etctl sandbox --demo``: every step shown and checked, failures explained, interruptions."""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import signal
import sys

import pytest

from etctl.cli._demo import run_demo
from etctl.testing import Behaviour, PodPolicy
from tests.cli._demo import failed_demo
from tests.cli._process import sandbox_process

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)


def worker(index: int) -> str:
    return f"elastic-mnist-worker-{index}"


async def test_the_demo_shows_every_step_and_exits_0() -> None:
    async with sandbox_process("--demo", "--pod-start-delay=0") as demo:
        status, out, err = await demo.finish()
    assert status == 0, f"{out}\n{err}"
    assert "\x1b" not in out  # piped: no colour, no spinner
    assert "Traceback" not in err
    steps = re.findall(r"^\[(\d)/6\] (.*)$", out, flags=re.MULTILINE)
    assert [number for number, _ in steps] == ["1", "2", "3", "4", "5", "6"]
    # 1. The job reaches Running: workers, then the launcher, then the phase.
    assert re.search(r"pod/elastic-mnist-worker-0\s+.*-> Running", out)
    assert re.search(r"pod/elastic-mnist-launcher\s+.*-> Running", out)
    assert re.search(r"trainingjob/elastic-mnist\s+phase \w+ -> Running", out)
    assert "ok TrainingJob elastic-mnist is Running: launcher and 3 workers" in out
    # 2. The hostfile as the launcher reads it.
    assert "$ kubectl exec elastic-mnist-launcher -- cat /etc/edl/hostfile" in out
    first = out.index("[2/6]")
    assert "          elastic-mnist-worker-2:1" in out[first : out.index("[3/6]")]
    # 3. The scale-out's steps, the new workers, the new hostfile.
    assert re.search(r"scaleout/elastic-mnist-scale-out\s+step Creating -> Joining", out)
    assert "ScaleSucceeded (ScalingOutSucceeded)" in out
    assert f"        + {worker(3)}:1" in out
    assert f"ok 5 workers: added {worker(3)}, {worker(4)}" in out
    # 4. The scale-in: which worker the operator chose.
    assert re.search(r"scalein/elastic-mnist-scale-in\s+removes elastic-mnist-worker-4", out)
    assert f"        - {worker(4)}:1" in out
    assert f"ok 4 workers: the operator chose {worker(4)}" in out
    # 5. The eviction and the replacement under a new name.
    assert re.search(rf"pod/{worker(1)}\s+Running -> Evicted", out)
    assert f"ok {worker(1)} was replaced by {worker(5)}, a new name" in out
    assert f"        + {worker(5)}:1" in out
    # 6. The summary: final workers, the operator's events, and the teardown.
    summary = out[out.index("[6/6]") :]
    for name in (worker(0), worker(2), worker(3), worker(5)):
        assert re.search(rf"{name}\s+Running\s+node-\d", summary)
    assert "trainingjob/elastic-mnist" in summary
    assert re.search(r"1\s+ScalingOutSucceeded", summary)
    assert "$ kubectl delete trainingjob elastic-mnist" in summary
    assert "ok the job and everything it owned are gone" in summary
    assert re.search(r"ok Demo finished, sandbox stopped: [\d.]+s in all$", out)


async def test_a_step_that_does_not_happen_fails_the_demo_with_the_state_it_was_in() -> None:
    pending = PodPolicy(name="*-worker-*", does=Behaviour(stay_pending=True))
    text = await failed_demo(run_demo, 6, pending, step_timeout=3)
    assert "[2/6]" not in text
    failure = text.strip().splitlines()[-1]
    assert failure.startswith("  FAILED: the launcher and 3 workers to run: not done after 3s (")
    assert "job phase Created; 0 worker(s) in the hostfile" in failure
    assert f"pods not running: {worker(0)} ContainerCreating" in failure


async def test_a_failed_scaler_fails_the_demo_at_once_with_its_reason() -> None:
    crash = PodPolicy(name=worker(3), does=Behaviour(run_seconds=0, exit_code=1))
    # The step timeout is only a backstop: the demo must fail on the scaler's reason, well
    # before it, even on a machine loaded enough to slow the sandbox tenfold.
    text = await failed_demo(run_demo, 6, crash, step_timeout=60)
    assert "[3/6]" in text
    assert "[4/6]" not in text
    failure = text.strip().splitlines()[-1]
    assert failure.startswith(
        "  FAILED: scaleout/elastic-mnist-scale-out failed (WorkerFailed): "
    ), failure


async def test_an_interrupted_demo_stops_cleanly_with_128_plus_the_signal() -> None:
    async with sandbox_process("--demo", "--pod-start-delay=60") as demo:
        await demo.read_until(r"^\[1/6\]")
        await demo.read_until(r"pod/elastic-mnist-worker-0")
        demo.process.send_signal(signal.SIGINT)
        status, out, err = await demo.finish()
    assert status == 128 + signal.SIGINT.value, err
    assert out.splitlines()[-1] == (
        "  FAILED: interrupted: the sandbox was stopped before the demo finished"
    )
    assert "Traceback" not in err


async def test_a_reader_that_goes_away_stops_the_demo_quietly() -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("needs bash for a pipeline")
    script = (
        f"{shlex.quote(sys.executable)} -m etctl.cli sandbox --demo --pod-start-delay=0 "
        "| head -n 2; echo status=${PIPESTATUS[0]}"
    )
    process = await asyncio.create_subprocess_exec(
        bash,
        "-c",
        script,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    lines = out.decode().splitlines()
    assert lines[0].startswith("etctl sandbox --demo:")
    assert lines[-1] == f"status={128 + signal.SIGPIPE.value}"
    assert "Traceback" not in err.decode()
