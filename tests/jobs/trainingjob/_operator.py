"""The whole TrainingJob operator on the embedded API server with the simulated kubelet.

One :class:`FakeClock` drives the server, the kubelet and the operator; HTTP, watches and execs are
real, so tests wait (bounded, in real time) for a condition read from the server's storage. The
kubelet really runs the launcher's init container (the hostfile copy) and the execs of the hostfile
pusher and of scalers' scripts, in per-pod sandboxes: tests read the launcher's hostfile with an
exec, as a user would.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import KubeObject, Manager, Resource
from etctl.testing import Limits
from tests.common._operator import condition_of
from tests.jobs._kubelet_cluster import NS, KubeletCluster, kubelet_server, run_operator
from tests.runtime._realtime import eventually
from tests.schema_support import EXAMPLES, load_document, load_yaml

JOB = "elastic-training"
"""The name of the example TrainingJob (``examples/trainingjob/training-job.yaml``)."""
LAUNCHER = f"{JOB}-launcher"

__all__ = [
    "JOB",
    "LAUNCHER",
    "NS",
    "Cluster",
    "cluster",
    "eventually",
    "example",
    "hosts",
    "operator",
    "scale_out_script",
    "w",
]


def example(name: str = "training-job.yaml") -> dict[str, Any]:
    """A copy of ``examples/trainingjob/<name>`` that a test may change."""
    return copy.deepcopy(load_yaml(EXAMPLES / "trainingjob" / name))


def scale_out_script() -> dict[str, Any]:
    """The ScaleOut of ``scale-out-script.yaml``, naming the example job (:data:`JOB`).

    The file brings its own job and script; these tests install the script in the example job's
    launcher themselves and scale that job.
    """
    path = EXAMPLES / "trainingjob" / "scale-out-script.yaml"
    document = copy.deepcopy(load_document(path, "ScaleOut"))
    document["spec"]["selector"] = {"name": JOB}
    return document


def w(index: int) -> str:
    """The name of the example job's worker ``index``."""
    return f"{JOB}-worker-{index}"


def hosts(*indices: int) -> str:
    """The hostfile listing the example job's workers ``indices`` (one slot each), in order."""
    return "".join(f"{w(i)}:1\n" for i in indices)


@dataclass
class Cluster(KubeletCluster):
    """The cluster, with readers of TrainingJobs and their scalers."""

    def job(self, name: str = JOB) -> KubeObject:
        found = self.get(TRAININGJOBS, name)
        assert found is not None, f"no TrainingJob {name}"
        return found

    def status(self, name: str = JOB) -> dict[str, Any]:
        return dict(self.job(name).get("status") or {})

    def condition(self, cond_type: str, name: str = JOB) -> tuple[str, str] | None:
        return condition_of(self.job(name), cond_type)

    def scaler(self, res: Resource, name: str) -> dict[str, Any]:
        found = self.get(res, name)
        assert found is not None, f"no {res.kind} {name}"
        return dict(found.get("status") or {})

    def scaler_done(self, res: Resource, name: str) -> bool:
        found = self.get(res, name)
        return found is not None and (found.get("status") or {}).get("step") == "Done"

    async def hostfile(self, launcher: str = LAUNCHER) -> str:
        """The launcher's live hostfile, read through pods/exec as a user would."""
        result = await self.client.exec(NS, launcher, ["cat", "/etc/edl/hostfile"], timeout=10)
        assert result.exit_code == 0, result.stderr
        return result.stdout.decode()

    def apply(self, document: dict[str, Any]) -> KubeObject:
        """Create an object (as ``kubectl create -f`` would)."""
        kind = document["kind"]
        res = {"TrainingJob": TRAININGJOBS, "ScaleIn": SCALEINS, "ScaleOut": SCALEOUTS}[kind]
        return self.create(res, document)


@asynccontextmanager
async def cluster(
    tmp_path: Path, *, gpus: int = 8, nodes: int = 2, limits: Limits | None = None
) -> AsyncIterator[Cluster]:
    """A fresh server with the TrainingJob CRDs and a kubelet, and a client, on one FakeClock."""
    resources = TrainingJobPlugin().custom_resources
    async with kubelet_server(tmp_path, resources, gpus=gpus, nodes=nodes, limits=limits) as parts:
        yield Cluster(*parts)


@asynccontextmanager
async def operator(
    env: Cluster, plugin: TrainingJobPlugin | None = None, **options: Any
) -> AsyncIterator[Manager]:
    """The operator (one Manager process) running until the block ends; its failure is raised."""
    async with run_operator(env, plugin or TrainingJobPlugin(), **options) as manager:
        yield manager
