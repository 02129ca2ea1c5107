"""A TrainingJob's whole life under seeded API chaos ends exactly as it does without faults.

The scenario: the job starts with two workers, a ScaleOut adds two with a script, a ScaleIn removes
one by name with a script, a worker is evicted and replaced, and the launcher exits 0. Each step
runs under a burst of faults drawn from the seed (see :mod:`tests.common._chaos`), with watches cut
and resumed into drops and 410s, and the server held for a few seconds at one step. Afterwards the
job, its scalers, the hostfile and the pods must be what a fault-free run leaves; no pod name may
have been created twice or outside the plan; the scripts must each have run once; objects the job
does not own must not have been written to; and deleting the job must leave no pod of it behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import CONFIGMAPS, PODS, Manager, Resource
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.common._chaos import Chaos, Ledger, Target, crashes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, example, scale_out_script, w

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)

SCALE_OUT = "elastic-training-scaleout-script"
SCALE_IN = "less"
SCRIPT = 'echo "$SCALE_REASON $1" >> /scripts/runs\n'
SCRIPT_PATH = "/scripts/on-scale.sh"
CONTROLLERS = (
    "trainingjob",
    "trainingjob-hostfile",
    "trainingjob-scaling",
    "trainingjob-scalein-adoption",
    "trainingjob-scaleout-adoption",
)
TARGETS = (
    *(Target("create", r) for r in ("pods", "services", "configmaps", "roles", "rolebindings")),
    *(Target("create", r) for r in ("serviceaccounts", "secrets")),
    Target("patch", "trainingjobs"),
    Target("patch", "trainingjobs", "status", conflicts=True),
    Target("patch", "scaleouts"),
    Target("patch", "scaleouts", "status", conflicts=True),
    Target("patch", "scaleins"),
    Target("patch", "scaleins", "status", conflicts=True),
    Target("patch", "configmaps"),
    Target("patch", "pods"),
    Target("delete", "pods"),
    Target("get", "pods", "exec"),
)
WATCHED = ("pods", "trainingjobs", "scaleouts", "scaleins", "configmaps", "services")
SEEDS = range(5)
UID = re.compile(r"\(uid [0-9a-f-]+\)")
LABELS = {
    "training.kubeflow.org/job-name": JOB,
    "training.kubeflow.org/operator-name": "etctl",
    "training.kubeflow.org/replica-type": "worker",
}


@dataclass(frozen=True)
class Outcome:
    """Everything a run leaves that faults must not change (timestamps aside)."""

    job: dict[str, Any]
    replicas: int
    scale_out: dict[str, Any]
    scale_in: dict[str, Any]
    hostfile: str
    runs: str
    pods: dict[str, str]
    created: list[str]
    deleted: list[str]


def timeless(status: dict[str, Any]) -> dict[str, Any]:
    """A status without its timestamps, recorded resourceVersions and uids (they differ by run)."""
    kept = {
        k: v
        for k, v in status.items()
        if not k.endswith("Time") and not k.endswith("ResourceVersion")
    }
    kept["conditions"] = [
        (c["type"], c["status"], c.get("reason", ""), UID.sub("(uid)", c.get("message", "")))
        for c in status.get("conditions", [])
    ]
    return kept


def hostfile_hosts(env: Cluster) -> list[str]:
    text = env.kubelet.read_file(NS, LAUNCHER, "/etc/edl/hostfile").decode()
    return sorted(line.split(":")[0] for line in text.splitlines())


def settled(env: Cluster, *, without: str) -> bool:
    """The job runs three workers, none named ``without``, and the hostfile lists them."""
    status = env.status(JOB)
    current = status.get("currentWorkers") or []
    return (
        len(current) == 3
        and without not in current
        and sorted(status.get("targetWorkers") or []) == sorted(current)
        and env.pods_running(*current)
        and hostfile_hosts(env) == sorted(current)
    )


def scaled(env: Cluster, res: Resource, name: str) -> bool:
    return env.scaler_done(res, name) and env.status(JOB).get("currentScaler") is None


def finished(env: Cluster) -> bool:
    """Succeeded, with the running workers cleaned up (cleanPodPolicy: Running)."""
    pods = env.phases()
    del pods["bystander"]
    return env.status(JOB).get("phase") == "Succeeded" and "Running" not in pods.values()


async def step(chaos: Chaos | None, hold_here: bool) -> None:
    """The faults of one step (none in the fault-free run); the server held if it is the one."""
    if chaos is None:
        return
    chaos.storm()
    chaos.cut_watches()
    if hold_here:
        await chaos.hold(3.0)


async def scenario(env: Cluster, manager: Manager, seed: int | None) -> Outcome:
    """The job's whole life, under the chaos of ``seed`` (None: no fault)."""
    ledger = Ledger(env.server, NS)
    chaos = (
        None
        if seed is None
        else Chaos(env.server, env.clock, [manager], TARGETS, WATCHED, seed=seed)
    )
    driver = chaos or Chaos(env.server, env.clock, [manager], TARGETS, WATCHED, seed=0)
    held = -1 if chaos is None else chaos.rng.randrange(1, 5)
    # Objects the job does not own: a pod carrying its workers' labels, and a ConfigMap.
    stray = env.server.storage.create(
        PODS,
        {
            "metadata": {"name": "bystander", "labels": LABELS},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        },
        namespace=NS,
    )
    ledger.bystander("pods", stray)
    settings = env.server.storage.create(
        CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"a": "1"}}, namespace=NS
    )
    ledger.bystander("configmaps", settings)

    job = example("training-job.yaml")
    job["spec"]["etReplicaSpecs"]["worker"]["restartPolicy"] = "OnFailure"
    env.apply(job)
    await step(chaos, held == 0)
    await driver.converge(
        lambda: env.status(JOB).get("currentWorkers") == [w(0), w(1)] and env.pods_running(LAUNCHER)
    )
    setup = env.kubelet.exec(
        NS, LAUNCHER, ["sh", "-c", f"mkdir -p /scripts && cat > {SCRIPT_PATH}"], stdin=SCRIPT
    )
    assert setup.exit_code == 0, setup.stderr

    env.apply(scale_out_script())
    await step(chaos, held == 1)
    await driver.converge(lambda: scaled(env, SCALEOUTS, SCALE_OUT))

    scale_in = example("scale-in-pod-names.yaml")
    scale_in["metadata"] = {"name": SCALE_IN}
    scale_in["spec"]["script"] = SCRIPT_PATH
    env.apply(scale_in)
    await step(chaos, held == 2)
    await driver.converge(lambda: scaled(env, SCALEINS, SCALE_IN))

    env.kubelet.evict(NS, w(0))
    await step(chaos, held == 3)
    await driver.converge(lambda: settled(env, without=w(0)))
    hostfile = env.kubelet.read_file(NS, LAUNCHER, "/etc/edl/hostfile").decode()
    runs = env.kubelet.read_file(NS, LAUNCHER, "/scripts/runs").decode()

    env.kubelet.exit(NS, LAUNCHER, 0)
    await step(chaos, held == 4)
    await driver.converge(lambda: finished(env))
    await driver.settle()  # the end state, not a retry still waiting on its backoff
    outcome = Outcome(
        job=timeless(env.status(JOB)),
        replicas=env.stored(JOB)["spec"]["etReplicaSpecs"]["worker"]["replicas"],
        scale_out=timeless(env.scaler(SCALEOUTS, SCALE_OUT)),
        scale_in=timeless(env.scaler(SCALEINS, SCALE_IN)),
        hostfile=hostfile,
        runs=runs,
        pods=env.phases(),
        created=sorted(ledger.created),
        deleted=sorted(ledger.deleted),
    )
    assert ledger.recreated() == []
    assert all(count == 1 for count in ledger.created.values()), ledger.created

    # Deleting the job takes every pod of it, and only those.
    if chaos is not None:
        assert chaos.fired >= 5, "the schedule hardly touched the operator"
        chaos.calm()
    env.server.storage.delete(TRAININGJOBS, JOB, namespace=NS)
    await driver.converge(lambda: env.names(PODS) == ["bystander"])
    assert ledger.touched_bystanders() == []
    assert ledger.changed_bystanders() == []
    ledger.unsubscribe()
    return outcome


