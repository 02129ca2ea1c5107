"""The whole operator under test: the cluster, a Manager, informers and a JobController.

The cluster is a fresh embedded API server, or a namespace of the real cluster named by
``ETCTL_TEST_KUBECONFIG`` (:func:`etctl.testing.cluster_target`). The operator runs on one
:class:`FakeClock` (so does the embedded server); HTTP and watches are real, so tests wait
(bounded, in real time) for a *condition* on the cluster's state, read synchronously through the
target's storage verbs. The test plays the kubelet by writing pod statuses (the pods name a
scheduler no cluster runs, so nothing else does), unless a kubelet runs them.

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
    CacheOptions,
    Client,
    FakeClock,
    KubeObject,
    Manager,
    ManagerOptions,
    Resource,
    objects,
)
from etctl.testing import (
    ApiServer,
    RealCluster,
    StorageVerbs,
    cluster_target,
    wait_idle,
)
from tests.common._harness import PRESET, pod_status
from tests.common.simplejob import SIMPLEJOBS, SimpleJobPlugin
from tests.runtime._cluster import TargetEnv
from tests.runtime._realtime import ManagerRun, NoJitter, client_of, eventually, running

__all__ = [
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
    def idle(self) -> ApiServer | RealCluster: ...

    @property
    def clock(self) -> FakeClock: ...


async def advance_idle(env: Env, seconds: float, *managers: Manager) -> None:
    """Let ``seconds`` pass while nothing is in flight, and wait for what they set off.

    The cluster and the managers are idle before the clock moves (no event misses the jump) and
    again after it, so a test can then assert on what did, or did not, happen in that time.
    """
    await wait_idle(env.idle, *managers)
    await env.clock.advance(seconds)
    await wait_idle(env.idle, *managers)


@dataclass
class StoredObjects(TargetEnv):
    """The cluster under test, a client, the clock, and readers of the cluster's state."""

    @property
    def storage(self) -> StorageVerbs:
        """Synchronous verbs on the cluster."""
        return self.target.storage

    @property
    def idle(self) -> ApiServer | RealCluster:
        """What :func:`etctl.testing.wait_idle` compares the operators with."""
        return self.target.idle

    def objects(self, res: Resource, namespace: str = "") -> dict[str, KubeObject]:
        """Objects of ``res`` in ``namespace`` (the test's by default), by name.

        Objects a real cluster puts in every namespace are left out.
        """
        listed = self.storage.list(res, namespace=namespace or self.ns)
        return {objects.name(obj): obj for obj in listed.items if objects.name(obj) not in PRESET}

    def pods(self, namespace: str = "") -> dict[str, KubeObject]:
        """Pods by name."""
        return self.objects(PODS, namespace)

    def events(self, reason: str, namespace: str = "") -> list[KubeObject]:
        """Events of one reason, as stored."""
        return [e for e in self.objects(EVENTS, namespace).values() if e.get("reason") == reason]

    async def submit(self, body: KubeObject, res: Resource = SIMPLEJOBS) -> KubeObject:
        """Create a job (or any object of ``res``) in the test's namespace."""
        metadata = {**body.get("metadata", {}), "namespace": self.ns}
        return await self.client.create(res, {**body, "metadata": metadata})


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
        self.storage.patch(
            PODS,
            name,
            {"status": pod_status(phase, exit_code=exit_code)},
            patch_type="application/merge-patch+json",
            namespace=self.ns,
            subresource="status",
        )

    def operator(
        self,
        plugin: JobPlugin[Any] | None = None,
        *,
        settings: JobSettings | None = None,
        **options: Any,
    ) -> Operator:
        """A manager with the JobController of ``plugin`` (SimpleJob by default).

        Its cache covers the test's namespace.
        """
        options.setdefault("cache", CacheOptions(namespaces=[self.ns]))
        return job_operator(
            self.client, self.clock, plugin or SimpleJobPlugin(), settings=settings, **options
        )


@asynccontextmanager
async def cluster(
    tmp_path: Path, *, crds: tuple[Mapping[str, Any], ...] = (), **server: Any
) -> AsyncIterator[Cluster]:
    """The cluster under test (SimpleJob CRD loaded) and a client, on one FakeClock.

    ``server`` configures the embedded server (a real cluster keeps its own).
    """
    clock = FakeClock()
    manifests = [crd_manifest(SimpleJobPlugin().resource), *crds]
    async with (
        cluster_target(tmp_path, clock=clock, crds=manifests, **server) as target,
        client_of(target) as client,
    ):
        yield Cluster(target, client, clock)
