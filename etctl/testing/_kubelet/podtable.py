"""The pods a kubelet runs: one worker per pod UID, with its next timer and a "sync me" mark.

A :class:`PodTable` is the kubelet's bookkeeping between its change listener and its loop. The
listener adds workers and *marks* them; the loop takes the marked and the due ones
(:meth:`PodTable.take`) and records each worker's next deadline after syncing it.

Invariants: a UID has a deadline or a mark only while it has a worker; removing a pod drops all
three, closes its container logs and gives its IP back to the node, so nothing of a forgotten
pod can wake the loop again.
"""

from __future__ import annotations

from collections.abc import Iterator

from etctl.runtime import objects
from etctl.testing._apiserver.store import Store
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.nodes import SimNode
from etctl.testing._kubelet.podworker import PodWorker

__all__ = ["PodTable"]

_PODS = ("", "pods")


class PodTable:
    """The pod workers of one kubelet, by pod UID.

    Args:
        store: the server's store (to find a pod's UID by namespace and name).
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._workers: dict[str, PodWorker] = {}
        self._deadlines: dict[str, float] = {}
        self._dirty: set[str] = set()

    def __iter__(self) -> Iterator[PodWorker]:
        return iter(self._workers.values())

    def __contains__(self, pod_uid: object) -> bool:
        return pod_uid in self._workers

    @property
    def uids(self) -> list[str]:
        """The UIDs of every pod with a worker (a copy: safe to remove pods while iterating)."""
        return list(self._workers)

    @property
    def marked(self) -> bool:
        """True when some pod waits to be synced regardless of its timer."""
        return bool(self._dirty)

    def get(self, pod_uid: str) -> PodWorker | None:
        """The worker of a pod UID."""
        return self._workers.get(pod_uid)

    def add(self, worker: PodWorker) -> None:
        """Start tracking a worker (the caller marks it when it is to be synced)."""
        self._workers[worker.uid] = worker

    def mark(self, pod_uid: str) -> None:
        """Ask the loop to sync a pod on its next step."""
        self._dirty.add(pod_uid)

    def take(self, now: float) -> set[str]:
        """The UIDs to sync now (marked, or with a timer due by ``now``); clears the marks."""
        due = {pod_uid for pod_uid, when in self._deadlines.items() if when <= now}
        batch, self._dirty = self._dirty | due, set()
        return batch

    def set_deadline(self, pod_uid: str, deadline: float | None) -> None:
        """Record when a pod next needs to run (None: only when something changes)."""
        if deadline is None:
            self._deadlines.pop(pod_uid, None)
        else:
            self._deadlines[pod_uid] = deadline

    def next_deadline(self) -> float | None:
        """The earliest timer of any pod."""
        return min(self._deadlines.values(), default=None)

    def remove(self, pod_uid: str) -> PodWorker | None:
        """Forget a pod: its worker, timer and mark; close its logs and release its IP."""
        worker = self._workers.pop(pod_uid, None)
        self._deadlines.pop(pod_uid, None)
        self._dirty.discard(pod_uid)
        if worker is None:
            return None
        for container in worker.all_containers():
            container.log.close()
            if container.previous_log is not None:
                container.previous_log.close()
        worker.node.release_ip(pod_uid)
        return worker

    def on_node(self, node: SimNode) -> list[PodWorker]:
        """The workers of the pods bound to ``node``."""
        return [w for w in self._workers.values() if w.node is node]

    def find(self, namespace: str, name: str) -> PodWorker | None:
        """The worker running a pod, if the pod is on one of this kubelet's nodes."""
        pod = self._store.get(_PODS, f"{namespace}/{name}")
        return self._workers.get(objects.uid(pod)) if pod is not None else None

    def require(self, namespace: str, name: str) -> PodWorker:
        """Like :meth:`find`, for a pod that must be here.

        Raises:
            LookupError: the pod is not on this kubelet.
        """
        worker = self.find(namespace, name)
        if worker is None:
            msg = f"pod {namespace}/{name} is not running on this kubelet"
            raise LookupError(msg)
        return worker

    @staticmethod
    def container(worker: PodWorker, container: str | None) -> ContainerRuntime:
        """A container of a pod by name (its first main container when None).

        Raises:
            LookupError: no such container.
        """
        found = worker.container(container) if container else worker.containers[0]
        if found is None:
            msg = f'container "{container}" not found in pod {worker.key}'
            raise LookupError(msg)
        return found
