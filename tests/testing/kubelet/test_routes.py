"""``pods/exec`` and ``pods/log`` over the real HTTP and WebSocket paths."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.stream import WsApiClient

from etctl.runtime import FakeClock
from etctl.testing import ApiServer
from etctl.testing._kubelet import Kubelet
from tests._kubectl import kubectl
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import PODS, container_state, phase_is, pod, sim, wait_for

TWO = [
    {"name": "main", "image": "busybox:1.36"},
    {"name": "sidecar", "image": "busybox:1.36"},
]


@pytest.fixture
async def running(api: Api, kubelet: Kubelet) -> dict[str, Any]:
    await api.create(
        PODS, pod("box", containers=TWO, init=[{"name": "setup", "image": "busybox:1.36"}])
    )
    return await wait_for(api, PODS, "box", phase_is("Running"))


def _exec_url(server: ApiServer, name: str, command: list[str], **flags: str) -> str:
    query = urlencode([("command", c) for c in command] + list(flags.items()))
    return f"{server.url.replace('http', 'ws')}{PODS}/{name}/exec?{query}"


async def _frames(
    session: aiohttp.ClientSession,
    url: str,
    protocol: str,
    *,
    send: list[bytes | str] | None = None,
) -> list[tuple[int, bytes]]:
    frames: list[tuple[int, bytes]] = []
    async with asyncio.timeout(5), session.ws_connect(url, protocols=(protocol,)) as ws:
        assert ws.protocol == protocol
        for outgoing in send or []:
            if isinstance(outgoing, str):
                await ws.send_str(outgoing)
            else:
                await ws.send_bytes(outgoing)
        async for message in ws:
            if message.type == aiohttp.WSMsgType.BINARY:
                frames.append((message.data[0], message.data[1:]))
            elif message.type == aiohttp.WSMsgType.TEXT:
                frames.append((int(message.data[0]), base64.b64decode(message.data[1:])))
    return frames


async def test_exec_over_v5_with_stdin_and_its_close_signal(
    api: Api, server: ApiServer, running: dict[str, Any]
) -> None:
    url = _exec_url(
        server,
        "box",
        ["sh", "-c", "cat; exit 3"],
        container="main",
        stdin="true",
        stdout="true",
        stderr="true",
    )
    frames = await _frames(
        api.session, url, "v5.channel.k8s.io", send=[b"\x00hello ", b"\x00world\n", b"\xff\x00"]
    )
    assert frames[0] == (1, b"")
    assert frames[1] == (1, b"hello world\n")
    channel, status = frames[-1]
    assert channel == 3
    assert json.loads(status) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: error executing command "
        "[sh -c cat; exit 3], exit code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }


async def test_exec_over_v4_and_base64(
    api: Api, server: ApiServer, running: dict[str, Any]
) -> None:
    url = _exec_url(
        server,
        "box",
        ["sh", "-c", "echo out; echo err >&2"],
        container="sidecar",
        stdout="true",
        stderr="true",
    )
    frames = await _frames(api.session, url, "v4.channel.k8s.io")
    assert frames == [
        (1, b""),
        (1, b"out\n"),
        (2, b"err\n"),
        (3, b'{"metadata":{},"status":"Success"}'),
    ]
    encoded = await _frames(api.session, url, "v4.base64.channel.k8s.io")
    assert encoded == frames
    legacy = await _frames(api.session, url, "channel.k8s.io")
    assert legacy == frames[:3]


async def test_a_tty_merges_stderr_into_stdout(
    api: Api, server: ApiServer, running: dict[str, Any]
) -> None:
    url = _exec_url(
        server,
        "box",
        ["sh", "-c", "echo a; echo b >&2"],
        container="main",
        stdout="true",
        tty="true",
    )
    frames = await _frames(api.session, url, "v5.channel.k8s.io")
    assert frames[:2] == [(1, b""), (1, b"a\nb\n")]


@pytest.mark.parametrize(
    ("name", "flags", "code", "message"),
    [
        ("ghost", {"stdout": "true"}, 404, 'pods "ghost" not found'),
        (
            "box",
            {"stdout": "true"},
            400,
            "a container name must be specified for pod box, choose one of: [main sidecar] or one "
            "of the init containers: [setup]",
        ),
        (
            "box",
            {"container": "nope", "stdout": "true"},
            400,
            "container nope is not valid for pod box",
        ),
        ("box", {"container": "main"}, 400, "you must specify at least 1 of stdin, stdout, stderr"),
        ("box", {"container": "setup", "stdout": "true"}, 500, 'container not found ("setup")'),
    ],
)
async def test_exec_errors(
    api: Api, running: dict[str, Any], name: str, flags: dict[str, str], code: int, message: str
) -> None:
    query = "&".join(f"{k}={v}" for k, v in flags.items())
    reply = await api.get(
        f"{PODS}/{name}/exec?command=ls&{query}",
        headers={"Connection": "Upgrade", "Upgrade": "websocket"},
    )
    assert reply.status == code
    assert reply.body["message"] == message


async def test_exec_needs_a_command_a_host_and_an_upgrade(
    api: Api, running: dict[str, Any]
) -> None:
    no_command = await api.get(f"{PODS}/box/exec?container=main&stdout=true")
    assert no_command.body["message"] == "you must specify at least 1 command"
    plain = await api.post(f"{PODS}/box/exec?container=main&command=ls&stdout=true", {})
    assert (plain.status, plain.body["message"]) == (400, "Upgrade request required")
    await api.create(PODS, pod("floating", nodeSelector={"disk": "none"}))
    unbound = await api.get(f"{PODS}/floating/exec?command=ls&stdout=true")
    assert (unbound.status, unbound.body["message"]) == (
        400,
        "pod floating does not have a host assigned",
    )


async def test_exec_with_the_kubernetes_asyncio_websocket_client(
    server: ApiServer, running: dict[str, Any]
) -> None:
    configuration = client.Configuration()
    configuration.host = server.url
    # The generated signature says str; the WebSocket client sends a list as repeated params.
    command: Any = ["sh", "-c", "echo $HOSTNAME; pwd"]
    async with WsApiClient(configuration=configuration) as ws_client:
        core = client.CoreV1Api(api_client=ws_client)
        output = await core.connect_get_namespaced_pod_exec(
            "box",
            "default",
            container="main",
            command=command,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
    assert output == "box\n/\n"


async def _log(api: Api, name: str, **params: str) -> tuple[int, str]:
    async with api.session.get(f"{api.url}{PODS}/{name}/log", params=params) as response:
        return response.status, (await response.read()).decode()


async def test_logs_plain_tail_timestamps_and_previous(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(
        PODS, pod("talker", annotations=sim(log="one\\ntwo", run_seconds=5, exit_code=1))
    )
    await wait_for(api, PODS, "talker", phase_is("Running"))
    kubelet.append_log("default", "talker", "three")
    assert await _log(api, "talker") == (200, "one\ntwo\nsim: started container main\nthree\n")
    assert await _log(api, "talker", tailLines="1") == (200, "three\n")
    _, stamped = await _log(api, "talker", timestamps="true", tailLines="1")
    assert stamped == "2026-01-01T00:00:00.000000000Z three\n"
    assert await _log(api, "talker", limitBytes="6") == (200, "one\ntw")
    missing = await api.get(f"{PODS}/talker/log?previous=true")
    assert (missing.status, missing.body["message"]) == (
        400,
        'previous terminated container "main" in pod "talker" not found',
    )
    await clock.advance(5)
    await wait_for(api, PODS, "talker", lambda o: container_state(o)["restartCount"] == 1)
    _, previous = await _log(api, "talker", previous="true")
    assert previous.endswith("three\nsim: container main exited with code 1\n")
    assert (await _log(api, "talker"))[1] == "one\ntwo\nsim: started container main\n"


async def test_logs_of_a_waiting_container_say_why(api: Api, kubelet: Kubelet) -> None:
    await api.create(PODS, pod("stuck", annotations=sim(fail_start="ErrImagePull")))
    await wait_for(api, PODS, "stuck", lambda o: "waiting" in container_state(o).get("state", {}))
    reply = await api.get(f"{PODS}/stuck/log")
    assert (reply.status, reply.body["message"]) == (
        400,
        'container "main" in pod "stuck" is waiting to start: image can\'t be pulled',
    )
    await api.create(PODS, pod("two", containers=TWO, annotations=sim(stay_pending="true")))
    await wait_for(api, PODS, "two", lambda o: bool(o["spec"].get("nodeName")))
    choose = await api.get(f"{PODS}/two/log")
    assert choose.body["message"] == (
        "a container name must be specified for pod two, choose one of: [main sidecar]"
    )
    creating = await api.get(f"{PODS}/two/log?container=sidecar")
    assert creating.body["message"] == (
        'container "sidecar" in pod "two" is waiting to start: ContainerCreating'
    )


async def test_logs_of_an_unscheduled_pod_are_empty(api: Api, kubelet: Kubelet) -> None:
    await api.create(PODS, pod("nowhere", nodeSelector={"disk": "none"}))
    assert await _log(api, "nowhere") == (200, "")


async def test_follow_streams_until_the_container_ends(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("job", restart="Never", annotations=sim(run_seconds=10)))
    await wait_for(api, PODS, "job", phase_is("Running"))
    async with (
        asyncio.timeout(5),
        api.session.get(f"{api.url}{PODS}/job/log", params={"follow": "true"}) as response,
    ):
        assert await response.content.readline() == b"sim: started container main\n"
        kubelet.append_log("default", "job", "progress 50%")
        assert await response.content.readline() == b"progress 50%\n"
        await clock.advance(10)
        rest = await response.content.read()
    assert rest == b"sim: container main exited with code 0\n"


async def test_a_follower_leaving_is_fine(api: Api, kubelet: Kubelet, server: ApiServer) -> None:
    await api.create(PODS, pod("web"))
    await wait_for(api, PODS, "web", phase_is("Running"))
    async with (
        asyncio.timeout(5),
        api.session.get(f"{api.url}{PODS}/web/log", params={"follow": "true"}) as response,
    ):
        await response.content.readline()
    kubelet.append_log("default", "web", "after the reader left")
    assert (await _log(api, "web"))[1].endswith("after the reader left\n")


@pytest.fixture
def kubeconfig(server: ApiServer, tmp_path: Path) -> Path:
    return server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.mark.etctl_kubectl
async def test_kubectl_exec(kubeconfig: Path, running: dict[str, Any]) -> None:
    done = await kubectl(
        kubeconfig, "exec", "box", "-c", "main", "--", "sh", "-c", "echo hi; exit 4"
    )
    assert (done.returncode, done.stdout) == (4, "hi\n")
    assert "command terminated with exit code 4" in done.stderr
    piped = await kubectl(
        kubeconfig, "exec", "-i", "box", "-c", "main", "--", "wc", "-l", stdin="a\nb\n"
    )
    assert (piped.returncode, piped.stdout) == (0, "2\n")
    missing = await kubectl(kubeconfig, "exec", "box", "-c", "nope", "--", "ls")
    assert missing.returncode == 1
    assert "container nope is not valid for pod box" in missing.stderr


@pytest.mark.etctl_kubectl
async def test_kubectl_logs(kubeconfig: Path, api: Api, kubelet: Kubelet, clock: FakeClock) -> None:
    await api.create(PODS, pod("talker", annotations=sim(log="hello", run_seconds=3)))
    await wait_for(api, PODS, "talker", phase_is("Running"))
    logs = await kubectl(kubeconfig, "logs", "talker")
    assert (logs.returncode, logs.stdout) == (0, "hello\nsim: started container main\n")
    await clock.advance(3)
    await wait_for(api, PODS, "talker", lambda o: container_state(o)["restartCount"] == 1)
    previous = await kubectl(kubeconfig, "logs", "talker", "--previous", "--tail", "1")
    assert previous.stdout == "sim: container main exited with code 0\n"
