"""The cluster under test: one harness for every test that talks to an API server.

:func:`cluster` (and the ``env`` fixture of ``tests/conftest.py``, which wraps it) gives a test
the cluster (a fresh embedded API server, or a namespace of the real cluster named by
``ETCTL_TEST_KUBECONFIG``: :func:`etctl.testing.cluster_target`), a client of it and one
:class:`~etctl.runtime.FakeClock`, with the CRDs of the job kinds the test names installed and,
when asked, the simulated kubelet running pods. The same :class:`Cluster` reads and arranges the
cluster's state, runs the operator of those kinds (:meth:`Cluster.operator`,
:meth:`Cluster.operating`) and moves time only while everything is idle
(:meth:`Cluster.advance_idle`).

The server, the kubelet and the operators share the clock; HTTP, watches and execs are real, so a
test waits for a *state* (:func:`etctl.testing.eventually`), in bounded real time, and moves the
clock only where time must pass (deadlines, TTLs, backoffs), each time once nothing is in flight.
On a real cluster the server keeps its own time; tests that need the embedded server's hooks
(faults, request log, the kubelet) are marked ``etctl_hooks`` and skipped there.

What is particular to one kind (its manifests, how its launcher's files read) stays beside that
kind's tests as plain functions of a :class:`Cluster`.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from etctl.common import (
    SCALEINS,
    SCALEOUTS,
    JobController,
    JobPlugin,
    JobSettings,
    crd_manifest,
    custom_resources,
    setup_job_controller,
)
from etctl.runtime import (
    CONFIGMAPS,
    EVENTS,
    NAMESPACES,
    PODS,
    SERVICES,
    CacheOptions,
    Client,
    ClientOptions,
    FakeClock,
    KubeObject,
    Manager,
    ManagerOptions,
    ObjectView,
    Resource,
    RetryPolicy,
    objects,
)
from etctl.testing import ApiServer, ClusterTarget, KubeletConfig, cluster_target, eventually
from etctl.testing import wait_idle as _wait_idle
from etctl.testing._realcluster import RealCluster
from etctl.testing._target import StorageVerbs
from tests.runtime._realtime import ManagerRun, NoJitter, run_manager
from tests.runtime.scripted import InstantClock

__all__ = [
    "NEVER",
    "NOT_PRESET",
    "PRESET_CONFIGMAP",
    "Cluster",
    "Operator",
    "cluster",
    "condition_of",
    "sandboxed_nodes",
]

NEVER = 1e9
"""A bookmark interval, idle timeout or lease no test reaches."""

PRESET_CONFIGMAP = "kube-root-ca.crt"
"""The ConfigMap a cluster puts in every namespace."""

NOT_PRESET = f"metadata.name!={PRESET_CONFIGMAP}"
"""A field selector that leaves out the ConfigMap a cluster puts in every namespace."""

_PRESET = frozenset({PRESET_CONFIGMAP})


def condition_of(job: ObjectView | None, cond_type: str) -> tuple[str, str] | None:
    """``(status, reason)`` of the condition ``cond_type`` in a job's status, or None."""
    for condition in ((job or {}).get("status") or {}).get("conditions", []):
        if condition["type"] == cond_type:
            return condition["status"], condition.get("reason", "")
    return None


def sandboxed_nodes(tmp_path: Path, nodes: int = 2, *, gpus: int = 8) -> KubeletConfig:
    """A kubelet of ``nodes`` alike nodes whose pods run in sandboxes under ``tmp_path``.

    Containers really run their init steps, execs and shell scripts there (a launcher's hostfile
    copy, a scaler's script, ``discover_hosts.sh``).
    """
    return KubeletConfig.uniform(nodes, gpus=gpus, root=tmp_path / "sandboxes")


@dataclass
class Operator(ManagerRun):
    """One manager running the JobControllers of some kinds, and what it failed with (if it did)."""

    controllers: list[JobController[Any]] = field(default_factory=list)

    @property
    def controller(self) -> JobController[Any]:
        """The JobController of the first kind."""
        return self.controllers[0]


