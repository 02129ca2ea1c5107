"""The pod subresources of the API client: ``exec`` and ``log``.

:class:`PodVerbs` is the part of :class:`~etctl.runtime.Client` that talks to containers.
``exec`` runs a command over the remote-command WebSocket protocols
(:mod:`etctl.runtime._exec`) under one hard timeout for the whole exchange; ``logs`` reads what a
container wrote so far, as text. A non-zero exit code is a result, never an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from etctl.errors import TransportError
from etctl.runtime import _requests as wire
from etctl.runtime._addressing import path_for
from etctl.runtime._caller import Caller
from etctl.runtime._exec import PROTOCOLS, ExecResult, ExecSession
from etctl.runtime._resources import PODS

__all__ = ["PodVerbs"]

_Pairs = list[tuple[str, str]]


class PodVerbs:
    """Run commands in containers and read their logs.

    A part of :class:`~etctl.runtime.Client`.
    """

    _caller: Caller

    async def exec(
        self,
        namespace: str,
        pod: str,
        command: Sequence[str],
        *,
        container: str | None = None,
        stdin: bytes | None = None,
        timeout: float,
    ) -> ExecResult:
        """Run ``command`` in a pod's container and wait for it to exit.

        Args:
            namespace: the pod's namespace.
            pod: the pod's name.
            command: the program and its arguments (no shell unless you run one).
            container: the container (required when the pod has several).
            stdin: bytes fed to the command's standard input (closed afterwards where the server
                speaks ``v5.channel.k8s.io``).
            timeout: seconds for the whole exchange, connection included.

        Returns:
            stdout, stderr and the exit code (a non-zero exit code is a result, not an error).

        Raises:
            ApiError: the exec was refused (no such pod or container, 403) or could not start.
            TransportError: the connection failed or ``timeout`` passed.
        """
        if not command:
            msg = "exec needs a command"
            raise ValueError(msg)
        query = [("command", part) for part in command]
        if container:
            query.append(("container", container))
        query += [
            ("stdin", wire.flag(stdin is not None)),
            ("stdout", "true"),
            ("stderr", "true"),
            ("tty", "false"),
        ]
        path = path_for(PODS, namespace, pod, "exec")
        transport = self._caller.transport
        try:
            async with asyncio.timeout(timeout):
                ws = await transport.ws_connect(
                    path, query=query, protocols=PROTOCOLS, timeout=timeout
                )
                async with ws:
                    return await ExecSession(ws, stdin=stdin).run()
        except TimeoutError as exc:
            msg = f"exec in {namespace}/{pod} did not finish within {timeout} s"
            raise TransportError(msg) from exc

    async def logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> str:
        """A container's log so far (not followed), as text."""
        query: _Pairs = []
        if container:
            query.append(("container", container))
        if tail_lines is not None:
            query.append(("tailLines", str(tail_lines)))
        if since_seconds is not None:
            query.append(("sinceSeconds", str(since_seconds)))
        if previous:
            query.append(("previous", "true"))
        if timestamps:
            query.append(("timestamps", "true"))
        path = path_for(PODS, namespace, pod, "log")
        raw = await self._caller.send("GET", path, query=query, accept="*/*")
        return raw.body.decode("utf-8", "replace")
