"""Helpers for tests that mix virtual time (a FakeClock) with real HTTP to the embedded server.

Virtual time only moves when a test advances it, but requests take real (short) time. Tests
therefore advance the clock, then wait in real time, bounded, for a *condition* (a request reached
the server, a renewal was counted) before they move time again.

A :class:`Manager` under test runs as a task of the test's group, in one of two ways: with
:func:`running`, what it failed with is kept on its :class:`ManagerRun` for the test to assert on;
with :func:`run_manager`, a failure is raised out of the block like any other.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from etctl.runtime import Client, ClientOptions, FakeClock, Manager
from etctl.testing import ApiServer, ClusterTarget
from tests.runtime.scripted import InstantClock


def answered(server: ApiServer, *, verb: str, resource: str = "leases", name: str = "") -> int:
    """How many matching requests the server has answered so far."""
    return sum(
        1
        for record in server.requests.find(verb=verb, resource=resource)
        if record.code and (not name or record.name == name)
    )


def received(server: ApiServer, *, verb: str, resource: str = "leases") -> int:
    """How many matching requests reached the server (answered or not)."""
    return len(server.requests.find(verb=verb, resource=resource))


@asynccontextmanager
async def client_of(
    where: ApiServer | ClusterTarget, tmp_path: Path | None = None, **options: Any
) -> AsyncIterator[Client]:
    """A client of an embedded server or a cluster target whose retry sleeps return at once."""
    if isinstance(where, ClusterTarget):
        kubeconfig = where.kubeconfig
    else:
        assert tmp_path is not None, "an embedded server's kubeconfig goes to tmp_path"
        kubeconfig = where.write_kubeconfig(tmp_path / f"kubeconfig-{uuid.uuid4().hex}")
    defaults = ClientOptions(request_timeout=30, watch_idle_timeout=30, clock=InstantClock())
    opts = dataclasses.replace(defaults, **options)
    async with await Client.from_kubeconfig(kubeconfig, options=opts) as client:
        yield client


@dataclass
class ManagerRun:
    """A manager under test, its task once :func:`running` started it, and what it failed with."""

    manager: Manager
    task: asyncio.Task[None] | None = field(default=None, init=False)
    error: BaseException | None = field(default=None, init=False)

    async def run(self) -> None:
        """Run the manager to its end; a failure is kept in ``error``, not raised."""
        try:
            await self.manager.run()
        except Exception as err:
            self.error = err


@asynccontextmanager
async def running(*runnables: Any) -> AsyncIterator[None]:
    """Run ``runnable.run()`` of each argument as a task of one group for the length of the block.

    A :class:`ManagerRun` keeps its manager's failure (and its task) for the test to assert on,
    and is stopped gracefully when the block ends; anything else (an informer, a cache) is
    cancelled then. A failure in the block is re-raised as itself once the tasks stopped.
    """
    failure: BaseException | None = None
    async with asyncio.TaskGroup() as group:
        tasks = []
        for runnable in runnables:
            task = group.create_task(runnable.run(), name=f"test:{type(runnable).__name__}")
            if isinstance(runnable, ManagerRun):
                runnable.task = task
            tasks.append(task)
        try:
            yield
        except Exception as exc:
            failure = exc
        finally:
            for runnable, task in zip(runnables, tasks, strict=True):
                if isinstance(runnable, ManagerRun):
                    runnable.manager.stop()
                else:
                    task.cancel()
    if failure is not None:
        raise failure


@asynccontextmanager
async def run_manager(manager: Manager) -> AsyncIterator[Manager]:
    """Run ``manager`` until the block ends, then stop it and wait (10 s at most) for its end.

    A failure of the manager is raised out of the block (through its task group).
    """
    async with asyncio.TaskGroup() as group:
        task = group.create_task(manager.run(), name="test:manager")
        try:
            yield manager
        finally:
            manager.stop()
            await asyncio.wait_for(asyncio.shield(task), timeout=10)


class NoJitter(random.Random):
    """A random source whose draws are all zero: jittered waits take their base value."""

    def random(self) -> float:
        return 0.0


class SkewedClock:
    """Another process's view of a shared FakeClock: same monotonic time, wall clock shifted."""

    def __init__(self, base: FakeClock, offset: timedelta) -> None:
        self.base = base
        self.offset = offset

    def monotonic(self) -> float:
        return self.base.monotonic()

    def now(self) -> datetime:
        return self.base.now() + self.offset

    async def sleep(self, delay: float) -> None:
        await self.base.sleep(delay)
