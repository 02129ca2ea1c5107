"""``etctl sandbox --demo pytorch``: every step shown and checked, and a failure explained."""

from __future__ import annotations

import re

import pytest

from etctl.cli._demo_pytorchjob import run_pytorchjob_demo
from etctl.testing import Behaviour, PodPolicy
from tests.cli._demo import failed_demo
from tests.cli._process import sandbox_process

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

JOB = "elastic-echo"
RDZV = f"{JOB}-rdzv:29400"


def worker(index: int) -> str:
    return f"{JOB}-worker-{index}"


def env_line(index: int, restarts: int = 3) -> str:
    return (
        f"{worker(index)}  PET_MAX_RESTARTS={restarts} PET_NNODES=2:4 PET_NPROC_PER_NODE=auto "
        f"PET_RDZV_BACKEND=c10d PET_RDZV_ENDPOINT={RDZV}"
    )


async def test_the_pytorch_demo_shows_every_step_and_exits_0() -> None:
    async with sandbox_process("--demo", "pytorch", "--pod-start-delay=0") as demo:
        status, out, err = await demo.finish(timeout=60)
    assert status == 0, f"{out}\n{err}"
    assert "Traceback" not in err
    assert out.splitlines()[0].startswith("etctl sandbox --demo pytorch: an elastic PyTorchJob")
    steps = re.findall(r"^\[(\d)/6\] (.*)$", out, flags=re.MULTILINE)
    assert [number for number, _ in steps] == ["1", "2", "3", "4", "5", "6"]

    def step(number: int) -> str:
        start = out.index(f"[{number}/6]")
        end = out.index(f"[{number + 1}/6]") if number < 6 else len(out)
        return out[start:end]

    # 1. The job reaches Running with its two workers.
    assert re.search(rf"pod/{worker(1)}\s+.*-> Running", step(1))
    assert f"ok PyTorchJob {JOB} is Running: 2 workers" in step(1)
    # 2. Each member's torchrun environment, and one rendezvous address for all, the host's own.
    for index in (0, 1):
        assert f"          {env_line(index)}" in step(2)
    host = re.search(rf"{RDZV} -> {worker(0)} \(([\d.]+)\) from every member", step(2))
    assert host is not None
    assert re.search(rf"{worker(0)}\s+Running\s+node-\d\s+{re.escape(host[1])}", step(1))
    # 3. kubectl scale: the scaler the operator makes, the new members.
    assert f"$ kubectl scale pytorchjob {JOB} --replicas=4" in step(3)
    assert re.search(rf"scaleout/{JOB}-pytorchjob-replicas-\d+\s+step Creating -> Joining", step(3))
    for index in (2, 3):
        assert f"        + {env_line(index)}" in step(3)
    assert f"ok 4 workers: added {worker(2)}, {worker(3)}" in step(3)
    # 4. The rendezvous host evicted: replaced under a new name with the budget left, and the
    # rendezvous moved to a running member.
    assert re.search(rf"pod/{worker(0)}\s+Running -> Evicted", step(4))
    assert f"ok {worker(0)} was replaced by {worker(4)}, a new name" in step(4)
    assert f"        + {env_line(4, restarts=2)}" in step(4)
    assert f"        - {env_line(0)}" in step(4)
    assert re.search(rf"\+ {RDZV} -> {worker(1)} \([\d.]+\) from every member", step(4))
    assert "the rendezvous did not die with its host" in step(4)
    # 5. The ScaleIn naming the PyTorchJob removes the highest index; the others keep running.
    assert re.search(rf"scalein/{JOB}-scale-in\s+removes {worker(4)}", step(5))
    assert f"        - {env_line(4, restarts=2)}" in step(5)
    assert f"ok 3 workers: the operator removed {worker(4)} (the highest index)" in step(5)
    # 6. The summary, the operator's events, and the teardown.
    summary = step(6)
    for index in (1, 2, 3):
        assert re.search(rf"{worker(index)}\s+Running\s+node-\d", summary)
    assert re.search(r"1\s+PyTorchJobWorkerFailed", summary)
    assert re.search(r"1\s+ScalingInSucceeded", summary)
    assert f"$ kubectl delete pytorchjob {JOB}" in summary
    assert "ok the job and everything it owned are gone" in summary
    assert re.search(r"ok Demo finished, sandbox stopped: [\d.]+s in all$", out)


async def test_a_step_that_does_not_happen_fails_the_demo_with_the_state_it_was_in() -> None:
    pending = PodPolicy(name="*-worker-*", does=Behaviour(stay_pending=True))
    text = await failed_demo(run_pytorchjob_demo, 6, pending, step_timeout=3)
    assert "[2/6]" not in text
    failure = text.strip().splitlines()[-1]
    assert failure.startswith("  FAILED: 2 workers to run: not done after 3s (")
    assert f"pods not running: {worker(0)} ContainerCreating" in failure
