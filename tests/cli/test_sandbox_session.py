"""One run of the sandbox command, in-process: what it prints once the sandbox is ready."""

from __future__ import annotations

import pytest

from etctl.cli import Sandbox, run_sandbox
from etctl.cli._sandbox_options import SandboxOptions
from etctl.cli._sandbox_session import usage_lines

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)


async def test_the_usage_lines_say_where_everything_is() -> None:
    async def main(sandbox: Sandbox) -> dict[str, str]:
        return dict(usage_lines(sandbox))

    options = SandboxOptions(
        nodes=2, node_gpus=0, node_cpu="4", pod_start_delay=0, metrics_bind_address="0"
    )
    lines = await run_sandbox(options, main)
    assert lines is not None
    assert list(lines) == ["API server", "kubeconfig", "nodes", "operator", "metrics", "probes"]
    assert lines["API server"].startswith("http://127.0.0.1:")
    assert lines["kubeconfig"].endswith("/kubeconfig")
    assert lines["nodes"] == "node-0, node-1 (4 CPU, 32Gi memory each)"
    assert lines["operator"] == (
        "mpijob, pytorchjob, tfjob, trainingjob "
        "(MPIJob, ScaleIn, ScaleOut, PyTorchJob, TFJob, TrainingJob)"
    )
    assert lines["metrics"] == "off"
    assert lines["probes"].startswith("http://127.0.0.1:")
    assert lines["probes"].endswith("/readyz")
