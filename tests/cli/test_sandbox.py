"""``etctl sandbox`` as a process: a kubeconfig clients and kubectl use, the operator, SIGTERM."""

from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from etctl.cli import main
from etctl.errors import NotFound
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import PODS, Client
from tests.cli._process import SandboxProcess, sandbox_process
from tests.schema_support import EXAMPLES, ROOT, load_yaml

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

LAUNCHER = "elastic-training-launcher"
QUICK = ("--pod-start-delay=0", "--log-level=warning")


async def ready(sandbox: SandboxProcess) -> Path:
    """Wait for the usage lines; the kubeconfig path they name."""
    found = await sandbox.read_until(r"^  kubeconfig:\s+(\S+)$")
    await sandbox.read_until(r"Press Ctrl-C to stop\.")
    return Path(found.group(1))


async def phase(client: Client, name: str) -> str:
    try:
        pod = await client.get(PODS, name, namespace="default")
    except NotFound:
        return ""
    return str((pod.get("status") or {}).get("phase", ""))


async def job_phase(client: Client) -> str:
    job = await client.get(TRAININGJOBS, "elastic-training", namespace="default")
    return str((job.get("status") or {}).get("phase", ""))


async def runs(client: Client) -> None:
    """Wait until the launcher runs and the operator says the job does."""
    async with asyncio.timeout(20):
        while await phase(client, LAUNCHER) != "Running" or await job_phase(client) != "Running":
            await asyncio.sleep(0.02)


async def test_a_client_runs_a_trainingjob_and_sigterm_stops_with_status_0() -> None:
    async with sandbox_process(*QUICK) as sandbox:
        kubeconfig = await ready(sandbox)
        assert kubeconfig.is_file()
        assert "http://127.0.0.1:" in sandbox.text
        assert f"export KUBECONFIG={kubeconfig}" in sandbox.text
        async with await Client.from_kubeconfig(kubeconfig) as client:
            job = load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml")
            await client.create(TRAININGJOBS, job, namespace="default")
            await runs(client)
            stored = await client.get(TRAININGJOBS, "elastic-training", namespace="default")
            assert stored["status"]["currentWorkers"] == [
                "elastic-training-worker-0",
                "elastic-training-worker-1",
            ]
            hostfile = await client.exec(
                "default", LAUNCHER, ["cat", "/etc/edl/hostfile"], timeout=5
            )
            assert hostfile.stdout == b"elastic-training-worker-0:1\nelastic-training-worker-1:1\n"
        sandbox.process.send_signal(signal.SIGTERM)
        status, out, err = await sandbox.finish()
    assert status == 0, err
    assert out.splitlines()[-1] == "etctl sandbox stopped"
    assert "Traceback" not in err
    assert not kubeconfig.parent.exists()


@pytest.mark.etctl_kubectl
async def test_kubectl_applies_and_reads_through_the_kubeconfig_and_sigint_stops(
    tmp_path: Path,
) -> None:
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    target = tmp_path / "kubeconfig"
    async with sandbox_process(*QUICK, f"--kubeconfig={target}") as sandbox:
        assert await ready(sandbox) == target

        async def run(*args: str) -> str:
            process = await asyncio.create_subprocess_exec(
                kubectl,
                f"--kubeconfig={target}",
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=ROOT,
            )
            out, err = await asyncio.wait_for(process.communicate(), timeout=30)
            assert process.returncode == 0, err.decode()
            return out.decode()

        applied = await run("apply", "-f", "examples/trainingjob/training-job.yaml")
        assert "trainingjob.kai.alibabacloud.com/elastic-training created" in applied
        async with await Client.from_kubeconfig(target) as client:
            await runs(client)
        listed = await run("get", "trainingjobs")
        assert "elastic-training" in listed
        assert "Running" in listed
        hostfile = await run(
            "exec", LAUNCHER, "-c", "mnist-elastic", "--", "cat", "/etc/edl/hostfile"
        )
        assert hostfile == "elastic-training-worker-0:1\nelastic-training-worker-1:1\n"
        sandbox.process.send_signal(signal.SIGINT)
        status, _, err = await sandbox.finish()
    assert status == 0, err
    assert target.is_file()  # a kubeconfig path the user chose is left in place


async def test_a_port_in_use_exits_1_with_the_reason() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with sandbox_process(*QUICK, f"--port={port}") as sandbox:
            status, out, err = await sandbox.finish()
    assert status == 1
    assert err.startswith("etctl sandbox: error: cannot serve:")
    assert "address already in use" in err
    assert "Traceback" not in err
    assert out == ""


def test_help_documents_the_sandbox(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "sandbox" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        main(["sandbox", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for flag in (
        "--demo",
        "--kubeconfig",
        "--port",
        "--nodes",
        "--node-gpus",
        "--pod-start-delay",
        "--metrics-bind-address",
        "--health-probe-bind-address",
        "--step-timeout",
    ):
        assert flag in text
    assert "SIGTERM" in text


def test_other_commands_do_not_load_the_embedded_api_server() -> None:
    # The operator's binary declares the sandbox subcommand; only running it loads the server.
    script = (
        "import sys\n"
        "from etctl.cli import build_parser\n"
        "build_parser().parse_args(['run'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('etctl.testing')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
