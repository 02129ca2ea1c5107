"""The kubelet's container runtime side: pod sandboxes, their volumes, shells and environments.

:class:`Sandboxes` owns one :class:`~etctl.testing._kubelet.sandbox.PodSandbox` per pod the
kubelet runs, under a root directory (a fresh temporary one unless configured). It answers the
pod workers' questions (can the volumes be mounted? can this container's environment be
built? what does this init container's shell command do?) and keeps volumes in sync:
a ConfigMap or Secret change reaches the pods that mount it after ``volume_sync_delay``
seconds of the clock (at once, within the write that changed it, when the delay is 0), and a
pod's label or annotation change reaches its downward-API volumes at once.

Shells run as the container would see things: its filesystem (:mod:`~etctl.testing._kubelet.vfs`),
its environment (:mod:`~etctl.testing._kubelet.containerenv`), its ``workingDir``, the pod's
hostname and the cluster's DNS (:mod:`~etctl.testing._kubelet.dns`). Only shell commands
(``sh``/``bash``/``ash``/``dash``) of init containers are run when the container starts; main
containers are never executed (their behaviour comes from annotations and policies), but
``exec`` runs commands in them.
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from etctl.runtime import Clock, ObjectView
from etctl.testing._apiserver.store import Store
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.containerenv import ConfigError, container_env, references
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.dns import ClusterDNS
from etctl.testing._kubelet.podworker import InitResult, PodWorker
from etctl.testing._kubelet.sandbox import PodSandbox
from etctl.testing._kubelet.shell import Shell, ShellResult
from etctl.testing._kubelet.volumes import Lookup, sources

__all__ = ["SHELLS", "Sandboxes"]

SHELLS = frozenset({"sh", "bash", "ash", "dash"})
_KINDS = {"configmap": ("", "configmaps"), "secret": ("", "secrets")}


class Sandboxes:
    """Pod sandboxes and what runs in them.

    Args:
        store: the server's object store (ConfigMaps and Secrets are read from it).
        clock: the clock of file times and sync delays.
        root: where sandboxes go (a temporary directory, removed on :meth:`close`, when None).
        sync_delay: seconds before ConfigMap/Secret updates reach volumes.
    """

    def __init__(
        self, store: Store, clock: Clock, *, root: Path | None = None, sync_delay: float = 0.0
    ) -> None:
        self._store = store
        self._dns = ClusterDNS(store)
        self._clock = clock
        self._owned = root is None
        self.root = Path(tempfile.mkdtemp(prefix="etctl-kubelet-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self.sync_delay = sync_delay
        self._pods: dict[str, PodSandbox] = {}
        self._pending: dict[tuple[str, str, str], float] = {}

    def lookup(self, namespace: str) -> Lookup:
        """A ConfigMap/Secret reader for one namespace."""

        def find(kind: str, name: str) -> ObjectView | None:
            return self._store.get(_KINDS[kind], f"{namespace}/{name}")

        return find

    # -- sandboxes ------------------------------------------------------------------------------

    def get(self, pod_uid: str) -> PodSandbox | None:
        """The sandbox of a pod, if it has one."""
        return self._pods.get(pod_uid)

    def for_worker(self, worker: PodWorker) -> PodSandbox:
        """The worker's sandbox (created on first use)."""
        sandbox = self._pods.get(worker.uid)
        if sandbox is None:
            sandbox = PodSandbox(self.root, worker.pod, now=self._clock.now)
            self._pods[worker.uid] = sandbox
        return sandbox

    def volumes_ready(self, worker: PodWorker) -> bool:
        """Materialise the worker's volumes; False (with FailedMount events) if some cannot be."""
        sandbox = self.for_worker(worker)
        sandbox.pod = worker.pod
        problems = sandbox.setup(self.lookup(worker.namespace))
        for volume, message in sorted(problems.items()):
            worker.event(
                "Warning",
                "FailedMount",
                f'MountVolume.SetUp failed for volume "{volume}" : {message}',
            )
        return not problems

    def remove(self, pod_uid: str) -> None:
        """Delete a pod's sandbox from disk."""
        sandbox = self._pods.pop(pod_uid, None)
        if sandbox is not None:
            sandbox.cleanup()

    def close(self) -> None:
        """Remove every sandbox (and the root when it was a temporary directory)."""
        for pod_uid in list(self._pods):
            self.remove(pod_uid)
        self._pending.clear()
        if self._owned:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- keeping volumes in sync ----------------------------------------------------------------

    def source_changed(self, kind: str, namespace: str, name: str) -> None:
        """A ConfigMap or Secret changed: refresh its volumes now or after the sync delay."""
        if self.sync_delay <= 0:
            self._refresh(kind, namespace, name)
        else:
            due = self._clock.monotonic() + self.sync_delay
            self._pending.setdefault((kind, namespace, name), due)

    def pod_changed(self, pod: ObjectView) -> None:
        """A pod's metadata changed: refresh its downward-API volumes."""
        metadata = mapping(pod.get("metadata"))
        sandbox = self._pods.get(str(metadata.get("uid") or ""))
        if sandbox is not None:
            sandbox.refresh(self.lookup(sandbox.namespace), pod)

    def due(self) -> None:
        """Apply the delayed refreshes whose time has come."""
        now = self._clock.monotonic()
        for key, when in list(self._pending.items()):
            if when <= now:
                del self._pending[key]
                self._refresh(*key)

    def next_deadline(self) -> float | None:
        """When the next delayed refresh is due."""
        return min(self._pending.values()) if self._pending else None

    def _refresh(self, kind: str, namespace: str, name: str) -> None:
        for sandbox in self._pods.values():
            if sandbox.namespace == namespace and (kind, name) in sandbox.references():
                sandbox.refresh(self.lookup(namespace), kind=kind, name=name)

    # -- running things -------------------------------------------------------------------------

    def container_env(self, worker: PodWorker, container: ContainerRuntime) -> dict[str, str]:
        """The environment ``container`` of the worker's pod starts with.

        Raises:
            ConfigError: a required ConfigMap, Secret or key is missing
                (``CreateContainerConfigError``).
        """
        return container_env(worker.pod, container.spec, self.lookup(worker.namespace))

    def uses(self, worker: PodWorker, kind: str, name: str) -> bool:
        """True when the worker's volumes or environments read ``(kind, name)``."""
        if any((kind, name) in references(c.spec) for c in worker.all_containers()):
            return True
        volumes = mapping(worker.pod.get("spec")).get("volumes") or []
        return any((kind, name) in sources(mapping(v)) for v in volumes)

    def shell(
        self,
        worker: PodWorker,
        container: ContainerRuntime,
        *,
        env: Mapping[str, str] | None = None,
    ) -> Shell:
        """A shell running as ``container`` of the worker's pod, with ``env`` when given."""
        sandbox = self.for_worker(worker)
        sandbox.pod = worker.pod
        if env is None:
            try:
                env = self.container_env(worker, container)
            except ConfigError:
                env = {}
        spec = mapping(worker.pod.get("spec"))
        namespace = worker.namespace

        def resolve(name: str) -> tuple[str, tuple[str, ...]] | None:
            answer = self._dns.resolve(name, namespace)
            return (answer.name, answer.addresses) if answer is not None else None

        return Shell(
            sandbox.container_fs(container.spec),
            env=env,
            cwd=str(container.spec.get("workingDir") or "/"),
            hostname=str(spec.get("hostname") or worker.name),
            now=self._clock.now,
            resolver=resolve,
        )

    def run_init(
        self, worker: PodWorker, container: ContainerRuntime, env: Mapping[str, str]
    ) -> InitResult | None:
        """Run an init container's shell command in the sandbox (None: not a shell command).

        The command runs with ``env``, the environment the container was started with.
        """
        argv = command_line(container.spec)
        if not argv or posixpath.basename(argv[0]) not in SHELLS:
            return None
        result = self.shell(worker, container, env=env).run_argv(argv)
        return InitResult(result.exit_code, result.output, result.errors)

    def execute(
        self, worker: PodWorker, container: ContainerRuntime, command: Sequence[str], stdin: bytes
    ) -> ShellResult:
        """Run ``command`` in a container, as ``exec`` does."""
        return self.shell(worker, container).run_argv(list(command), stdin=stdin)


def command_line(spec: Mapping[str, Any]) -> list[str]:
    """A container's ``command`` followed by its ``args``."""
    return [str(a) for a in (spec.get("command") or [])] + [str(a) for a in spec.get("args") or []]
