"""``pods/exec`` and ``pods/log``: the kubelet's streaming endpoints, as the API server serves them.

``pods/exec`` speaks the remote-command WebSocket protocols (``v5.channel.k8s.io``,
``v4.channel.k8s.io``, their ``base64`` forms and the older ``channel.k8s.io``): every frame
starts with its channel (0 stdin, 1 stdout, 2 stderr, 3 status, 4 resize), the server first
sends an empty frame on the lowest channel it writes, and ends with the status on channel 3
(``{"metadata":{},"status":"Success"}``, or ``Failure`` with reason ``NonZeroExitCode`` and
``details.causes: [{reason: ExitCode, message: "<code>"}]``) before closing. With ``stdin=true``
the command runs once stdin ends: v5's close signal (``[255, 0]``) ends it; over v4 there is no
such signal, so only the connection closing ends stdin and nothing can be answered after that
(kubectl uses v5). A TTY merges stderr into stdout; resize messages are ignored. Requests are
checked as the real server checks them, with its messages: a container must be named when the
pod has several, it must exist, the pod must be bound, and the container must be running.

``pods/log`` answers ``text/plain``: ``container``, ``previous``, ``tailLines``, ``timestamps``,
``sinceSeconds``, ``limitBytes`` and ``follow`` (new lines are streamed until the container
instance ends or the client goes away), with the kubelet's errors for containers that have no
log to show yet.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

from etctl.errors import ServerError
from etctl.runtime import PODS, ObjectView
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.http import SubresourceHandler, SubresourceRequest
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.logs import ContainerLog, LogLine

if TYPE_CHECKING:
    from etctl.testing._kubelet.kubelet import Kubelet

__all__ = ["PROTOCOLS", "exec_handler", "log_handler"]

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
V1 = "channel.k8s.io"
V1_BASE64 = "base64.channel.k8s.io"
PROTOCOLS = (V5, V4, V4_BASE64, V1, V1_BASE64)
_JSON = (V5, V4, V4_BASE64)  # the protocols whose error channel carries a JSON Status
_STDIN, _STDOUT, _STDERR, _ERROR, _RESIZE, _CLOSE = 0, 1, 2, 3, 4, 255
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False", ""})


def _flag(query: Mapping[str, str], name: str) -> bool:
    value = query.get(name, "")
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise st.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def _names(containers: list[Mapping[str, Any]]) -> str:
    return " ".join(str(c.get("name") or "") for c in containers)


def _spec_containers(pod: ObjectView, key: str) -> list[Mapping[str, Any]]:
    spec = pod.get("spec")
    found = spec.get(key) if isinstance(spec, Mapping) else None
    return [c for c in found or [] if isinstance(c, Mapping)]


def choose_container(pod: ObjectView, requested: str, *, for_exec: bool) -> str:
    """The container a request is about, with the API server's errors when it cannot tell.

    Raises:
        etctl.errors.BadRequest: no container named while the pod has several, or no such one.
    """
    name = str((pod.get("metadata") or {}).get("name") or "")
    containers = _spec_containers(pod, "containers")
    inits = _spec_containers(pod, "initContainers")
    if not requested:
        if len(containers) == 1:
            return str(containers[0].get("name") or "")
        if not containers:
            raise st.bad_request(f"a container name must be specified for pod {name}")
        if for_exec:
            message = (
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{_names(containers)}]"
            )
            if inits:
                message += f" or one of the init containers: [{_names(inits)}]"
        else:
            message = (
                f"a container name must be specified for pod {name}, choose one of: "
                f"[{_names(inits + containers)}]"
            )
        raise st.bad_request(message)
    if requested not in {str(c.get("name")) for c in containers + inits}:
        raise st.bad_request(f"container {requested} is not valid for pod {name}")
    return requested


def _node_name(pod: ObjectView) -> str:
    spec = pod.get("spec")
    return str(spec.get("nodeName") or "") if isinstance(spec, Mapping) else ""


def _frame(protocol: str, channel: int, data: bytes) -> bytes | str:
    if protocol in (V4_BASE64, V1_BASE64):
        return str(channel) + base64.b64encode(data).decode()
    return bytes([channel]) + data


async def _send(ws: web.WebSocketResponse, protocol: str, channel: int, data: bytes) -> None:
    frame = _frame(protocol, channel, data)
    if isinstance(frame, str):
        await ws.send_str(frame)
    else:
        await ws.send_bytes(frame)


def _gone(container: str) -> dict[str, Any]:
    """The Status of an exec whose container stopped before the command could run."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": f'container not found ("{container}")',
        "reason": "InternalError",
        "code": 500,
    }


def _status(command: list[str], exit_code: int) -> dict[str, Any]:
    if exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    shown = "[" + " ".join(command) + "]"
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            "command terminated with non-zero exit code: error executing command "
            f"{shown}, exit code {exit_code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]},
    }


async def _read_stdin(ws: web.WebSocketResponse, protocol: str) -> bytes:
    """Stdin frames until v5's close signal for channel 0, or the connection ends."""
    received = bytearray()
    async for message in ws:
        if message.type == WSMsgType.BINARY:
            data = bytes(message.data)
        elif message.type == WSMsgType.TEXT:
            text = str(message.data)
            try:
                data = bytes([int(text[:1])]) + base64.b64decode(text[1:])
            except (ValueError, binascii.Error):
                continue
        else:
            break
        if not data:
            continue
        channel, payload = data[0], data[1:]
        if channel == _STDIN:
            received.extend(payload)
        elif channel == _CLOSE and protocol == V5 and payload[:1] == bytes([_STDIN]):
            break
    return bytes(received)


