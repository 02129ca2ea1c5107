"""etctl as a child process (``python -m etctl.cli``): start it, read its output, stop it.

The child gets the test process's environment without any ``ETCTL_*`` setting or ``NO_COLOR``, so
only its arguments configure it; it is killed when the block ends if it is still running. It starts
with SIGINT's default disposition, as a command typed at a terminal does: a suite run in the
background (where the shell ignores SIGINT, and children inherit that) still tests Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field


@dataclass
class SandboxProcess:
    """A running ``etctl sandbox`` and what it printed so far on standard output."""

    process: asyncio.subprocess.Process
    lines: list[str] = field(default_factory=list)

    async def read_until(self, pattern: str, *, timeout: float = 20.0) -> re.Match[str]:
        """Read standard output until a line matches ``pattern``; return the match."""
        stdout = self.process.stdout
        assert stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                raw = await stdout.readline()
                if not raw:
                    err = await self.stderr()
                    msg = f"the sandbox ended before printing {pattern!r}:\n{self.text}\n{err}"
                    raise AssertionError(msg)
                line = raw.decode().rstrip("\n")
                self.lines.append(line)
                found = re.search(pattern, line)
                if found:
                    return found

    async def finish(self, *, timeout: float = 30.0) -> tuple[int, str, str]:
        """Wait for the exit; ``(status, all of stdout, stderr)``."""
        out, err = await asyncio.wait_for(self.process.communicate(), timeout=timeout)
        self.lines += out.decode().splitlines()
        assert self.process.returncode is not None
        return self.process.returncode, self.text, err.decode()

    async def stderr(self) -> str:
        stream = self.process.stderr
        assert stream is not None
        return (await stream.read()).decode()

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _foreground_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@asynccontextmanager
async def etctl_process(
    *args: str, prelude: str | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m etctl.cli ARGS`` with pipes; killed at the end if still running.

    ``prelude`` is Python source run in the child before the command (to observe it from inside).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETCTL_")}
    env.pop("NO_COLOR", None)
    start = ["-m", "etctl.cli"]
    if prelude is not None:
        run = "import runpy; runpy.run_module('etctl.cli', run_name='__main__', alter_sys=True)"
        start = ["-c", f"{prelude}\n{run}"]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *start,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        preexec_fn=_foreground_signals,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@asynccontextmanager
async def sandbox_process(*args: str) -> AsyncIterator[SandboxProcess]:
    """``etctl sandbox ARGS`` (see :func:`etctl_process`), read as it prints."""
    async with etctl_process("sandbox", *args) as process:
        yield SandboxProcess(process)


__all__ = ["SandboxProcess", "etctl_process", "sandbox_process"]
