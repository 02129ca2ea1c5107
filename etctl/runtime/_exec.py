"""Running a command in a container over the websocket exec protocol (``channel.k8s.io``).

Every websocket message carries one channel byte, then data: 0 stdin, 1 stdout, 2 stderr, 3 the
final ``Status`` (JSON), 4 terminal resize. The exit code is in the status: ``Success`` means 0,
``Failure`` with reason ``NonZeroExitCode`` carries it as the ``ExitCode`` cause's message; any
other failure (no such container, the runtime could not start the process, or lost it while it
ran) is an :class:`~etctl.errors.ExecFailed`: the command may have started.

``v5.channel.k8s.io`` is offered first: it adds channel 255, which lets the client close stdin so a
command that reads to end of input (``cat``, ``sh -s``) terminates. ``v4.channel.k8s.io`` has no
such signal: with a v4-only server, stdin is written but never closed, and the command must stop by
itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from etctl.errors import ExecFailed, ResponseTooLarge, TransportError, api_error_from_status
from etctl.runtime._http_connection import Broken
from etctl.runtime._websocket import WebSocket

__all__ = ["PROTOCOLS", "ExecResult", "ExecSession"]

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")

_STDIN, _STDOUT, _STDERR, _STATUS = 0, 1, 2, 3
_CLOSE = 255


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What a command printed and how it ended.

    Attributes:
        stdout: everything written to standard output.
        stderr: everything written to standard error.
        exit_code: the process's exit code (0 on success).
    """

    stdout: bytes
    stderr: bytes
    exit_code: int


def _exit_code(status: Any) -> int:
    """The exit code in a channel-3 ``Status``; raises the mapped error for other failures."""
    if not isinstance(status, dict):
        msg = f"exec returned an unreadable status: {status!r}"
        raise TransportError(msg)
    if status.get("status") == "Success":
        return 0
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    for cause in causes or []:
        if isinstance(cause, dict) and cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message", ""))
            except ValueError:
                break
    code = status.get("code")
    mapped = api_error_from_status(code if isinstance(code, int) else 500, status)
    raise ExecFailed(
        mapped.message, status=mapped.status, reason=mapped.reason, details=mapped.details
    )


class ExecSession:
    """Drives one open exec websocket to completion.

    Args:
        ws: the websocket, upgraded with one of :data:`PROTOCOLS`.
        stdin: bytes to send to the process (``None``: stdin was not requested).
        limit: the most output (stdout and stderr together) collected (0: no limit).
    """

    def __init__(self, ws: WebSocket, *, stdin: bytes | None, limit: int = 0) -> None:
        self._ws = ws
        self._stdin = stdin
        self._limit = limit

    async def run(self) -> ExecResult:
        """Send stdin, collect output until the status arrives and return the result.

        Raises:
            ApiError: the process could not run (the status was a failure without an exit code).
            ResponseTooLarge: the command printed more than the limit (it may still run).
            TransportError: the connection broke before the status arrived.
        """
        if self._stdin is not None:
            await self._send_stdin(self._stdin)
        stdout: list[bytes] = []
        stderr: list[bytes] = []
        size = 0
        try:
            while (data := await self._ws.receive()) is not None:
                if not data:
                    continue
                channel, payload = data[0], data[1:]
                if channel in (_STDOUT, _STDERR):
                    size += len(payload)
                    if self._limit and size > self._limit:
                        msg = f"exec output exceeds {self._limit} bytes: the rest was refused"
                        raise ResponseTooLarge(msg)
                if channel == _STDOUT:
                    stdout.append(payload)
                elif channel == _STDERR:
                    stderr.append(payload)
                elif channel == _STATUS:
                    code = _exit_code(orjson.loads(payload))
                    return ExecResult(b"".join(stdout), b"".join(stderr), code)
        except (Broken, OSError, ValueError) as exc:
            msg = f"exec stream broke: {exc!r}"
            raise TransportError(msg) from exc
        msg = "exec stream closed before the command's status arrived"
        raise TransportError(msg)

    async def _send_stdin(self, data: bytes) -> None:
        view = memoryview(data)
        step = 32 * 1024
        for offset in range(0, len(view), step):
            await self._ws.send_bytes(bytes((_STDIN,)) + view[offset : offset + step].tobytes())
        if self._ws.protocol == PROTOCOLS[0]:
            await self._ws.send_bytes(bytes((_CLOSE, _STDIN)))
