"""Playing a sandbox demo in this process, with the simulated kubelet told how pods behave."""

from __future__ import annotations

import io
from collections.abc import Awaitable
from typing import Protocol

from etctl.cli import Sandbox, run_sandbox
from etctl.cli._sandbox_options import DemoOptions, SandboxOptions
from etctl.cli._timeline import Timeline
from etctl.testing import PodPolicy

QUICK = SandboxOptions(pod_start_delay=0)


class Play(Protocol):
    """A demo's entry point (``run_demo``, ``run_mpijob_demo``)."""

    def __call__(
        self, sandbox: Sandbox, timeline: Timeline, *, options: DemoOptions | None = ...
    ) -> Awaitable[int]: ...


async def failed_demo(play: Play, steps: int, policy: PodPolicy, step_timeout: float) -> str:
    """Play a demo of ``steps`` steps on a quick sandbox whose kubelet follows ``policy``.

    The demo must fail (exit status 1); returns its timeline as written.
    """
    out = io.StringIO()

    async def demo(sandbox: Sandbox) -> int:
        sandbox.kubelet.add_policy(policy)
        timeline = Timeline(out, steps=steps, environ={})
        return await play(sandbox, timeline, options=DemoOptions(step_timeout=step_timeout))

    assert await run_sandbox(QUICK, demo) == 1
    return out.getvalue()
