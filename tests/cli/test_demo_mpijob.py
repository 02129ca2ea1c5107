"""``etctl sandbox --demo mpijob``: every step shown and checked, and a failure explained."""

from __future__ import annotations

import re

import pytest

from etctl.cli._demo_mpijob import run_mpijob_demo
from etctl.testing import Behaviour, PodPolicy
from tests.cli._demo import failed_demo
from tests.cli._process import sandbox_process

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

JOB = "elastic-horovod"


def worker(index: int) -> str:
    return f"{JOB}-worker-{index}"


def host(index: int) -> str:
    return f"{worker(index)}.{JOB}.default.svc:1"


async def test_the_mpijob_demo_shows_every_step_and_exits_0() -> None:
    async with sandbox_process("--demo", "mpijob", "--pod-start-delay=0") as demo:
        status, out, err = await demo.finish(timeout=60)
    assert status == 0, f"{out}\n{err}"
    assert "Traceback" not in err
    assert out.splitlines()[0].startswith("etctl sandbox --demo mpijob: an elastic MPIJob")
    steps = re.findall(r"^\[(\d)/7\] (.*)$", out, flags=re.MULTILINE)
    assert [number for number, _ in steps] == ["1", "2", "3", "4", "5", "6", "7"]

    def step(number: int) -> str:
        start = out.index(f"[{number}/7]")
        end = out.index(f"[{number + 1}/7]") if number < 7 else len(out)
        return out[start:end]

    # 1. The job reaches Running: workers, then the launcher, then the phase.
    assert re.search(rf"pod/{worker(0)}\s+.*-> Running", step(1))
    assert re.search(rf"mpijob/{JOB}\s+phase (\w+ -> )?Running", step(1))
    assert f"ok MPIJob {JOB} is Running: launcher and 3 workers" in step(1)
    # 2. discover_hosts.sh as Horovod runs it: host:slots of every Ready worker.
    assert f"$ kubectl exec {JOB}-launcher -- sh /etc/mpi/discover_hosts.sh" in step(2)
    for index in range(3):
        assert f"          {host(index)}" in step(2)
    # 3. kubectl scale: the scaler the operator makes, the new hosts.
    assert f"$ kubectl scale mpijob {JOB} --replicas=5" in step(3)
    assert re.search(rf"scaleout/{JOB}-mpijob-replicas-\d+\s+step Creating -> Joining", step(3))
    assert f"        + {host(3)}" in step(3)
    assert f"ok 5 workers: added {worker(3)}, {worker(4)}" in step(3)
    # 4. et-operator's ScaleIn naming the MPIJob: the highest index leaves the script first.
    assert re.search(rf"scalein/{JOB}-scale-in\s+removes {worker(4)}", step(4))
    assert f"        - {host(4)}" in step(4)
    assert f"ok 4 workers: the operator chose {worker(4)}" in step(4)
    leaves = re.search(rf"configmap/{JOB}-config\s+discover_hosts.sh -echo {host(4)}", step(4))
    terminating = re.search(rf"pod/{worker(4)}\s+Running -> Terminating", step(4))
    assert leaves is not None
    assert terminating is not None
    assert leaves.start() < terminating.start()
    # 5. The eviction, healed under a new name.
    assert re.search(rf"pod/{worker(1)}\s+Running -> Evicted", step(5))
    assert f"ok {worker(1)} was replaced by {worker(5)}, a new name" in step(5)
    assert f"        + {host(5)}" in step(5)
    # 6. Suspended as Kueue does, resumed on the node it chose, with the same workers.
    assert re.search(rf"mpijob/{JOB}\s+phase Running -> Suspended", step(6))
    assert "MPIJobWorkerFailed" not in step(6)
    assert re.search(
        r"ok resumed: the pods were built from the templates Kueue left, all on node-0", step(6)
    )
    # 7. The summary, the operator's events, and the teardown.
    summary = step(7)
    for name in (worker(0), worker(2), worker(3), worker(5)):
        assert re.search(rf"{name}\s+Running\s+node-0", summary)
    assert re.search(r"1\s+ScalingInSucceeded", summary)
    assert re.search(r"1\s+MPIJobSuspended", summary)
    assert f"$ kubectl delete mpijob {JOB}" in summary
    assert "ok the job and everything it owned are gone" in summary
    assert re.search(r"ok Demo finished, sandbox stopped: [\d.]+s in all$", out)


async def test_a_step_that_does_not_happen_fails_the_demo_with_the_state_it_was_in() -> None:
    pending = PodPolicy(name="*-worker-*", does=Behaviour(stay_pending=True))
    text = await failed_demo(run_mpijob_demo, 7, pending, step_timeout=3)
    assert "[2/7]" not in text
    failure = text.strip().splitlines()[-1]
    assert failure.startswith("  FAILED: the launcher and 3 workers to run: not done after 3s (")
    assert f"pods not running: {worker(0)} ContainerCreating" in failure
