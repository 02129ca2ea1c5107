"""An embedded API server, a client and a shared virtual clock, for informer and cache tests.

The server and everything under test run on one :class:`FakeClock`: backoffs, watchdogs, watch
timeouts and bookmarks all move only when a test advances it. HTTP itself is real, so tests wait
for conditions (with a bounded real-time timeout) after moving the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etctl.runtime import (
    CONFIGMAPS,
    NAMESPACES,
    Client,
    ClientOptions,
    FakeClock,
    ObjectView,
    Resource,
    RetryPolicy,
    Tombstone,
    objects,
)
from etctl.testing import ApiServer, History
from tests.runtime._realtime import eventually

NEVER = 1e9
"""A bookmark interval or idle timeout that no test reaches."""

__all__ = [
    "NEVER",
    "Cluster",
    "Recorder",
    "cluster",
    "eventually",
    "running",
]


@dataclass
class Cluster:
    """The server, a client of it (no client-side retries) and the clock they share."""

    server: ApiServer
    client: Client
    clock: FakeClock

    def configmap(self, name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
        """Create a ConfigMap on the server (synchronously, through its storage)."""
        body = {"metadata": {"name": name, "namespace": namespace}, "data": data}
        return self.server.storage.create(CONFIGMAPS, body, namespace=namespace)

    def update(self, name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
        """Replace a ConfigMap's data on the server."""
        current = self.server.storage.get(CONFIGMAPS, name, namespace=namespace)
        changed = {**current, "data": data}
        return self.server.storage.update(CONFIGMAPS, changed, namespace=namespace)

    def delete(self, name: str, namespace: str = "default") -> None:
        """Delete a ConfigMap on the server."""
        self.server.storage.delete(CONFIGMAPS, name, namespace=namespace)

    def namespace(self, name: str) -> None:
        """Create a namespace on the server."""
        self.server.storage.create(NAMESPACES, {"metadata": {"name": name}})

    def state(self, res: Resource = CONFIGMAPS, namespace: str = "") -> dict[str, str]:
        """The server's objects of ``res``: key -> resourceVersion."""
        listed = self.server.storage.list(res, namespace=namespace)
        return {objects.key_of(obj): objects.resource_version(obj) for obj in listed.items}

    def requests(self, verb: str, resource: str = "configmaps") -> int:
        """How many ``verb`` requests on ``resource`` the server received."""
        return len(self.server.requests.find(verb=verb, resource=resource))

    def watchers(self, res: Resource = CONFIGMAPS) -> int:
        """Open watch streams on ``res``."""
        info, _ = self.server.storage.target(res)
        return self.server.store.sinks(info.key)

    def expire_history(self, res: Resource = CONFIGMAPS) -> None:
        """Drop the server's event history of ``res``: older resourceVersions get 410."""
        info, _ = self.server.storage.target(res)
        self.server.store.compact(info.key)

    def backoff_left(self) -> float:
        """Seconds until the earliest sleeper on the clock wakes (a backoff, mostly)."""
        deadline = self.clock.next_deadline()
        assert deadline is not None, "nothing sleeps on the clock"
        return deadline - self.clock.monotonic()

    def sleeping_under(self, seconds: float) -> bool:
        """True when something sleeps on the clock and wakes within ``seconds``."""
        deadline = self.clock.next_deadline()
        return deadline is not None and deadline - self.clock.monotonic() < seconds

    def backing_off(self) -> bool:
        """True when something sleeps on the clock for less than 100 s: a backoff.

        Watchdogs, watch deadlines and bookmark timers of these tests sleep far longer.
        """
        return self.sleeping_under(100)

    async def through_backoff(self) -> None:
        """Wait until a backoff sleeps on the clock, then move the clock to its end."""
        await eventually(self.backing_off)
        await self.clock.advance(self.backoff_left())

    def cut_watches(self, res: Resource = CONFIGMAPS) -> None:
        """End every open watch of ``res`` (as a dropped connection would)."""
        info, _ = self.server.storage.target(res)
        self.server.store.close_sinks(info.key, reason="cut by the test")


@asynccontextmanager
async def cluster(
    tmp_path: Path,
    *,
    history: History | None = None,
    bookmark_interval: float = NEVER,
    crds: Iterable[Any] = (),
) -> AsyncIterator[Cluster]:
    """Serve an embedded API server on a fake clock and connect a client to it."""
    clock = FakeClock()
    async with ApiServer(
        clock=clock,
        history=history or History(),
        bookmark_interval=bookmark_interval,
        crds=crds,
    ) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        options = ClientOptions(
            retry=RetryPolicy(max_attempts=1),
            clock=clock,
            request_timeout=10,
            watch_idle_timeout=NEVER,
        )
        async with Client.connect(kubeconfig, options=options) as client:
            yield Cluster(server, client, clock)


@asynccontextmanager
async def running(*runnables: Any) -> AsyncIterator[None]:
    """Run ``runnable.run()`` of each argument as a task for the duration of the block.

    A failure in the block is re-raised as itself once the tasks stopped (not in a group).
    """
    failure: BaseException | None = None
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(r.run(), name=f"test:{type(r).__name__}") for r in runnables]
        try:
            yield
        except Exception as exc:
            failure = exc
        finally:
            for task in tasks:
                task.cancel()
    if failure is not None:
        raise failure


@dataclass
class Recorder:
    """A handler that rebuilds the source's content from the events it receives.

    Every event is checked against what it saw before: an add of a key it holds, or an update or
    delete of a key it does not hold, is recorded in ``problems`` (a lost or duplicated event).
    """

    view: dict[str, ObjectView] = field(default_factory=dict)
    log: list[tuple[str, str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def on_add(self, obj: ObjectView, *, is_in_initial_list: bool) -> None:
        key = objects.key_of(obj)
        if key in self.view:
            self.problems.append(f"add of {key}, which is already there")
        self.view[key] = obj
        self.log.append(("add", key, is_in_initial_list))

    def on_update(self, old: ObjectView, new: ObjectView) -> None:
        key = objects.key_of(new)
        if self.view.get(key) is not old and old is not new:
            self.problems.append(f"update of {key} from a state it never saw")
        self.view[key] = new
        self.log.append(("update", key, old is new))

    def on_delete(self, obj: ObjectView | Tombstone) -> None:
        if isinstance(obj, Tombstone):
            key, missed = obj.key, True
        else:
            key, missed = objects.key_of(obj), False
        if self.view.pop(key, None) is None:
            self.problems.append(f"delete of {key}, which it does not hold")
        self.log.append(("delete", key, missed))

    def versions(self) -> dict[str, str]:
        """key -> resourceVersion of what the handler holds."""
        return {key: objects.resource_version(obj) for key, obj in self.view.items()}
