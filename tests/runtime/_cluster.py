"""The cluster under test, a client and a shared virtual clock, for informer and cache tests.

By default the cluster is a fresh embedded API server, and the server and everything under test
run on one :class:`FakeClock`: backoffs, watchdogs, watch timeouts and bookmarks all move only
when a test advances it. HTTP itself is real, so tests wait for conditions (with a bounded
real-time timeout) after moving the clock. With ``ETCTL_TEST_KUBECONFIG`` the cluster is a
namespace of that real cluster (:func:`etctl.testing.cluster_target`): the client and informers
still run on the fake clock, the server on its own, and tests that need the server's hooks
(:attr:`Cluster.server`) are marked ``etctl_hooks`` and skipped there.
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
from etctl.testing import ApiServer, ClusterTarget, History, cluster_target
from tests.runtime._realtime import eventually

NEVER = 1e9
"""A bookmark interval or idle timeout that no test reaches."""

__all__ = [
    "NEVER",
    "NOT_PRESET",
    "Cluster",
    "Recorder",
    "TargetEnv",
    "cluster",
    "eventually",
    "running",
]


@dataclass
class TargetEnv:
    """The cluster under test, a client of it and the test's clock: what every test env holds."""

    target: ClusterTarget
    client: Client
    clock: FakeClock

    @property
    def server(self) -> ApiServer:
        """The embedded server's hooks (tests using them are marked etctl_hooks)."""
        return self.target.hooks

    @property
    def ns(self) -> str:
        """The test's namespace."""
        return self.target.namespace


@dataclass
class Cluster(TargetEnv):
    """The cluster under test, a client of it (no client-side retries) and the test's clock.

    On the embedded server (the default) the server runs on the clock too; on a real cluster
    (``ETCTL_TEST_KUBECONFIG``) only the client and what the test runs do, and :attr:`server`
    (the hooks: faults, request log, history) raises: such tests are marked ``etctl_hooks``.
    """

    others: list[str] = field(default_factory=list)
    """The other namespaces the test created (deleted with it on a real cluster)."""

    @property
    def embedded(self) -> bool:
        """True on the embedded server."""
        return self.target.embedded

    @property
    def scope(self) -> dict[str, str]:
        """Informer options covering the test's namespace, minus what the cluster put there."""
        found = {"namespace": self.ns}
        if self._presets():
            found["field_selector"] = NOT_PRESET
        return found

    def _presets(self) -> bool:
        if self.target.cluster is None:
            return True  # the embedded server publishes kube-root-ca.crt, as a cluster does
        return bool(self.target.cluster.presets())

    def configmap(self, name: str, namespace: str = "", **data: str) -> dict[str, Any]:
        """Create a ConfigMap (in the test's namespace by default), synchronously."""
        namespace = namespace or self.ns
        body = {"metadata": {"name": name, "namespace": namespace}, "data": data}
        return self.target.storage.create(CONFIGMAPS, body, namespace=namespace)

    def update(self, name: str, namespace: str = "", **data: str) -> dict[str, Any]:
        """Replace a ConfigMap's data."""
        namespace = namespace or self.ns
        current = self.target.storage.get(CONFIGMAPS, name, namespace=namespace)
        changed = {**current, "data": data}
        return self.target.storage.update(CONFIGMAPS, changed, namespace=namespace)

    def delete(self, name: str, namespace: str = "") -> None:
        """Delete a ConfigMap."""
        self.target.storage.delete(CONFIGMAPS, name, namespace=namespace or self.ns)

    def namespace(self, name: str) -> str:
        """Create another namespace; returns its name (unique on a real cluster)."""
        if self.target.cluster is None:
            self.target.storage.create(NAMESPACES, {"metadata": {"name": name}})
        else:
            name = self.target.cluster.create_namespace(name)
        self.others.append(name)
        return name

    def keys(self, found: Iterable[ObjectView]) -> list[str]:
        """Sorted keys of the objects in the test's namespaces (a real cluster has others).

        The ConfigMap a cluster puts in every namespace is left out.
        """
        mine = {self.ns, *self.others}
        return sorted(
            objects.key_of(obj)
            for obj in found
            if objects.namespace(obj) in mine
            and not (obj.get("kind") == "ConfigMap" and objects.name(obj) == PRESET_CONFIGMAP)
        )

    def state(self, res: Resource = CONFIGMAPS, namespace: str | None = None) -> dict[str, str]:
        """The cluster's objects of ``res`` in the test's namespace: key -> resourceVersion.

        ConfigMaps the cluster itself puts in every namespace are left out (:data:`NOT_PRESET`).
        """
        scope = self.ns if namespace is None else namespace
        selector = NOT_PRESET if res == CONFIGMAPS and self._presets() else None
        listed = self.target.storage.list(res, namespace=scope, field_selector=selector)
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
    """The cluster under test with a namespace for the test, and a client on a fake clock.

    On the embedded server, the server runs on that clock with the history and bookmark
    interval given; a real cluster keeps its own.
    """
    clock = FakeClock()
    async with cluster_target(
        tmp_path,
        crds=crds,
        clock=clock,
        history=history or History(),
        bookmark_interval=bookmark_interval,
    ) as target:
        options = ClientOptions(
            retry=RetryPolicy(max_attempts=1),
            clock=clock,
            request_timeout=10,
            watch_idle_timeout=NEVER,
        )
        async with Client.connect(target.kubeconfig, options=options) as client:
            env = Cluster(target, client, clock)
            try:
                yield env
            finally:
                if target.cluster is not None:
                    for other in env.others:
                        await target.cluster.adelete_namespace(other)


PRESET_CONFIGMAP = "kube-root-ca.crt"
"""The ConfigMap a cluster (and the embedded server) puts in every namespace."""

NOT_PRESET = f"metadata.name!={PRESET_CONFIGMAP}"
"""A field selector that leaves out the ConfigMap a cluster puts in every namespace."""


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