def exec_handler(kubelet: Kubelet) -> SubresourceHandler:
    """The ``pods/exec`` handler of a kubelet."""

    async def handle(request: web.Request, sub: SubresourceRequest) -> web.StreamResponse:
        pod = sub.storage.get(PODS, sub.name, namespace=sub.namespace)
        query = request.rel_url.query
        container = choose_container(pod, query.get("container", ""), for_exec=True)
        if not _node_name(pod):
            raise st.bad_request(f"pod {sub.name} does not have a host assigned")
        command = query.getall("command", [])
        stdin, stdout, stderr, tty = (_flag(query, k) for k in ("stdin", "stdout", "stderr", "tty"))
        if not command:
            raise st.bad_request("you must specify at least 1 command")
        if not (stdin or stdout or stderr):
            raise st.bad_request("you must specify at least 1 of stdin, stdout, stderr")
        worker = kubelet.worker(sub.namespace, sub.name)
        runtime: ContainerRuntime | None = worker.container(container) if worker else None
        if worker is None or runtime is None or not runtime.running:
            raise ServerError(
                f'container not found ("{container}")', status=500, reason="InternalError"
            )
        if request.headers.get("Upgrade", "").lower() != "websocket":
            raise st.bad_request("Upgrade request required")
        ws = web.WebSocketResponse(protocols=PROTOCOLS)
        await ws.prepare(request)
        protocol = ws.ws_protocol or V1
        first = _STDOUT if stdout else _STDERR if stderr else _ERROR
        await _send(ws, protocol, first, b"")
        data = await _read_stdin(ws, protocol) if stdin else b""
        if ws.closed:
            return ws
        try:
            result = kubelet.exec(sub.namespace, sub.name, command, container=container, stdin=data)
        except LookupError:
            # The pod stopped while its stdin was read (deleted, its node lost): the session
            # ends with the runtime's error, as a real one does, not with a server fault.
            gone = _gone(container)
            text = json.dumps(gone, separators=(",", ":")) if protocol in _JSON else gone["message"]
            await _send(ws, protocol, _ERROR, text.encode())
            await ws.close()
            return ws
        out, err = result.stdout, result.stderr
        if tty:
            out, err = out + err, b""
        if stdout and out:
            await _send(ws, protocol, _STDOUT, out)
        if stderr and err:
            await _send(ws, protocol, _STDERR, err)
        status = _status(command, result.exit_code)
        if protocol in _JSON:
            await _send(ws, protocol, _ERROR, json.dumps(status, separators=(",", ":")).encode())
        elif result.exit_code:
            await _send(ws, protocol, _ERROR, str(status["message"]).encode())
        await ws.close()
        return ws

    return handle


def _log_problem(runtime: ContainerRuntime, pod: str, previous: bool) -> str | None:
    """The kubelet's reason why a container has no log to show, or None."""
    name = runtime.name
    if previous:
        if runtime.last is None or not runtime.last.container_id:
            return f'previous terminated container "{name}" in pod "{pod}" not found'
        return None
    if runtime.state in ("running", "terminated") and runtime.runs:
        return None
    if runtime.last is not None:
        return None
    if runtime.state == "terminated":
        return f'container "{name}" in pod "{pod}" is terminated'
    reason = {
        "ErrImagePull": "image can't be pulled",
        "ImagePullBackOff": "trying and failing to pull image",
    }.get(runtime.reason, runtime.reason)
    return f'container "{name}" in pod "{pod}" is waiting to start: {reason}'


def _integer(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise st.bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax') from None


class _Writer:
    """Writes log lines to the response, honouring ``limitBytes``."""

    def __init__(self, response: web.StreamResponse, *, timestamps: bool, limit: int | None):
        self.response = response
        self.timestamps = timestamps
        self.left = limit

    @property
    def full(self) -> bool:
        return self.left is not None and self.left <= 0

    async def write(self, lines: list[LogLine]) -> None:
        chunk = "".join(line.render(timestamps=self.timestamps) for line in lines).encode()
        if self.left is not None:
            chunk = chunk[: self.left]
            self.left -= len(chunk)
        if chunk:
            await self.response.write(chunk)


def log_handler(kubelet: Kubelet) -> SubresourceHandler:
    """The ``pods/log`` handler of a kubelet."""

    async def handle(request: web.Request, sub: SubresourceRequest) -> web.StreamResponse:
        pod = sub.storage.get(PODS, sub.name, namespace=sub.namespace)
        query = request.rel_url.query
        container = choose_container(pod, query.get("container", ""), for_exec=False)
        previous, follow, timestamps = (
            _flag(query, k) for k in ("previous", "follow", "timestamps")
        )
        tail = _integer(query, "tailLines")
        since = _integer(query, "sinceSeconds")
        limit = _integer(query, "limitBytes")
        node = _node_name(pod)
        if not node:
            return web.Response(body=b"", content_type="text/plain")
        worker = kubelet.worker(sub.namespace, sub.name)
        runtime = worker.container(container) if worker else None
        if worker is None or runtime is None:
            raise st.not_found("", "nodes", node)
        problem = _log_problem(runtime, sub.name, previous)
        if problem is not None:
            raise st.bad_request(problem)
        source: ContainerLog = (
            runtime.previous_log if previous and runtime.previous_log else runtime.log
        )
        lines = source.lines()
        if since is not None:
            cutoff = kubelet.clock.now() - timedelta(seconds=since)
            lines = [line for line in lines if line.time >= cutoff]
        if tail is not None and tail >= 0:
            lines = lines[-tail:] if tail else []
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        writer = _Writer(response, timestamps=timestamps, limit=limit)
        await writer.write(lines)
        position = source.written
        while follow and not previous and not writer.full and not source.closed:
            await source.wait(position)
            fresh, position = source.since(position)
            await writer.write(fresh)
        await response.write_eof()
        return response

    return handle
