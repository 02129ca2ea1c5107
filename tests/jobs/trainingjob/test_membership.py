"""The hostfile pusher: atomic writes, a recorded digest, a restarted launcher made current."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest

from etctl.jobs.launcher import PUSHED_ANNOTATION, MembershipPusher, digest, write_command
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._layout import LAYOUT
from etctl.jobs.trainingjob._names import NAMES
from etctl.runtime import CONFIGMAPS, PODS, REGISTRY, objects
from etctl.testing import eventually
from tests._cluster import cluster, sandboxed_nodes
from tests.jobs.trainingjob._manifests import JOB, LAUNCHER, NS, hostfile
from tests.schema_support import EXAMPLES, load_yaml


def test_write_command_replaces_the_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "hostfile"
    target.write_text("old:1\n")
    command = write_command(str(target))
    assert command[:2] == ["sh", "-c"]
    subprocess.run(command, input=b"a:1\nb:1\n", check=True, timeout=10)
    assert target.read_text() == "a:1\nb:1\n"
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostfile"]  # no temporary left


def test_timeouts_are_checked() -> None:
    with pytest.raises(ValueError, match="exec_timeout"):
        MembershipPusher(
            None,  # type: ignore[arg-type]
            names=NAMES,
            layout=LAYOUT,
            client=None,  # type: ignore[arg-type]
            cache=None,  # type: ignore[arg-type]
            clock=None,  # type: ignore[arg-type]
            exec_timeout=0,
        )


def pushes() -> float:
    labels = {"kind": "TrainingJob", "purpose": "hostfile"}
    found = REGISTRY.get_sample_value("etctl_scale_exec_duration_seconds_count", labels)
    return found or 0.0


def pushed(env: Any) -> str:
    launcher = env.get(PODS, LAUNCHER)
    return str(objects.annotations(launcher or {}).get(PUSHED_ANNOTATION, ""))


def config_digest(env: Any) -> str:
    config = env.get(CONFIGMAPS, f"{JOB}-config")
    return digest(config["data"]["hostfile"]) if config else ""


@pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)
async def test_the_launcher_follows_the_configmap(tmp_path: Path) -> None:
    document = copy.deepcopy(load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml"))
    document["spec"]["etReplicaSpecs"]["launcher"]["restartPolicy"] = "Always"
    before = pushes()
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.pods_running(LAUNCHER))
        await eventually(lambda: pushed(env) == config_digest(env) != "")
        # Both copies, DeepSpeed's too.
        deepspeed = await env.client.exec(NS, LAUNCHER, ["cat", "/job/hostfile"], timeout=10)
        assert deepspeed.stdout.decode() == (f"{JOB}-worker-0 slots=1\n{JOB}-worker-1 slots=1\n")
        # A restarted launcher (a new pod) has no digest: it gets the current content again.
        first = objects.uid(env.get(PODS, LAUNCHER) or {})
        env.server.storage.delete(PODS, LAUNCHER, namespace=NS)
        await eventually(
            lambda: (
                objects.uid(env.get(PODS, LAUNCHER) or {}) not in ("", first)
                and env.pods_running(LAUNCHER)
            )
        )
        await eventually(lambda: pushed(env) == config_digest(env))
        assert await hostfile(env) == f"{JOB}-worker-0:1\n{JOB}-worker-1:1\n"
    # Two files per push, at least two pushes (the first launcher, then its successor).
    assert pushes() >= before + 4
