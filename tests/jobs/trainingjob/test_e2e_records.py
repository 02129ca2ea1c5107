"""What a TrainingJob knows of its launcher comes from the world, not from which write landed.

The operator creates the launcher, then writes ``LauncherCreated`` with the round's status. A
process that dies in between (or a status lost another way: restored from a backup, rewritten by
hand) leaves a launcher that the status does not mention. The next operator must record it from
the launcher it finds, so that a launcher that vanishes afterwards fails the job as documented
instead of being silently created again (which would start the training over).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import PODS, objects
from etctl.testing import Behaviour, Fault, PodPolicy, eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, example

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)


WAITING = {
    "type": "LauncherCreated",
    "status": "False",
    "reason": "WorkersNotReady",
    "message": "0 of 2 workers of TrainingJob elastic-training are running members",
}


def forget_the_launcher(env: Cluster, before: dict[str, str] | None) -> None:
    """Write the job's status as it was before the write that recorded the launcher."""
    job = env.stored(JOB)
    status = job["status"]
    kept = [c for c in status["conditions"] if c["type"] != "LauncherCreated"]
    status["conditions"] = kept if before is None else [*kept, before]
    env.server.storage.update(TRAININGJOBS, job, namespace=NS, subresource="status")


@pytest.mark.parametrize(
    "before",
    [pytest.param(WAITING, id="waiting-recorded"), pytest.param(None, id="nothing-recorded")],
)
async def test_a_launcher_the_status_lost_is_recorded_and_its_vanishing_fails_the_job(
    tmp_path: Path, before: dict[str, str] | None
) -> None:
    async with cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        # The launcher never leaves Pending: no replica count will ever mention it.
        env.kubelet.add_policy(PodPolicy(name=LAUNCHER, does=Behaviour(stay_pending=True)))
        async with env.operating():
            env.apply(example())
            await eventually(lambda: env.phases().get(LAUNCHER) == "Pending")
            await eventually(
                lambda: env.condition(JOB, "LauncherCreated") == ("True", "PodsCreated")
            )
        # The operator is gone; the status it wrote after creating the launcher is lost.
        forget_the_launcher(env, before)
        assert env.condition(JOB, "LauncherCreated") == (
            None if before is None else ("False", "WorkersNotReady")
        )
        launcher = objects.uid(env.get(PODS, LAUNCHER) or {})
        async with env.operating() as manager:
            await eventually(manager.cache.has_synced)
            await eventually(
                lambda: env.condition(JOB, "LauncherCreated") == ("True", "PodsCreated")
            )
            await wait_idle(env.server, manager)
            assert objects.uid(env.get(PODS, LAUNCHER) or {}) == launcher
            # Afterwards the launcher vanishes: the job fails, no new launcher is made.
            env.server.storage.delete(PODS, LAUNCHER, namespace=NS)
            await eventually(lambda: env.condition(JOB, "Failed") is not None)
            await wait_idle(env.server, manager)
        assert env.condition(JOB, "Failed") == ("True", "TrainingJobFailed")
        failed = next(c for c in env.status(JOB)["conditions"] if c["type"] == "Failed")
        assert f"launcher pod {LAUNCHER} of TrainingJob {JOB} vanished" in failed["message"]
        assert LAUNCHER not in env.phases()


async def test_a_launcher_only_decided_on_is_created_and_the_job_runs(tmp_path: Path) -> None:
    # An operator of an earlier version opened the gate, wrote LauncherCreated (GateOpened), and
    # stopped before it sent the create: the status says created, and there is no launcher.
    async with cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env:
        refused = env.server.inject(
            Fault(verb="create", resource="pods", body_contains=LAUNCHER, status=403, times=None)
        )
        async with env.operating():
            env.apply(example())
            await eventually(lambda: refused.fired > 0)
            await eventually(lambda: env.status(JOB).get("currentWorkers") is not None)
        env.server.faults.remove(refused)
        assert LAUNCHER not in env.phases()
        assert env.condition(JOB, "LauncherCreated") != ("True", "PodsCreated")
        job = env.stored(JOB)
        status = job["status"]
        kept = [c for c in status["conditions"] if c["type"] != "LauncherCreated"]
        decided = {"type": "LauncherCreated", "status": "True", "reason": "GateOpened"}
        status["conditions"] = [*kept, decided]
        env.server.storage.update(TRAININGJOBS, job, namespace=NS, subresource="status")
        async with env.operating():
            await eventually(lambda: env.pods_running(LAUNCHER))
            await eventually(
                lambda: env.condition(JOB, "Running") == ("True", "TrainingJobRunning")
            )
        assert env.condition(JOB, "Failed") is None


async def test_a_vanished_launcher_created_again_is_a_warning(tmp_path: Path) -> None:
    document = example()
    document["spec"]["etReplicaSpecs"]["launcher"]["restartPolicy"] = "Always"
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.pods_running(LAUNCHER))
        first = objects.uid(env.get(PODS, LAUNCHER) or {})
        env.server.storage.delete(PODS, LAUNCHER, namespace=NS)
        await eventually(lambda: objects.uid(env.get(PODS, LAUNCHER) or {}) not in ("", first))
        await eventually(lambda: len(env.events("TrainingJobLauncherVanished")) == 1)
        (event,) = env.events("TrainingJobLauncherVanished")
        assert event["type"] == "Warning"
        assert event["message"] == (
            f"launcher {LAUNCHER} of TrainingJob {JOB} vanished; created again: its "
            "restartPolicy is Always"
        )
        assert env.condition(JOB, "Failed") is None
