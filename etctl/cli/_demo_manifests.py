"""The objects of the sandbox's demo, as et-operator's users write them.

A TrainingJob of elastic Horovod (a launcher and :data:`WORKERS` workers, one GPU each, elastic
between :data:`MIN_WORKERS` and :data:`MAX_WORKERS`, failed or evicted workers replaced), a
ScaleOut and a ScaleIn naming it. Each is a plain manifest that validates against the CRDs and
applies with kubectl as it is. The MPIJob demo's job is built of the same pod templates, and its
ScaleIn is this one naming it.
"""

from __future__ import annotations

from typing import Any

from etctl.jobs.trainingjob import API_VERSION

__all__ = [
    "JOB",
    "LAUNCHER",
    "MAX_WORKERS",
    "MIN_WORKERS",
    "NAMESPACE",
    "SCALE_IN",
    "SCALE_IN_BY",
    "SCALE_OUT",
    "SCALE_OUT_BY",
    "WORKERS",
    "launcher_template",
    "scalein_manifest",
    "scaleout_manifest",
    "trainingjob_manifest",
    "worker_template",
]

NAMESPACE = "default"
"""The namespace every demo runs in."""
JOB = "elastic-mnist"
LAUNCHER = f"{JOB}-launcher"
WORKERS, MIN_WORKERS, MAX_WORKERS = 3, 2, 6
SCALE_OUT_BY, SCALE_IN_BY = 2, 1
SCALE_OUT, SCALE_IN = f"{JOB}-scale-out", f"{JOB}-scale-in"
_IMAGE = "horovod/horovod:0.28.1"


def launcher_template(discovery_script: str) -> dict[str, Any]:
    """The launcher's pod template: elastic Horovod on PyTorch, finding hosts with the script."""
    command = (
        f"horovodrun -np {WORKERS} --min-np {MIN_WORKERS} --max-np {MAX_WORKERS} "
        f"--host-discovery-script {discovery_script} "
        "python /horovod/examples/elastic/pytorch/pytorch_mnist_elastic.py"
    )
    container = {"name": "launcher", "image": _IMAGE, "command": ["sh", "-c", command]}
    return {"spec": {"containers": [container]}}


def worker_template() -> dict[str, Any]:
    """A worker's pod template: the Horovod image and one GPU."""
    container = {
        "name": "worker",
        "image": _IMAGE,
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    return {"spec": {"containers": [container]}}


def trainingjob_manifest() -> dict[str, Any]:
    """The demo's TrainingJob, as an et-operator user writes one (elastic Horovod on PyTorch)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainingJob",
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {
            "cleanPodPolicy": "Running",
            "etReplicaSpecs": {
                "launcher": {
                    "replicas": 1,
                    "template": launcher_template("/etc/edl/discover_hosts.sh"),
                },
                "worker": {
                    "replicas": WORKERS,
                    "minReplicas": MIN_WORKERS,
                    "maxReplicas": MAX_WORKERS,
                    # Evicted or failed workers are replaced under a new name.
                    "restartPolicy": "OnFailure",
                    "template": worker_template(),
                },
            },
        },
    }


def scaleout_manifest(count: int) -> dict[str, Any]:
    """A ScaleOut adding ``count`` workers to the demo's job."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ScaleOut",
        "metadata": {"name": SCALE_OUT, "namespace": NAMESPACE},
        "spec": {"selector": {"name": JOB}, "toAdd": {"count": count}},
    }


def scalein_manifest(count: int, *, job: str = JOB, kind: str | None = None) -> dict[str, Any]:
    """A ScaleIn removing ``count`` workers of ``job`` (the operator chooses which).

    ``kind`` names the job's kind in the selector (``MPIJob``); without it, a TrainingJob.
    """
    selector = {"name": job} if kind is None else {"name": job, "kind": kind}
    return {
        "apiVersion": API_VERSION,
        "kind": "ScaleIn",
        "metadata": {"name": f"{job}-scale-in", "namespace": NAMESPACE},
        "spec": {"selector": selector, "toDelete": {"count": count}},
    }
