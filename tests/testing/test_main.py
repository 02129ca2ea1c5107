"""``python -m etctl.testing``: serves (with the simulated kubelet by default) until interrupted.

It writes a kubeconfig when asked, prints the URL, and shapes its nodes from its flags.
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import socket
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from etctl.runtime import NAMESPACES, Client
from etctl.testing.__main__ import _kubelet_config, _parser, main
from tests._kubectl import kubectl
from tests.testing.apiserver._protoencode import envelope, f, m


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


def _protobuf_token_request(seconds: int, audience: str) -> bytes:
    """A TokenRequest as kubectl's typed client sends it (``k8s\\0`` + runtime.Unknown).

    TokenRequest: 2 spec. TokenRequestSpec: 1 audiences, 4 expirationSeconds.
    """
    spec = m(f(1, audience), f(4, seconds))
    return envelope("authentication.k8s.io/v1", "TokenRequest", f(2, spec))


async def test_auth_serves_tls_enforces_rbac_and_serves_token_requests(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with _serving("--no-kubelet", "--auth", "--kubeconfig", str(kubeconfig)) as url:
        assert url.startswith("https://")  # kubectl sends a token only over TLS
        document = yaml.safe_load(kubeconfig.read_text())
        admin = document["users"][0]["user"]["token"]
        cluster = document["clusters"][0]["cluster"]
        assert cluster["server"] == url
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        verified = ssl.create_default_context(cadata=ca)  # the server is verified, not trusted
        accounts = f"{url}/api/v1/namespaces/default/serviceaccounts"
        connector = aiohttp.TCPConnector(ssl=verified)
        async with aiohttp.ClientSession(connector=connector) as session:
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
            protobuf = {**headers, "Content-Type": "application/vnd.kubernetes.protobuf"}
            async with session.post(
                f"{accounts}/robot/token",
                data=_protobuf_token_request(7200, "etcd"),
                headers=protobuf,
            ) as answer:
                assert answer.status == 201
                granted = await answer.json()
            assert granted["spec"] == {"audiences": ["etcd"], "expirationSeconds": 7200}
            async with session.get(
                f"{url}/api/v1/pods",
                headers={"Authorization": f"Bearer {granted['status']['token']}"},
            ) as again:
                assert again.status == 403  # the robot's identity, minted from protobuf
            async with session.post(
                f"{accounts}/robot/token", data=b"k8s\x00\xff", headers=protobuf
            ) as garbled:
                assert garbled.status == 400
        async with aiohttp.ClientSession() as unverified:
            try:
                async with unverified.get(f"{url}/api/v1/pods", headers=headers):
                    raise AssertionError("the self-signed certificate was trusted without its CA")
            except aiohttp.ClientConnectorCertificateError:
                pass


async def test_tls_can_be_turned_off_or_on_without_auth(tmp_path: Path) -> None:
    async with _serving("--no-kubelet", "--auth", "--no-tls") as url:
        assert url.startswith("http://")
    kubeconfig = tmp_path / "kubeconfig"
    async with _serving("--no-kubelet", "--tls", "--kubeconfig", str(kubeconfig)) as url:
        assert url.startswith("https://")
        async with Client.connect(kubeconfig) as client:  # verifies with the kubeconfig's CA
            assert "default" in [
                ns["metadata"]["name"] for ns in (await client.list(NAMESPACES)).items
            ]


@pytest.mark.etctl_kubectl
async def test_kubectl_authenticates_and_mints_tokens_with_auth(tmp_path: Path) -> None:
    """kubectl sends its token only over TLS, and its typed requests are protobuf."""
    kubeconfig = tmp_path / "kubeconfig"
    async with _serving("--no-kubelet", "--auth", "--kubeconfig", str(kubeconfig)):

        async def run(*args: str, refused: bool = False) -> str:
            done = await kubectl(kubeconfig, *args)
            code, out, err = done.returncode, done.stdout, done.stderr
            if refused:
                assert code != 0, out
                return err
            assert code == 0, err
            return out

        assert "default" in await run("get", "namespaces", "-o", "name")
        account = tmp_path / "robot.yaml"
        account.write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot}\n")
        await run("apply", "-f", str(account))
        token = (await run("create", "token", "robot", "--duration", "2h")).strip()
        robot = tmp_path / "robot"
        document = yaml.safe_load(kubeconfig.read_text())
        document["users"][0]["user"] = {"token": token}
        robot.write_text(yaml.safe_dump(document))
        forbidden = await run("--kubeconfig", str(robot), "get", "pods", refused=True)
        assert 'User "system:serviceaccount:default:robot" cannot list resource "pods"' in forbidden


# kubectl create commands whose typed client sends protobuf: (args after ``create``, kind).
_TYPED_CREATES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("configmap", "c", "--from-literal", "a=b", "--from-literal", "empty="), "configmap/c"),
    (("secret", "generic", "s", "--from-literal", "k=v"), "secret/s"),
    (("deployment", "zero", "--image", "nginx", "--replicas", "0"), "deployment/zero"),
    (
        ("deployment", "two", "--image", "nginx", "--replicas", "2", "--port", "80"),
        "deployment/two",
    ),
    (("serviceaccount", "robot"), "serviceaccount/robot"),
    (("role", "reader", "--verb", "get,list", "--resource", "pods"), "role/reader"),
    (("rolebinding", "rb", "--role", "reader", "--serviceaccount", "NS:robot"), "rolebinding/rb"),
)
# Cluster-scoped ones, created once as NAME (protobuf) and once as json-NAME (JSON).
_TYPED_CLUSTER_CREATES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("namespace", "NAME"), "namespace/NAME"),
    (("clusterrole", "NAME", "--verb", "get", "--resource", "nodes"), "clusterrole/NAME"),
    (
        ("clusterrolebinding", "NAME", "--clusterrole", "view", "--user", "u"),
        "clusterrolebinding/NAME",
    ),
    (("priorityclass", "NAME", "--value", "1000"), "priorityclass/NAME"),
)
_SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


def _comparable(text: str) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(text)
    for key in (*_SERVER_SET, "namespace"):
        obj["metadata"].pop(key, None)
    obj.pop("status", None)
    return obj


@pytest.mark.etctl_kubectl
async def test_kubectls_typed_creates_store_what_their_json_would(tmp_path: Path) -> None:
    """``kubectl create <kind>`` sends protobuf; the stored object equals the one created from
    the same command's ``--dry-run=client -o json`` output sent as JSON."""
    kubeconfig = tmp_path / "kubeconfig"
    async with _serving("--no-kubelet", "--kubeconfig", str(kubeconfig)):

        async def run(*args: str, stdin: bytes | None = None) -> str:
            done = await kubectl(kubeconfig, *args, stdin=stdin)
            code, out, err = done.returncode, done.stdout, done.stderr
            assert code == 0, f"kubectl {' '.join(args)}: {err}"
            return out

        async def both(args: tuple[str, ...], json_args: tuple[str, ...]) -> None:
            await run("create", *args)
            dry_run = await run("create", *json_args, "--dry-run=client", "-o", "json")
            await run("create", "-f", "-", stdin=dry_run.encode())

        await run("create", "namespace", "pb")  # the namespaces are protobuf creates too
        await run("create", "namespace", "js")
        for args, name in _TYPED_CREATES:
            await both(
                (*(a.replace("NS", "pb") for a in args), "-n", "pb"),
                (*(a.replace("NS", "js") for a in args), "-n", "js"),
            )
            typed = _comparable(await run("get", name, "-n", "pb", "-o", "json"))
            plain = _comparable(await run("get", name, "-n", "js", "-o", "json"))
            assert json.dumps(typed).replace('"pb"', '"js"') == json.dumps(plain), name
        for args, name in _TYPED_CLUSTER_CREATES:
            await both(
                tuple(a.replace("NAME", "typed") for a in args),
                tuple(a.replace("NAME", "json-typed") for a in args),
            )
            typed = _comparable(await run("get", name.replace("NAME", "typed"), "-o", "json"))
            text = await run("get", name.replace("NAME", "json-typed"), "-o", "json")
            assert typed == _comparable(text.replace('"json-typed"', '"typed"')), name
        zero = json.loads(await run("get", "deployment/zero", "-n", "pb", "-o", "json"))
        assert zero["spec"]["replicas"] == 0  # a *int32 set to 0 survives the protobuf
        secret = json.loads(await run("get", "secret/s", "-n", "pb", "-o", "json"))
        assert secret["data"] == {"k": base64.b64encode(b"v").decode()}
