"""The example TrainingJob, its names, and what its launcher reads, for the tests.

Tests run it on :func:`tests._cluster.cluster` with ``TrainingJobPlugin()`` and
``kubelet=sandboxed_nodes(tmp_path)``: the kubelet really runs the launcher's init container (the
hostfile copy) and the execs of the hostfile pusher and of scalers' scripts.
"""

from __future__ import annotations

import copy
from typing import Any

from tests._cluster import Cluster
from tests.schema_support import EXAMPLES, load_document, load_yaml

__all__ = ["JOB", "LAUNCHER", "NS", "example", "hostfile", "hosts", "scale_out_script", "w"]

NS = "default"

JOB = "elastic-training"
"""The name of the example TrainingJob (``examples/trainingjob/training-job.yaml``)."""
LAUNCHER = f"{JOB}-launcher"


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


async def hostfile(env: Cluster, launcher: str = LAUNCHER) -> str:
    """The launcher's live hostfile, read through pods/exec as a user would."""
    return await env.run(launcher, "cat", "/etc/edl/hostfile")
