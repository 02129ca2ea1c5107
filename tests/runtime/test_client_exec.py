"""Exec over the websocket channel protocol, against a scripted websocket server."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType, web

from etctl.errors import ApiError, ExecFailed, NotFound, TransportError
from tests.runtime.scripted import client_for, json_response, scripted_server, status_body

EXIT_3 = {
    "metadata": {},
    "status": "Failure",
    "message": "command terminated with non-zero exit code: exit status 3",
    "reason": "NonZeroExitCode",
    "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
}


def exec_server(
    *,
    protocols: Sequence[str] = ("v5.channel.k8s.io", "v4.channel.k8s.io"),
    status: dict[str, Any] | None = None,
    received: list[bytes] | None = None,
    send_status: bool = True,
) -> Any:
    """A pods/exec endpoint: echoes stdin to stdout, writes the command to stderr."""

    async def handler(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=tuple(protocols))
        await ws.prepare(request)
        command = request.query.getall("command")
        stdin = bytearray()
        if request.query.get("stdin") == "true":
            async for message in ws:
                assert message.type is WSMsgType.BINARY
                data: bytes = message.data
                if received is not None:
                    received.append(data)
                if data[0] == 0:
                    stdin += data[1:]
                if data == b"\xff\x00" or (ws.ws_protocol == "v4.channel.k8s.io" and stdin):
                    break  # stdin closed (v5), or v4: no close will ever come
        await ws.send_bytes(b"\x01" + bytes(stdin))
        await ws.send_bytes(b"\x02" + " ".join(command).encode())
        if send_status:
            await ws.send_bytes(b"\x03" + json.dumps(status or {"status": "Success"}).encode())
            await ws.close()
        else:
            async for _message in ws:
                pass
        return ws

    return handler


async def test_exec_collects_output_and_exit_code(tmp_path: Path) -> None:
    async with scripted_server() as server:
        server.handler = exec_server()
        async with await client_for(server.url, tmp_path) as client:
            ok = await client.exec("ns", "p", ["echo", "hi"], container="main", timeout=5)
            server.handler = exec_server(status=EXIT_3)
            failed = await client.exec("ns", "p", ["false"], timeout=5)
    assert (ok.stdout, ok.stderr, ok.exit_code) == (b"", b"echo hi", 0)
    assert failed.exit_code == 3
    seen = server.seen[0]
    assert seen.path == "/api/v1/namespaces/ns/pods/p/exec"
    assert seen.query == [
        ("command", "echo"),
        ("command", "hi"),
        ("container", "main"),
        ("stdin", "false"),
        ("stdout", "true"),
        ("stderr", "true"),
        ("tty", "false"),
    ]
    assert seen.headers["Authorization"] == "Bearer t0ken"


async def test_stdin_is_closed_on_v5(tmp_path: Path) -> None:
    received: list[bytes] = []
    payload = b"x" * 100_000
    async with scripted_server() as server:
        server.handler = exec_server(received=received)
        async with await client_for(server.url, tmp_path) as client:
            result = await client.exec("ns", "p", ["cat"], stdin=payload, timeout=5)
    assert result.stdout == payload
    assert received[-1] == b"\xff\x00"


async def test_stdin_on_a_v4_only_server_is_sent_without_a_close(tmp_path: Path) -> None:
    received: list[bytes] = []
    async with scripted_server() as server:
        server.handler = exec_server(protocols=("v4.channel.k8s.io",), received=received)
        async with await client_for(server.url, tmp_path) as client:
            result = await client.exec("ns", "p", ["head", "-c", "2"], stdin=b"ab", timeout=5)
    assert result.stdout == b"ab"
    assert received == [b"\x00ab"]


async def test_a_failure_without_an_exit_code_is_an_api_error(tmp_path: Path) -> None:
    failure = status_body(500, "InternalError", 'container "x" not found in pod "p"')
    async with scripted_server() as server:
        server.handler = exec_server(status=failure)
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(ExecFailed, match="not found") as failed:
                await client.exec("ns", "p", ["ls"], timeout=5)
    # After the upgrade: the command may have started, and the Status's fields are kept.
    assert (failed.value.status, failed.value.reason) == (500, "InternalError")
    assert len(server.seen) == 1  # never retried


async def test_a_refused_upgrade_maps_the_status(tmp_path: Path) -> None:
    async def missing(_request: web.Request) -> web.StreamResponse:
        return json_response(status_body(404, "NotFound", 'pods "p" not found'), 404)

    async with scripted_server() as server:
        server.handler = missing
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(NotFound):
                await client.exec("ns", "p", ["ls"], timeout=5)
            with pytest.raises(ValueError, match="needs a command"):
                await client.exec("ns", "p", [], timeout=5)


@pytest.mark.parametrize(
    ("status", "reason"),
    [(429, "TooManyRequests"), (503, "ServiceUnavailable"), (500, "InternalError")],
)
async def test_an_upgrade_refused_for_a_while_is_retried_and_the_command_runs_once(
    tmp_path: Path, status: int, reason: str
) -> None:
    # The server answers instead of switching protocols: the command provably never started, so
    # trying again cannot run it twice.
    refusals = [status, status]
    runs: list[str] = []
    ran = exec_server()

    async def flaky(request: web.Request) -> web.StreamResponse:
        if refusals:
            code = refusals.pop()
            return json_response(status_body(code, reason, "try again later"), code)
        runs.append(request.query.getall("command")[0])
        response: web.StreamResponse = await ran(request)
        return response

    async with scripted_server() as server:
        server.handler = flaky
        async with await client_for(server.url, tmp_path) as client:
            result = await client.exec("ns", "p", ["echo", "hi"], timeout=5)
            slept = list(client.options.clock.slept)  # type: ignore[attr-defined]
    assert result.exit_code == 0
    assert runs == ["echo"]
    assert len(server.seen) == 3
    assert len(slept) == 2  # backed off twice, on the client's clock


async def test_a_lost_exec_answer_is_not_retried(tmp_path: Path) -> None:
    # The upgrade went through and the stream broke: the command may have run; no second attempt.
    async def broken(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
        await ws.prepare(request)
        await ws.close()
        return ws

    async with scripted_server() as server:
        server.handler = broken
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(TransportError, match="closed before"):
                await client.exec("ns", "p", ["ls"], timeout=5)
    assert len(server.seen) == 1


async def test_a_permanent_refusal_is_not_retried(tmp_path: Path) -> None:
    async def forbidden(_request: web.Request) -> web.StreamResponse:
        return json_response(status_body(403, "Forbidden", "no exec for you"), 403)

    async with scripted_server() as server:
        server.handler = forbidden
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(ApiError):
                await client.exec("ns", "p", ["ls"], timeout=5)
    assert len(server.seen) == 1


async def test_exec_times_out(tmp_path: Path) -> None:
    async with scripted_server() as server:
        server.handler = exec_server(send_status=False)
        async with await client_for(server.url, tmp_path) as client:
            with pytest.raises(TransportError, match="did not finish"):
                await client.exec("ns", "p", ["sleep", "1000"], timeout=0.3)


async def test_logs_returns_text(tmp_path: Path) -> None:
    async def log(_request: web.Request) -> web.StreamResponse:
        return web.Response(text="line 1\nline 2\n", content_type="text/plain")

    async with scripted_server() as server:
        server.handler = log
        async with await client_for(server.url, tmp_path) as client:
            text = await client.logs(
                "ns",
                "p",
                container="c",
                tail_lines=2,
                since_seconds=5,
                previous=True,
                timestamps=True,
            )
    assert text == "line 1\nline 2\n"
    assert server.seen[0].path == "/api/v1/namespaces/ns/pods/p/log"
    assert dict(server.seen[0].query) == {
        "container": "c",
        "tailLines": "2",
        "sinceSeconds": "5",
        "previous": "true",
        "timestamps": "true",
    }
