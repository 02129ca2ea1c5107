"""A TrainingJob from creation to Succeeded, end to end (operator, API server, kubelet)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from etctl.jobs.launcher import PUSHED_ANNOTATION
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.runtime import (
    CONFIGMAPS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    objects,
)
from etctl.testing import eventually
from tests._cluster import cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, hostfile, w
from tests.schema_support import EXAMPLES, load_yaml

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)

W0, W1 = w(0), w(1)


async def test_the_example_runs_to_succeeded(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml"))
        await eventually(lambda: env.pods_running(LAUNCHER))
        # Children, named as et-operator names them.
        assert env.names(SERVICES) == ["kubernetes", W0, W1] or env.names(SERVICES) == [W0, W1]
        secret = env.get(SECRETS, JOB)
        assert secret is not None
        assert secret["type"] == "kubernetes.io/ssh-auth"
        private = base64.b64decode(secret["data"]["ssh-privatekey"]).decode()
        assert "OPENSSH PRIVATE KEY" in private
        for res in (SERVICEACCOUNTS, ROLES, ROLEBINDINGS):
            assert env.get(res, LAUNCHER) is not None
        config = env.get(CONFIGMAPS, f"{JOB}-config")
        assert config is not None
        assert config["data"]["hostfile"] == f"{W0}:1\n{W1}:1\n"  # one GPU each
        launcher = env.get(PODS, LAUNCHER)
        assert launcher is not None
        assert launcher["spec"]["serviceAccountName"] == LAUNCHER
        assert launcher["spec"]["restartPolicy"] == "Never"
        # The init container really copied the hostfile; the pusher recorded it.
        assert await hostfile(env) == f"{W0}:1\n{W1}:1\n"
        await eventually(
            lambda: PUSHED_ANNOTATION in objects.annotations(env.get(PODS, LAUNCHER) or {})
        )
        status = env.status(JOB)
        assert status["phase"] == "Running"
        assert status["targetWorkers"] == status["currentWorkers"] == [W0, W1]
        assert status["replicas"] == 2
        assert "training.kubeflow.org/job-name=elastic-training" in status["workerSelector"]
        assert env.condition(JOB, "Running") == ("True", "TrainingJobRunning")
        # The launcher ends: the job succeeds, and cleanPodPolicy Running removes the workers.
        env.kubelet.exit(NS, LAUNCHER, 0)
        await eventually(
            lambda: env.condition(JOB, "Succeeded") == ("True", "TrainingJobSucceeded")
        )
        await eventually(lambda: W0 not in env.phases() and W1 not in env.phases())
        assert env.phases().get(LAUNCHER) == "Succeeded"
        assert env.status(JOB)["phase"] == "Succeeded"
        assert env.status(JOB).get("completionTime")
