"""The sandbox cluster in-process: server, kubelet and operator together, and how it stops."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest

from etctl.cli import Sandbox, run_sandbox
from etctl.cli._sandbox_options import SandboxOptions
from etctl.errors import NotFound
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import CRDS, NODES, PODS, Client
from tests.schema_support import EXAMPLES, load_yaml

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

QUICK = SandboxOptions(pod_start_delay=0)


async def get(url: str) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=5)
    async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as answer:
        return answer.status, await answer.text()


async def phase(client: Client, name: str) -> str:
    try:
        pod = await client.get(PODS, name, namespace="default")
    except NotFound:
        return ""
    return str((pod.get("status") or {}).get("phase", ""))


async def test_the_operator_runs_a_trainingjob_created_through_the_kubeconfig() -> None:
    seen: dict[str, object] = {}

    async def main(sandbox: Sandbox) -> str:
        seen["kubeconfig"] = sandbox.kubeconfig
        assert sandbox.kubeconfig.is_file()
        assert [entry.name for entry in sandbox.jobs] == [
            "mpijob",
            "pytorchjob",
            "tfjob",
            "trainingjob",
        ]
        async with await Client.from_kubeconfig(sandbox.kubeconfig) as client:
            crds = {c["metadata"]["name"] for c in (await client.list(CRDS)).items}
            assert {"trainingjobs.kai.alibabacloud.com", "tfjobs.kubeflow.org"} <= crds
            nodes = (await client.list(NODES)).items
            assert [n["metadata"]["name"] for n in nodes] == sandbox.node_names
            assert nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] == "4"
            job = load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml")
            await client.create(TRAININGJOBS, job, namespace="default")
            launcher = "elastic-training-launcher"
            for _ in range(1000):
                if await phase(client, launcher) == "Running":
                    break
                await asyncio.sleep(0.01)
            assert await phase(client, launcher) == "Running"
        assert sandbox.metrics_url is not None
        assert sandbox.probes_url is not None
        status, text = await get(sandbox.metrics_url)
        assert status == 200
        assert 'controller_runtime_reconcile_total{controller="trainingjob"' in text
        assert (await get(f"{sandbox.probes_url}/readyz"))[0] == 200
        return "done"

    assert await run_sandbox(QUICK, main) == "done"
    kubeconfig = seen["kubeconfig"]
    assert isinstance(kubeconfig, Path)
    assert not kubeconfig.parent.exists()  # the temporary directory went with the sandbox


async def test_containers_take_the_start_delay_to_run() -> None:
    async def main(sandbox: Sandbox) -> list[str]:
        statuses: list[str] = []
        async with await Client.from_kubeconfig(sandbox.kubeconfig) as client:
            await client.create(
                PODS,
                {
                    "metadata": {"name": "slow"},
                    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                },
                namespace="default",
            )
            loop = asyncio.get_running_loop()
            created = loop.time()
            while (status := await phase(client, "slow")) != "Running":
                statuses.append(status)
                await asyncio.sleep(0.02)
            assert loop.time() - created >= 0.25
        return statuses

    statuses = await run_sandbox(SandboxOptions(pod_start_delay=0.3), main)
    assert statuses
    assert set(statuses) == {"Pending"}


async def test_a_kubeconfig_path_is_written_there_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "sandbox" / "kubeconfig"

    async def main(sandbox: Sandbox) -> Path:
        return sandbox.kubeconfig

    options = SandboxOptions(pod_start_delay=0, kubeconfig=target)
    assert await run_sandbox(options, main) == target
    assert "current-context: etctl" in target.read_text()


async def test_stop_cancels_main_and_stops_everything() -> None:
    stop = asyncio.Event()
    cancelled = asyncio.Event()

    async def main(sandbox: Sandbox) -> str:
        stop.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    assert await run_sandbox(QUICK, main, stop=stop) is None
    assert cancelled.is_set()


async def test_what_main_raises_comes_out_as_it_is() -> None:
    async def main(sandbox: Sandbox) -> None:
        raise LookupError("no such pod")

    with pytest.raises(LookupError, match="no such pod"):
        await run_sandbox(QUICK, main)


async def test_a_port_in_use_fails_before_main_runs() -> None:
    called: list[Sandbox] = []

    async def main(sandbox: Sandbox) -> None:
        called.append(sandbox)

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match="address already in use"):
            await run_sandbox(SandboxOptions(port=port), main)
        metrics = SandboxOptions(metrics_bind_address=f"127.0.0.1:{port}")
        with pytest.raises(OSError, match="address already in use"):
            await run_sandbox(metrics, main)
    assert not called
