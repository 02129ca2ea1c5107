"""The whole operator under test: embedded API server, Manager, informers and a JobController.

Everything runs on one :class:`FakeClock`; HTTP and watches are real, so tests wait (bounded, in
real time) for a *condition* on the server's storage, read synchronously. The test plays the
kubelet by writing pod statuses through the storage, unless the server runs its own kubelet.

The pieces every job kind's operator tests share live here: :func:`job_operator` (a Manager with
one plugin's JobController, not started), :class:`StoredObjects` (readers of the server's storage),
:func:`condition_of` and :func:`advance_idle` (time that passes while the operator has nothing to
do). :func:`running` runs operators for the length of a block; a failure is kept on the operator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from etctl.common import JobController, JobPlugin, JobSettings, crd_manifest, setup_job_controller
from etctl.runtime import (
    EVENTS,
    PODS,
    Client,
    FakeClock,
    KubeObject,
    Manager,
    ManagerOptions,
    Resource,
    objects,
)
from etctl.testing import ApiServer, wait_idle
from tests.common._harness import pod_status
from tests.common.simplejob import SIMPLEJOBS, SimpleJobPlugin
from tests.runtime._realtime import ManagerRun, NoJitter, client_of, eventually, running

NAMESPACE = "default"

__all__ = [
    "NAMESPACE",
    "Cluster",
    "Operator",
    "StoredObjects",
    "advance_idle",
    "cluster",
    "condition_of",
    "eventually",
    "job_operator",
    "running",
]


@dataclass
class Operator(ManagerRun):
    """One manager running a JobController, and what it failed with (if it did)."""

    controller: JobController[Any]


def job_operator(
    client: Client,
    clock: FakeClock,
    plugin: JobPlugin[Any],
    *,
    settings: JobSettings | None = None,
    **options: Any,
) -> Operator:
    """A manager with the JobController of ``plugin``, not started.

    Its probe and metrics servers take no port, its caches give up syncing after 5 s, and its
    waits take no jitter; ``options`` override any :class:`ManagerOptions` field.
    """
    defaults: dict[str, Any] = {
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        "cache_sync_timeout": 5.0,
    }
    manager = Manager(
        client,
        options=ManagerOptions(**{**defaults, **options}),
        clock=clock,
        rng=NoJitter(),
    )
    controller = setup_job_controller(
        manager, plugin, settings=settings, max_concurrent_reconciles=4
    )
    return Operator(manager, controller)


def condition_of(job: KubeObject | None, cond_type: str) -> tuple[str, str] | None:
    """``(status, reason)`` of the condition ``cond_type`` in a job's status, or None."""
    for condition in ((job or {}).get("status") or {}).get("conditions", []):
        if condition["type"] == cond_type:
            return condition["status"], condition.get("reason", "")
    return None


class Env(Protocol):
    """What :func:`advance_idle` needs of a test cluster."""

    @property
    def server(self) -> ApiServer: ...

    @property
    def clock(self) -> FakeClock: ...


async def advance_idle(env: Env, seconds: float, *managers: Manager) -> None:
    """Let ``seconds`` pass while nothing is in flight, and wait for what they set off.

    The server and the managers are idle before the clock moves (no event misses the jump) and
    again after it, so a test can then assert on what did, or did not, happen in that time.
    """
    await wait_idle(env.server, *managers)
    await env.clock.advance(seconds)
    await wait_idle(env.server, *managers)


@dataclass
class StoredObjects:
    """The server, a client, the clock, and readers of the server's storage."""

    server: ApiServer
    client: Client
    clock: FakeClock

    def objects(self, res: Resource, namespace: str = NAMESPACE) -> dict[str, KubeObject]:
        """Objects of ``res`` in ``namespace``, by name (read from storage)."""
        listed = self.server.storage.list(res, namespace=namespace)
        return {objects.name(obj): obj for obj in listed.items}

    def pods(self, namespace: str = NAMESPACE) -> dict[str, KubeObject]:
        """Pods by name."""
        return self.objects(PODS, namespace)

    def events(self, reason: str, namespace: str = NAMESPACE) -> list[KubeObject]:
        """Events of one reason, as stored."""
        return [e for e in self.objects(EVENTS, namespace).values() if e.get("reason") == reason]


@dataclass
class Cluster(StoredObjects):
    """A cluster for SimpleJob (and other test plugins), whose kubelet the test plays."""

    def job(self, name: str, res: Resource = SIMPLEJOBS) -> KubeObject | None:
        """The job as stored, or None."""
        return self.objects(res).get(name)

    def condition(self, name: str, cond_type: str) -> tuple[str, str] | None:
        """``(status, reason)`` of a job condition, or None."""
        return condition_of(self.job(name), cond_type)

    def set_phase(self, name: str, phase: str, *, exit_code: int | None = None) -> None:
        """Play the kubelet: give pod ``name`` a phase."""
        self.server.storage.patch(
            PODS,
            name,
            {"status": pod_status(phase, exit_code=exit_code)},
            patch_type="application/merge-patch+json",
            namespace=NAMESPACE,
            subresource="status",
        )

    def operator(
        self,
        plugin: JobPlugin[Any] | None = None,
        *,
        settings: JobSettings | None = None,
        **options: Any,
    ) -> Operator:
        """A manager with the JobController of ``plugin`` (SimpleJob by default)."""
        return job_operator(
            self.client, self.clock, plugin or SimpleJobPlugin(), settings=settings, **options
        )


@asynccontextmanager
async def cluster(
    tmp_path: Path, *, crds: tuple[Mapping[str, Any], ...] = (), **server: Any
) -> AsyncIterator[Cluster]:
    """A fresh server (SimpleJob CRD loaded) and a client, on one FakeClock."""
    clock = FakeClock()
    manifests = [crd_manifest(SimpleJobPlugin().resource), *crds]
    async with (
        ApiServer(clock=clock, crds=manifests, **server) as api,
        client_of(api, tmp_path) as client,
    ):
        yield Cluster(api, client, clock)
