"""A running TrainingJob is never failed by a name it chose itself.

Workers and their services are named ``<job>-worker-<index>``, and a service name is a DNS label of
at most 63 characters. A job of a 54-character name leaves room for one digit: indices 0 to 9.
Every replacement takes a new index while one fits; after that a replacement takes a name that
left the job (its pod gone) instead of one that would not fit, and the job keeps running.
"""

from __future__ import annotations

import copy
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from etctl.jobs.launcher import PUSHED_ANNOTATION, digest
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.runtime import PODS, objects
from etctl.testing import eventually
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import NS, hostfile
from tests.schema_support import EXAMPLES, load_yaml

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)

NAME = "elastic-training-" + "n" * 37
assert len(NAME) == 54
PREFIX = f"{NAME}-worker-"
LAUNCHER = f"{NAME}-launcher"


def job() -> dict[str, Any]:
    document = copy.deepcopy(load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml"))
    document["metadata"]["name"] = NAME
    document["spec"]["etReplicaSpecs"]["worker"]["restartPolicy"] = "OnFailure"
    return document


def pushed(env: Cluster) -> str:
    """The digest of the hostfile last pushed into the launcher."""
    return str(objects.annotations(env.get(PODS, LAUNCHER) or {}).get(PUSHED_ANNOTATION, ""))


def replaced(env: Cluster, before: list[str]) -> bool:
    """The targets are no longer ``before``."""
    return env.status(NAME).get("targetWorkers") != before


def settled(env: Cluster) -> bool:
    """Two workers run and are the hostfile; no other worker pod is left."""
    status = env.status(NAME)
    targets = status.get("targetWorkers") or []
    workers = [name for name in env.phases() if name.startswith(PREFIX)]
    return (
        len(targets) == 2
        and sorted(status.get("currentWorkers") or []) == sorted(targets)
        and sorted(workers) == sorted(targets)
        and env.pods_running(*targets)
    )


async def test_replacements_never_choose_a_name_too_long(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(job())
        await eventually(lambda: env.status(NAME).get("phase") == "Running")
        used: list[str] = []
        for _ in range(12):  # indices 2..9 first, then names that left the job
            victim = max(env.status(NAME)["targetWorkers"], key=lambda n: int(n.rsplit("-", 1)[1]))
            before = env.status(NAME)["targetWorkers"]
            env.kubelet.exit(NS, victim, 1)
            await eventually(partial(replaced, env, before))
            await eventually(lambda: settled(env))
            (new,) = set(env.status(NAME)["targetWorkers"]) - set(before)
            used.append(new)
            assert env.condition(NAME, "Failed") is None
            assert env.status(NAME)["phase"] == "Running"
        assert all(len(name) <= 63 for name in used)
        assert used[:8] == [f"{PREFIX}{i}" for i in range(2, 10)]
        assert {int(name.rsplit("-", 1)[1]) for name in used[8:]} <= set(range(10))
        assert env.status(NAME)["lastWorkerIndex"] == 9
        assert env.pods_running(LAUNCHER)
        assert all(len(name) <= 63 for name in env.names(PODS))
        hosts = "".join(f"{name}:1\n" for name in env.status(NAME)["currentWorkers"])
        await eventually(lambda: pushed(env) == digest(hosts))
        assert await hostfile(env, LAUNCHER) == hosts
