"""An elastic PyTorchJob end to end: training-operator's examples, /scale, rendezvous, replacements."""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.jobs.pytorchjob import PyTorchJobPlugin
from etctl.testing import eventually
from tests._cluster import cluster, sandboxed_nodes
from tests.jobs.pytorchjob._manifests import environment, example, resolves, worker

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the members, evicts them and answers execs, in virtual time"
)

JOB = "elastic-example-echo"


async def test_the_echo_example_runs_and_every_member_resolves_the_rendezvous(
    tmp_path: Path,
) -> None:
    async with (
        cluster(tmp_path, PyTorchJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(example("elastic-echo.yaml"))
        await eventually(lambda: env.pods_running(worker(JOB, 0), worker(JOB, 1)))
        await eventually(lambda: env.phase(JOB) == "Running")
        print(env.status(JOB))
        print(await environment(env, worker(JOB, 1)))
        print(await resolves(env, worker(JOB, 0), f"{JOB}-rdzv"))
        print(env.services())
