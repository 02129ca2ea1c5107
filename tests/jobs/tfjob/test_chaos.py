"""A TFJob (parameter servers and workers) under seeded API chaos ends as it does without faults.

The job starts two parameter servers and three workers, the workers exit 0 and the job succeeds,
with cleanPodPolicy Running removing the parameter servers. Each step runs under a burst of faults
drawn from the seed (see :mod:`tests.common._chaos`), with watches cut and resumed into drops and
410s, and the server held for a few seconds once. The job's status, its pods and services, and the
names ever created must be what a fault-free run leaves; a pod the job does not own must not be
written to; deleting the job must leave nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from etctl.jobs.tfjob import TFJobPlugin
from etctl.jobs.tfjob._api import TFJOBS
from etctl.runtime import PODS, Manager
from etctl.testing import KubeletConfig
from tests._cluster import Cluster, cluster
from tests.common._chaos import Chaos, Ledger, Target, crashes
from tests.jobs.tfjob._manifests import NAMESPACE, replica, tfjob
from tests.runtime._realtime import run_manager

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet plays the TFJob containers (image tf:2) and their exits"
)

JOB = "chaos"
PS = [f"{JOB}-ps-{i}" for i in range(2)]
WORKERS = [f"{JOB}-worker-{i}" for i in range(3)]
TARGETS = (
    Target("create", "pods"),
    Target("create", "services"),
    Target("patch", "tfjobs", "status", conflicts=True),
    Target("update", "tfjobs", "status", conflicts=True),
    Target("delete", "pods"),
    Target("delete", "services"),
)
WATCHED = ("pods", "services", "tfjobs")
SEEDS = range(5)


@dataclass(frozen=True)
class Outcome:
    """What a run leaves that faults must not change (timestamps aside)."""

    status: dict[str, Any]
    pods: dict[str, str]
    services: list[str]
    created: list[str]
    deleted: list[str]


def timeless(status: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in status.items() if not k.endswith("Time")}
    kept["conditions"] = [
        (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
        for c in status.get("conditions", [])
    ]
    return kept


def job_pods(c: Cluster) -> dict[str, str]:
    return {name: phase for name, phase in c.phases().items() if name != "bystander"}


async def scenario(c: Cluster, manager: Manager, seed: int | None) -> Outcome:
    """The job's whole life, under the chaos of ``seed`` (None: no fault)."""
    ledger = Ledger(c.server, NAMESPACE)
    driver = Chaos(c.server, c.clock, [manager], TARGETS, WATCHED, seed=seed or 0)
    chaos = None if seed is None else driver
    held = -1 if chaos is None else chaos.rng.randrange(2)
    stray = c.server.storage.create(
        PODS,
        {
            "metadata": {
                "name": "bystander",
                "labels": {"training.kubeflow.org/job-name": JOB, "app": "other"},
            },
            "spec": {"containers": [{"name": "tensorflow", "image": "tf:2"}]},
        },
        namespace=NAMESPACE,
    )
    ledger.bystander("pods", stray)

    body = tfjob(JOB, run_policy={"cleanPodPolicy": "Running"}, PS=replica(2), Worker=replica(3))
    c.server.storage.create(TFJOBS, body, namespace=NAMESPACE)
    if chaos is not None:
        chaos.storm()
        chaos.cut_watches()
        if held == 0:
            await chaos.hold(3.0)
    await driver.converge(
        lambda: (
            c.state(JOB) == "Running"
            and set(job_pods(c).values()) == {"Running"}
            and len(job_pods(c)) == 5
        )
    )

    for name in WORKERS:
        c.exit(name, 0)
    if chaos is not None:
        chaos.storm()
        chaos.cut_watches()
        if held == 1:
            await chaos.hold(3.0)
    await driver.converge(
        lambda: c.state(JOB) == "Succeeded" and "Running" not in job_pods(c).values()
    )
    await driver.settle()  # the end state, not a retry still waiting on its backoff
    outcome = Outcome(
        status=timeless(c.status(JOB)),
        pods=job_pods(c),
        services=sorted(c.services()),
        created=sorted(ledger.created),
        deleted=sorted(ledger.deleted),
    )
    assert all(count == 1 for count in ledger.created.values()), ledger.created
    if chaos is not None:
        assert chaos.fired >= 3, "the schedule hardly touched the operator"
        chaos.calm()

    c.server.storage.delete(TFJOBS, JOB, namespace=NAMESPACE)
    await driver.converge(lambda: list(c.pods()) == ["bystander"] and c.services() == {})
    assert ledger.touched_bystanders() == []
    assert ledger.changed_bystanders() == []
    ledger.unsubscribe()
    return outcome


_reference: list[Outcome] = []


async def reference(tmp_path: Path) -> Outcome:
    """The fault-free outcome (computed once per session)."""
    if not _reference:
        async with cluster(tmp_path / "reference", TFJobPlugin(), kubelet=KubeletConfig()) as c:
            async with run_manager(c.operator().manager) as manager:
                _reference.append(await scenario(c, manager, None))
    return _reference[0]


async def test_the_fault_free_run_ends_as_planned(tmp_path: Path) -> None:
    outcome = await reference(tmp_path)
    assert outcome.status["conditions"][-1][:3] == ("Succeeded", "True", "TFJobSucceeded")
    assert outcome.pods == dict.fromkeys(WORKERS, "Succeeded")
    assert outcome.services == WORKERS  # each cleaned pod took its service along
    assert outcome.created == sorted(["bystander", *PS, *WORKERS])
    assert outcome.deleted == PS


@pytest.mark.parametrize("seed", SEEDS)
async def test_chaos_changes_nothing_in_the_end(tmp_path: Path, seed: int) -> None:
    expected = await reference(tmp_path)
    before = crashes(["tfjob"])
    async with cluster(tmp_path / "chaos", TFJobPlugin(), kubelet=KubeletConfig()) as c:
        async with run_manager(c.operator().manager) as manager:
            outcome = await scenario(c, manager, seed)
    assert outcome == expected
    assert crashes(["tfjob"]) == before
