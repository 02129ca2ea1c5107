"""``python -m etctl.testing``: serves (with the simulated kubelet by default) until interrupted.

It writes a kubeconfig when asked, prints the URL, and shapes its nodes from its flags.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import yaml

from etctl.testing.__main__ import _kubelet_config, _parser, main


@asynccontextmanager
async def _serving(*args: str) -> AsyncIterator[str]:
    """Run ``python -m etctl.testing --port 0 ARGS``; yields its URL; it must exit 0 on SIGINT."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "etctl.testing",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(15):
            url = (await process.stdout.readline()).decode().strip()
        yield url
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(15):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_serves_until_interrupted(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with _serving("--kubeconfig", str(kubeconfig)) as url:
        assert url.startswith("http://127.0.0.1:")
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        async with aiohttp.ClientSession() as session, session.get(url + "/api/v1/namespaces") as r:
            assert r.status == 200
            names = [n["metadata"]["name"] for n in (await r.json())["items"]]
        assert "kube-system" in names


def test_a_taken_port_is_reported() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--port", str(port)]) == 1


def test_the_kubelet_flags_shape_the_nodes() -> None:
    config = _kubelet_config(
        _parser().parse_args(
            ["--nodes", "2", "--node-cpu", "4", "--node-gpus", "1", "--scheduler-name", "a"]
        )
    )
    assert config is not None
    assert [n.name for n in config.nodes] == ["node-0", "node-1"]
    assert config.nodes[0].cpu == "4"
    assert config.nodes[0].gpus == 1
    assert config.scheduler_names == frozenset({"a"})
    assert _kubelet_config(_parser().parse_args(["--no-kubelet"])) is None


def test_a_negative_node_count_is_refused() -> None:
    assert main(["--nodes", "-1"]) == 2


async def test_pods_run_on_the_served_cluster() -> None:
    async with _serving("--nodes", "2") as url, aiohttp.ClientSession() as session:
        pods = f"{url}/api/v1/namespaces/default/pods"
        body = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        async with session.get(f"{url}/api/v1/nodes") as response:
            nodes = [n["metadata"]["name"] for n in (await response.json())["items"]]
        assert nodes == ["node-0", "node-1"]
        async with session.post(pods, json=body) as response:
            assert response.status == 201
        params = {"watch": "true", "fieldSelector": "metadata.name=p"}
        async with asyncio.timeout(10), session.get(pods, params=params) as response:
            while True:
                event = json.loads(await response.content.readline())
                if event["object"].get("status", {}).get("phase") == "Running":
                    break


async def test_auth_enforces_rbac_and_serves_token_requests(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with _serving("--no-kubelet", "--auth", "--kubeconfig", str(kubeconfig)) as url:
        admin = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"]
        accounts = f"{url}/api/v1/namespaces/default/serviceaccounts"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/api/v1/pods") as anonymous:
                assert anonymous.status == 401
            headers = {"Authorization": f"Bearer {admin}"}
            body = {"metadata": {"name": "robot"}}
            async with session.post(accounts, json=body, headers=headers) as created:
                assert created.status == 201
            request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
            async with session.post(
                f"{accounts}/robot/token", json=request, headers=headers
            ) as answer:
                assert answer.status == 201
                token = (await answer.json())["status"]["token"]
            robot = {"Authorization": f"Bearer {token}"}
            async with session.get(f"{url}/api/v1/pods", headers=robot) as refused:
                assert refused.status == 403
                assert "system:serviceaccount:default:robot" in (await refused.json())["message"]
            async with session.post(f"{accounts}/nobody/token", json=request, headers=headers) as r:
                assert r.status == 404
