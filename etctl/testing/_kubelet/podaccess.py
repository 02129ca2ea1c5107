"""Reaching into a running pod from a test: exec, files and container logs.

:class:`PodAccess` is the part of :class:`~etctl.testing.Kubelet` that acts on one
container of one pod without driving the kubelet's loop: run a command in it (the same path as
``pods/exec``), read a file as the container sees it, read or append to its log. Every method
names the pod by namespace and name and the container by name (the first main container when
omitted), and raises :class:`LookupError` with a message saying what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from etctl.runtime import Clock
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.logs import ContainerLog
from etctl.testing._kubelet.podtable import PodTable
from etctl.testing._kubelet.podworker import PodWorker
from etctl.testing._kubelet.sandbox import PodSandbox
from etctl.testing._kubelet.sandboxes import Sandboxes
from etctl.testing._kubelet.shell import ShellResult

__all__ = ["PodAccess"]


class PodAccess:
    """Exec, files and logs of the pods a kubelet runs (mixed into the kubelet)."""

    clock: Clock
    sandboxes: Sandboxes | None
    _pods: PodTable

    def worker(self, namespace: str, name: str) -> PodWorker | None:
        """The worker running a pod, if the pod is on one of this kubelet's nodes."""
        return self._pods.find(namespace, name)

    def _runtime(self, namespace: str, name: str, container: str | None) -> ContainerRuntime:
        return self._pods.container(self._pods.require(namespace, name), container)

    def exec(
        self,
        namespace: str,
        name: str,
        command: Sequence[str],
        *,
        container: str | None = None,
        stdin: bytes = b"",
    ) -> ShellResult:
        """Run a command in a running container (in process; ``pods/exec`` does the same).

        Raises:
            LookupError: the pod is not on this kubelet, or the container is not running.
        """
        worker = self._pods.require(namespace, name)
        runtime = self._pods.container(worker, container)
        if not runtime.running or self.sandboxes is None:
            msg = f'container not found ("{runtime.name}")'
            raise LookupError(msg)
        return self.sandboxes.execute(worker, runtime, command, stdin)

    def sandbox(self, namespace: str, name: str) -> PodSandbox:
        """A pod's sandbox (its volumes and container roots on disk).

        Raises:
            LookupError: the pod is not on this kubelet or has no sandbox yet.
        """
        worker = self._pods.require(namespace, name)
        found = self.sandboxes.get(worker.uid) if self.sandboxes is not None else None
        if found is None:
            msg = f"pod {namespace}/{name} has no sandbox yet"
            raise LookupError(msg)
        return found

    def read_file(
        self, namespace: str, name: str, path: str, *, container: str | None = None
    ) -> bytes:
        """A file as a container of the pod sees it (``/etc/edl/hostfile``).

        Raises:
            LookupError: the pod or container is unknown.
            etctl.testing._kubelet.shell.FsError: the file cannot be read.
        """
        runtime = self._runtime(namespace, name, container)
        sandbox = self.sandbox(namespace, name)
        return sandbox.container_fs(runtime.spec).read(path)

    def log_of(
        self, namespace: str, name: str, *, container: str | None = None, previous: bool = False
    ) -> ContainerLog:
        """The log of a container's current (or previous) instance.

        Raises:
            LookupError: the pod or container is unknown, or there is no previous instance.
        """
        runtime = self._runtime(namespace, name, container)
        if not previous:
            return runtime.log
        if runtime.previous_log is None:
            msg = f'previous terminated container "{runtime.name}" in pod "{name}" not found'
            raise LookupError(msg)
        return runtime.previous_log

    def logs(
        self, namespace: str, name: str, *, container: str | None = None, previous: bool = False
    ) -> list[str]:
        """The lines a container wrote (its current or previous instance)."""
        found = self.log_of(namespace, name, container=container, previous=previous)
        return [line.text for line in found.lines()]

    def append_log(
        self,
        namespace: str,
        name: str,
        text: str,
        *,
        container: str | None = None,
        stream: str = "stdout",
    ) -> None:
        """Write lines to a container's log (as if the process printed them)."""
        found = self.log_of(namespace, name, container=container)
        found.write(text, time=self.clock.now(), stream=stream)