@dataclass
class Cluster:
    """The cluster under test, a client of it, the test's clock and the job kinds it serves.

    Reads go to the cluster's storage synchronously (the embedded server's, or requests to the
    real cluster) and return copies a test may change; objects the cluster puts in every
    namespace are left out.
    """

    target: ClusterTarget
    client: Client
    clock: FakeClock
    kinds: tuple[JobPlugin[Any], ...] = ()
    others: list[str] = field(default_factory=list)
    """The other namespaces the test created (deleted with it on a real cluster)."""

    # -- where

    @property
    def server(self) -> ApiServer:
        """The embedded server's hooks (tests using them are marked etctl_hooks)."""
        return self.target.hooks

    @property
    def ns(self) -> str:
        """The test's namespace."""
        return self.target.namespace

    @property
    def embedded(self) -> bool:
        """True on the embedded server."""
        return self.target.embedded

    @property
    def storage(self) -> StorageVerbs:
        """Synchronous verbs on the cluster."""
        return self.target.storage

    @property
    def idle(self) -> ApiServer | RealCluster:
        """What :func:`etctl.testing.wait_idle` compares the operators with."""
        return self.target.idle

    @property
    def kubelet(self) -> Any:
        """The embedded server's simulated kubelet."""
        kubelet = self.server.kubelet
        assert kubelet is not None, "the cluster runs no kubelet: cluster(..., kubelet=...)"
        return kubelet

    @property
    def resource(self) -> Resource:
        """The resource of the first job kind (what job readers read by default)."""
        assert self.kinds, "the cluster serves no job kind: cluster(tmp_path, SomePlugin())"
        return self.kinds[0].resource.resource()

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

    # -- reading the cluster

    def objects(self, res: Resource, namespace: str = "") -> dict[str, KubeObject]:
        """Objects of ``res`` in ``namespace`` (the test's by default), by name, as copies."""
        listed = self.storage.list(res, namespace=namespace or self.ns)
        return {
            objects.name(obj): copy.deepcopy(dict(obj))
            for obj in listed.items
            if objects.name(obj) not in _PRESET
        }

    def get(self, res: Resource, name: str, namespace: str = "") -> KubeObject | None:
        """One object of ``res`` in the test's namespace (a copy), or None."""
        return self.objects(res, namespace).get(name)

    def names(self, res: Resource, namespace: str = "") -> list[str]:
        """The names of the objects of ``res``, sorted."""
        return sorted(self.objects(res, namespace))

    def pods(self, namespace: str = "") -> dict[str, KubeObject]:
        """Pods by name."""
        return self.objects(PODS, namespace)

    def pod(self, name: str) -> KubeObject:
        """One pod, which must exist."""
        found = self.get(PODS, name)
        assert found is not None, f"no pod {name}"
        return found

    def live_pods(self, namespace: str = "") -> dict[str, KubeObject]:
        """Pods not being deleted, by name."""
        return {n: p for n, p in self.pods(namespace).items() if not objects.is_terminating(p)}

    def phases(self, namespace: str = "") -> dict[str, str]:
        """Pod phases by pod name."""
        return {
            name: str((pod.get("status") or {}).get("phase") or "")
            for name, pod in self.pods(namespace).items()
        }

    def pods_running(self, *names: str) -> bool:
        """True when every pod named is in phase Running."""
        phases = self.phases()
        return all(phases.get(name) == "Running" for name in names)

    def terminating(self, name: str) -> bool:
        """True when pod ``name`` exists and is being deleted."""
        found = self.get(PODS, name)
        return found is not None and objects.is_terminating(found)

    def services(self, namespace: str = "") -> dict[str, KubeObject]:
        """Services by name."""
        return self.objects(SERVICES, namespace)

    def events(self, reason: str, namespace: str = "") -> list[KubeObject]:
        """Events of one reason, as stored."""
        return [e for e in self.objects(EVENTS, namespace).values() if e.get("reason") == reason]

    # -- reading jobs and scalers

    def job(self, name: str, res: Resource | None = None, namespace: str = "") -> KubeObject | None:
        """A job as stored (of the first kind by default), or None."""
        return self.get(res or self.resource, name, namespace)

    def stored(self, name: str, res: Resource | None = None) -> KubeObject:
        """A job as stored (of the first kind by default), which must exist."""
        found = self.job(name, res)
        assert found is not None, f"no {(res or self.resource).kind} {name}"
        return found

    def status(self, name: str, res: Resource | None = None, namespace: str = "") -> dict[str, Any]:
        """A job's status (empty when it has none, or the job is gone)."""
        return dict((self.job(name, res, namespace) or {}).get("status") or {})

    def condition(
        self, name: str, cond_type: str, res: Resource | None = None, namespace: str = ""
    ) -> tuple[str, str] | None:
        """``(status, reason)`` of a job condition, or None."""
        return condition_of(self.job(name, res, namespace), cond_type)

    def state(self, name: str, res: Resource | None = None, namespace: str = "") -> str:
        """The type of a job's latest condition (what ``kubectl get`` shows as its state)."""
        conditions = self.status(name, res, namespace).get("conditions") or [{}]
        return str(conditions[-1].get("type", ""))

    def phase(self, name: str, res: Resource | None = None) -> str:
        """A job's ``status.phase`` (the kinds that keep one: TrainingJob, MPIJob)."""
        return str(self.status(name, res).get("phase") or "")

    def scalers(self, res: Resource) -> dict[str, KubeObject]:
        """The scalers (ScaleIn or ScaleOut) of the test's namespace, by name."""
        return self.objects(res)

    def scaler(self, res: Resource, name: str) -> dict[str, Any]:
        """A scaler's status, which must exist."""
        found = self.get(res, name)
        assert found is not None, f"no {res.kind} {name}"
        return dict(found.get("status") or {})

    def scaler_done(self, res: Resource, name: str) -> bool:
        """True once a scaler reached its ``Done`` step."""
        found = self.get(res, name)
        return found is not None and (found.get("status") or {}).get("step") == "Done"

    # -- arranging

    async def submit(self, body: KubeObject, res: Resource | None = None) -> KubeObject:
        """Create an object through the client (a job of the first kind by default).

        The test's namespace is used unless the body names one.
        """
        metadata = {"namespace": self.ns, **body.get("metadata", {})}
        return await self.client.create(res or self.resource, {**body, "metadata": metadata})

    def store(self, res: Resource, document: Mapping[str, Any]) -> KubeObject:
        """Create an object in the test's namespace through the storage (synchronously)."""
        body = copy.deepcopy(dict(document))
        body.setdefault("metadata", {})["namespace"] = self.ns
        return dict(self.storage.create(res, body, namespace=self.ns))

    def apply(self, document: Mapping[str, Any]) -> KubeObject:
        """Create a manifest of a kind the cluster serves at its own version, as kubectl does."""
        kind = document["kind"]
        version = str(document["apiVersion"]).rpartition("/")[2]
        for plugin in self.kinds:
            for custom in custom_resources(plugin):
                if custom.kind == kind and version in {v.name for v in custom.versions}:
                    return self.store(custom.resource(version), document)
        scalers = {"ScaleIn": SCALEINS, "ScaleOut": SCALEOUTS}
        assert kind in scalers, f"the cluster serves no {kind} {version}"
        return self.store(scalers[kind], document)

    def set_phase(self, name: str, phase: str, *, exit_code: int | None = None) -> None:
        """Play the kubelet: give pod ``name`` a phase (its one ``main`` container's status)."""
        state: dict[str, Any] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
        if exit_code is not None:
            state = {"terminated": {"exitCode": exit_code, "reason": "Error"}}
        container = {
            "name": "main",
            "image": "busybox",
            "imageID": "",
            "ready": phase == "Running",
            "restartCount": 0,
            "state": state,
        }
        self.storage.patch(
            PODS,
            name,
            {"status": {"phase": phase, "containerStatuses": [container]}},
            patch_type="application/merge-patch+json",
            namespace=self.ns,
            subresource="status",
        )

    def exit(self, pod: str, code: int, namespace: str = "", **details: Any) -> None:
        """Make a pod's containers exit with ``code`` now (the simulated kubelet)."""
        self.kubelet.exit(namespace or self.ns, pod, code, **details)

    async def scale(self, name: str, replicas: int, res: Resource | None = None) -> None:
        """``kubectl scale <kind> <name> --replicas=<replicas>`` (the /scale subresource)."""
        body = {"spec": {"replicas": replicas}}
        await self.client.patch(
            res or self.resource, name, body, namespace=self.ns, subresource="scale"
        )

    async def run(self, pod: str, *command: str) -> str:
        """What ``command`` prints in ``pod``'s first container (through ``pods/exec``)."""
        result = await self.client.exec(self.ns, pod, list(command), timeout=10)
        assert result.exit_code == 0, result.stderr
        return result.stdout.decode()

    def namespace(self, name: str) -> str:
        """Create another namespace; returns its name (unique on a real cluster)."""
        if self.target.cluster is None:
            self.storage.create(NAMESPACES, {"metadata": {"name": name}})
        else:
            name = self.target.cluster.create_namespace(name)
        self.others.append(name)
        return name

    # -- ConfigMaps, for the runtime's informer and cache tests

    def configmap(self, name: str, namespace: str = "", **data: str) -> dict[str, Any]:
        """Create a ConfigMap (in the test's namespace by default), synchronously."""
        namespace = namespace or self.ns
        body = {"metadata": {"name": name, "namespace": namespace}, "data": data}
        return self.storage.create(CONFIGMAPS, body, namespace=namespace)

    def update(self, name: str, namespace: str = "", **data: str) -> dict[str, Any]:
        """Replace a ConfigMap's data."""
        namespace = namespace or self.ns
        current = self.storage.get(CONFIGMAPS, name, namespace=namespace)
        return self.storage.update(CONFIGMAPS, {**current, "data": data}, namespace=namespace)

    def delete(self, name: str, namespace: str = "") -> None:
        """Delete a ConfigMap."""
        self.storage.delete(CONFIGMAPS, name, namespace=namespace or self.ns)

    def keys(self, found: Iterable[ObjectView]) -> list[str]:
        """Sorted keys of the objects in the test's namespaces, presets left out."""
        mine = {self.ns, *self.others}
        return sorted(
            objects.key_of(obj)
            for obj in found
            if objects.namespace(obj) in mine
            and not (obj.get("kind") == "ConfigMap" and objects.name(obj) in _PRESET)
        )

    def versions(self, res: Resource = CONFIGMAPS, namespace: str | None = None) -> dict[str, str]:
        """The objects of ``res`` in the test's namespace: key -> resourceVersion."""
        scope = self.ns if namespace is None else namespace
        selector = NOT_PRESET if res == CONFIGMAPS and self._presets() else None
        listed = self.storage.list(res, namespace=scope, field_selector=selector)
        return {objects.key_of(obj): objects.resource_version(obj) for obj in listed.items}

    # -- the server's hooks

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

    def cut_watches(self, res: Resource = CONFIGMAPS) -> None:
        """End every open watch of ``res`` (as a dropped connection would)."""
        info, _ = self.server.storage.target(res)
        self.server.store.close_sinks(info.key, reason="cut by the test")

    # -- time

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
        """True when something sleeps on the clock for less than 100 s: a backoff."""
        return self.sleeping_under(100)

    async def through_backoff(self) -> None:
        """Wait until a backoff sleeps on the clock, then move the clock to its end."""
        await eventually(self.backing_off, what="a backoff on the clock")
        await self.clock.advance(self.backoff_left())

    async def wait_idle(self, *managers: Manager, timeout: float = 10.0) -> None:
        """Wait until the cluster and ``managers`` have nothing left to do."""
        await _wait_idle(self.idle, *managers, timeout=timeout)

    async def advance_idle(self, seconds: float, *managers: Manager) -> None:
        """Let ``seconds`` pass while nothing is in flight, and wait for what they set off."""
        await self.wait_idle(*managers)
        await self.clock.advance(seconds)
        await self.wait_idle(*managers)

    # -- the operator

    def operator(
        self, *plugins: JobPlugin[Any], settings: JobSettings | None = None, **options: Any
    ) -> Operator:
        """A manager running the JobControllers of ``plugins`` (the cluster's kinds by default).

        Not started: run it with :func:`tests.runtime._realtime.running`, or use
        :meth:`operating`. Its probe and metrics servers take no port, its caches give up syncing
        after 5 s, its waits take no jitter and it reconciles four jobs of a kind at once; on a
        real cluster its cache covers the test's namespaces only. ``options`` override any
        :class:`ManagerOptions` field.
        """
        defaults: dict[str, Any] = {
            "metrics_bind_address": "0",
            "health_probe_bind_address": "0",
            "cache_sync_timeout": 5.0,
        }
        if not self.embedded:
            defaults["cache"] = CacheOptions(namespaces=[self.ns, *self.others])
        manager = Manager(
            self.client,
            options=ManagerOptions(**{**defaults, **options}),
            clock=self.clock,
            rng=NoJitter(),
        )
        controllers = [
            setup_job_controller(manager, plugin, settings=settings, max_concurrent_reconciles=4)
            for plugin in plugins or self.kinds
        ]
        return Operator(manager, controllers)

    @asynccontextmanager
    async def operating(
        self, *plugins: JobPlugin[Any], settings: JobSettings | None = None, **options: Any
    ) -> AsyncIterator[Manager]:
        """The operator of ``plugins`` (see :meth:`operator`) running until the block ends.

        Its failure is raised out of the block.
        """
        op = self.operator(*plugins, settings=settings, **options)
        async with run_manager(op.manager) as manager:
            yield manager


