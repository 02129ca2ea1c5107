"""An elastic job's status has two writers, each field one of them, and neither refuses the other.

The job controller writes the conditions, the phase, the replica counts and the kind's own fields;
the scaling controller writes the membership and the scaler being run. Both run in one operator on
the same jobs at once, so a write of one used to meet the other's concurrent write of *other*
fields as a 409 Conflict, and its reconcile ran again for nothing. Created, run and scaled here:
TrainingJobs (a ScaleOut and a ScaleIn with their scripts) and PyTorchJobs (``/scale`` out and
in), with every status write the server answered counted by its code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.pytorchjob import PYTORCHJOBS, PyTorchJobPlugin
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import Resource
from etctl.testing import eventually
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests.jobs.pytorchjob._manifests import echo
from tests.jobs.trainingjob._manifests import example

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the jobs' pods and execs, in virtual time; the server's request "
    "log counts the status writes by answer"
)

JOBS = 3


def _named(document: dict[str, Any], name: str) -> dict[str, Any]:
    document["metadata"]["name"] = name
    return document


def _scaler(kind: str, name: str, job: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"selector": {"name": job}, **spec},
    }


def _refused(env: Cluster, res: Resource) -> dict[int, int]:
    """The operator's status writes of ``res`` the server refused, by HTTP status."""
    found = env.server.requests.find(verb="patch", resource=res.plural, subresource="status")
    codes: dict[int, int] = {}
    for record in found:
        if record.code >= 400:
            codes[record.code] = codes.get(record.code, 0) + 1
    return codes


def _scaling(env: Cluster, name: str, res: Resource) -> tuple[str, str] | None:
    return env.condition(name, "Scaling", res)


async def _resize(
    env: Cluster, trainingjobs: list[str], pytorchjobs: list[str], *, grow: bool
) -> None:
    """One worker more (``grow``) or less for every job, and wait until each got there."""
    kind, suffix = ("ScaleOut", "out") if grow else ("ScaleIn", "in")
    spec = {"toAdd": {"count": 1}} if grow else {"toDelete": {"count": 1}}
    for name in trainingjobs:
        env.apply(_scaler(kind, f"{name}-{suffix}", name, spec))
    for name in pytorchjobs:
        await env.scale(name, 3 if grow else 1, PYTORCHJOBS)
    reason = "ScalingOutSucceeded" if grow else "ScalingInSucceeded"
    res = SCALEOUTS if grow else SCALEINS
    await eventually(
        lambda: (
            all(env.scaler_done(res, f"{n}-{suffix}") for n in trainingjobs)
            and all(_scaling(env, n, PYTORCHJOBS) == ("False", reason) for n in pytorchjobs)
        ),
        what=f"every job {'grown' if grow else 'shrunk'}",
        timeout=60,
    )


async def test_jobs_created_and_scaled_make_no_refused_status_write(
    tmp_path: Path,
) -> None:
    async with (
        cluster(
            tmp_path,
            TrainingJobPlugin(),
            PyTorchJobPlugin(),
            kubelet=sandboxed_nodes(tmp_path, nodes=4),
        ) as env,
        env.operating(),
    ):
        trainingjobs = [f"tj-{index}" for index in range(JOBS)]
        pytorchjobs = [f"pt-{index}" for index in range(JOBS)]
        for name in trainingjobs:
            env.apply(_named(example("training-job.yaml"), name))
        for name in pytorchjobs:
            env.apply(_named(echo(maxReplicas=4), name))
        running = [(n, TRAININGJOBS) for n in trainingjobs] + [
            (n, PYTORCHJOBS) for n in pytorchjobs
        ]
        await eventually(
            lambda: all(env.phase(n, res) == "Running" for n, res in running),
            what="every job running",
            timeout=60,
        )
        # Scale each job out, then in: TrainingJobs by scalers, PyTorchJobs through /scale.
        await _resize(env, trainingjobs, pytorchjobs, grow=True)
        await _resize(env, trainingjobs, pytorchjobs, grow=False)
        await eventually(
            lambda: all(
                _scaling(env, n, TRAININGJOBS) == ("False", "ScalingInSucceeded")
                for n in trainingjobs
            ),
            what="every TrainingJob's Scaling condition rendered",
        )
        for name, res in running:
            status = env.status(name, res)
            assert status.get("currentScaler") is None
            assert status["phase"] == "Running"
            assert status["currentWorkers"] == status["targetWorkers"]
            last = status["conditions"][-1]
            assert (last["type"], last["status"]) == ("Scaling", "False")
        for name in trainingjobs:
            assert len(env.status(name, TRAININGJOBS)["currentWorkers"]) == 2
        for name in pytorchjobs:
            assert len(env.status(name, PYTORCHJOBS)["currentWorkers"]) == 1
        assert _refused(env, TRAININGJOBS) == {}
        assert _refused(env, PYTORCHJOBS) == {}
