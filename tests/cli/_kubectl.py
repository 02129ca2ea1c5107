"""kubectl, as a user runs it, from a test's event loop (whose server must keep answering)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubectl", "kubectl_apply"]


async def kubectl(kubeconfig: Path, *args: str, stdin: str = "") -> tuple[int, str]:
    """Run kubectl with ``args`` (``stdin`` fed to it); its status and its output and errors."""
    binary = shutil.which("kubectl")
    assert binary is not None
    # Not subprocess.run: an embedded server answers on this event loop, which must keep running.
    process = await asyncio.create_subprocess_exec(
        binary,
        "--kubeconfig",
        str(kubeconfig),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(stdin.encode()), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def kubectl_apply(
    kubeconfig: Path, document: dict[str, Any], *, namespace: str = ""
) -> tuple[int, str]:
    """``kubectl apply -f -`` of ``document`` (into ``namespace``, else the context's)."""
    where = ("-n", namespace) if namespace else ()
    return await kubectl(kubeconfig, *where, "apply", "-f", "-", stdin=yaml.safe_dump(document))