@asynccontextmanager
async def cluster(
    tmp_path: Path,
    *kinds: JobPlugin[Any],
    namespace: str = "default",
    crds: Sequence[Any] = (),
    kubelet: KubeletConfig | None = None,
    client_options: Mapping[str, Any] | None = None,
    raw: bool = False,
    **server: Any,
) -> AsyncIterator[Cluster]:
    """The cluster under test, serving the CRDs of ``kinds`` (and ``crds``), and a client of it.

    Args:
        tmp_path: the test's directory (kubeconfigs, the kubelet's sandboxes).
        kinds: the job kinds the cluster serves and :meth:`Cluster.operator` runs.
        namespace: the test's namespace on the embedded server (a real cluster's is unique).
        crds: more CRDs to serve (manifests, files or directories).
        kubelet: run the simulated kubelet (:func:`sandboxed_nodes`, ``KubeletConfig()``);
            without one, the test plays it (:meth:`Cluster.set_phase`).
        client_options: :class:`ClientOptions` fields of the test's client; by default 30 s
            bounds and retries whose sleeps return at once.
        raw: for the runtime's own tests (informers, caches, the client under faults): the
            client makes one attempt per request and waits on the test's clock (10 s bounds, no
            idle timeout), and the server sends no bookmarks unless ``bookmark_interval`` says.
        server: more :class:`~etctl.testing.ApiServer` options (``history``, ``limits``...);
            the server always runs on the test's clock. A real cluster keeps its own.
    """
    clock = FakeClock()
    if raw:
        server.setdefault("bookmark_interval", NEVER)
    manifests = [crd_manifest(custom) for plugin in kinds for custom in custom_resources(plugin)]
    unique = {m["metadata"]["name"]: m for m in manifests}
    if kubelet is not None:
        server["kubelet"] = kubelet
    async with cluster_target(
        tmp_path,
        crds=[*unique.values(), *crds],
        namespace=namespace,
        clock=clock,
        **server,
    ) as target:
        defaults = ClientOptions(request_timeout=30, watch_idle_timeout=30, clock=InstantClock())
        if raw:
            defaults = ClientOptions(
                retry=RetryPolicy(max_attempts=1),
                clock=clock,
                request_timeout=10,
                watch_idle_timeout=NEVER,
            )
        options = dataclasses.replace(defaults, **dict(client_options or {}))
        async with Client.connect(target.kubeconfig, options=options) as client:
            env = Cluster(target, client, clock, kinds=tuple(kinds))
            try:
                yield env
            finally:
                if target.cluster is not None:
                    for other in env.others:
                        await target.cluster.adelete_namespace(other)