_reference: list[Outcome] = []


async def reference(tmp_path: Path) -> Outcome:
    """The fault-free outcome (computed once per session)."""
    if not _reference:
        async with (
            cluster(
                tmp_path / "reference", TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)
            ) as env,
            env.operating() as manager,
        ):
            _reference.append(await scenario(env, manager, None))
    return _reference[0]


async def test_the_fault_free_run_ends_as_planned(tmp_path: Path) -> None:
    outcome = await reference(tmp_path)
    assert outcome.job["phase"] == "Succeeded"
    assert outcome.job["targetWorkers"] == [w(4), w(2), w(3)]
    assert outcome.job["currentWorkers"] == [w(2), w(3), w(4)]
    assert outcome.replicas == 3
    assert outcome.scale_out["addPods"] == [w(2), w(3)]
    assert outcome.scale_in["toDeletePods"] == [w(1)]
    assert outcome.runs.splitlines() == [
        f"more-data {w(0)}:1,{w(1)}:1,{w(2)}:1,{w(3)}:1",
        f" {w(0)}:1,{w(2)}:1,{w(3)}:1",
    ]
    assert outcome.created == sorted(["bystander", LAUNCHER, *(w(i) for i in range(5))])
    assert outcome.pods == {"bystander": "Running", LAUNCHER: "Succeeded"}


@pytest.mark.parametrize("seed", SEEDS)
async def test_chaos_changes_nothing_in_the_end(tmp_path: Path, seed: int) -> None:
    expected = await reference(tmp_path)
    before = crashes(CONTROLLERS)
    async with (
        cluster(tmp_path / "chaos", TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        outcome = await scenario(env, manager, seed)
    assert outcome == expected
    assert crashes(CONTROLLERS) == before
