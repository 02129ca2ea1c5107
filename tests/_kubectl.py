"""kubectl, as a user runs it, from a test's event loop (whose embedded server keeps answering)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubectl", "kubectl_apply"]


async def kubectl(
    kubeconfig: Path, *args: str, stdin: str | bytes | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run kubectl with ``args`` (``stdin`` fed to it): its status, output and errors.

    Not subprocess.run: an embedded server answers on this event loop, which must keep running.
    """
    binary = shutil.which("kubectl")
    assert binary is not None
    process = await asyncio.create_subprocess_exec(
        binary,
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    data = stdin.encode() if isinstance(stdin, str) else stdin
    async with asyncio.timeout(timeout):
        out, err = await process.communicate(data)
    assert process.returncode is not None
    return subprocess.CompletedProcess(args, process.returncode, out.decode(), err.decode())


async def kubectl_apply(
    kubeconfig: Path, document: dict[str, Any], *, namespace: str = ""
) -> tuple[int, str]:
    """``kubectl apply -f -`` of ``document`` (into ``namespace``, else the context's): its
    status, and its output and errors together."""
    where = ("-n", namespace) if namespace else ()
    done = await kubectl(kubeconfig, *where, "apply", "-f", "-", stdin=yaml.safe_dump(document))
    return done.returncode, done.stdout + done.stderr
