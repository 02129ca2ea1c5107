"""What losing a node does to its pods: unready, then evicted by taint when tolerations run out.

When a node stops reporting, the node lifecycle controller marks its pods ``Ready=False`` (with a
``NodeNotReady`` event) and the ``unreachable:NoExecute`` taint starts the taint-eviction clock:
a pod that does not tolerate the taint is deleted at once, one that tolerates it for
``tolerationSeconds`` (300 by default admission) is deleted when they run out, and one that
tolerates it without a limit stays. Deleted pods stay ``Terminating`` until the node's kubelet
comes back to finish them, as on a real cluster without out-of-service handling.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from etctl.errors import ApiError
from etctl.log import get_logger
from etctl.runtime import PODS, Clock, KubeObject, objects
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.storage import Storage
from etctl.testing._kubelet.events import EventRecorder, Source
from etctl.testing._kubelet.nodemanager import UNREACHABLE
from etctl.testing._kubelet.podworker import PodWorker
from etctl.testing._kubelet.scheduler import tolerates

__all__ = ["NodeLoss", "toleration_seconds"]

log = get_logger(__name__)

_PODS = ("", "pods")


class NodeLoss:
    """Pods of lost nodes: marked unready, then deleted when their toleration runs out.

    Args:
        storage: the server's storage.
        clock: the clock of toleration timers.
        recorder: where events go.
    """

    def __init__(self, storage: Storage, clock: Clock, recorder: EventRecorder) -> None:
        self._storage = storage
        self._clock = clock
        self._recorder = recorder
        self._evictions: dict[str, tuple[float, PodWorker]] = {}

    def lost(self, workers: Iterable[PodWorker]) -> None:
        """The node of these workers was lost."""
        now = self._clock.monotonic()
        for worker in workers:
            if worker.removed:
                continue
            self._mark_unready(worker)
            grace = toleration_seconds(worker.spec)
            if grace is not None:
                self._evictions[worker.uid] = (now + grace, worker)

    def forget(self, pod_uid: str) -> None:
        """Stop the eviction timer of a pod (gone, or its node is back)."""
        self._evictions.pop(pod_uid, None)

    def due(self) -> None:
        """Delete the pods whose toleration ran out."""
        now = self._clock.monotonic()
        for pod_uid, (when, worker) in list(self._evictions.items()):
            if when <= now:
                del self._evictions[pod_uid]
                self._evict(worker)

    def next_deadline(self) -> float | None:
        """When the next toleration runs out."""
        return min((when for when, _ in self._evictions.values()), default=None)

    def _mark_unready(self, worker: PodWorker) -> None:
        pod = self._storage.store.get(_PODS, worker.key)
        if pod is None:
            return
        updated: KubeObject = copy.deepcopy(pod)
        now = self._storage.now()
        for condition in (updated.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "Ready" and condition.get("status") != "False":
                condition["status"] = "False"
                condition["lastTransitionTime"] = now
        try:
            worker.pod = self._storage.update(
                PODS, updated, namespace=worker.namespace, subresource="status"
            )
        except ApiError as exc:
            log.debug("pod not marked unready", pod=worker.key, error=str(exc))
        self._recorder.record(
            worker.pod,
            "Warning",
            "NodeNotReady",
            "Node is not ready",
            source=Source("node-controller"),
        )

    def _evict(self, worker: PodWorker) -> None:
        if worker.removed or objects.meta(worker.pod).get("deletionTimestamp"):
            return
        self._recorder.record(
            worker.pod,
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {worker.key}",
            source=Source("taint-eviction-controller"),
        )
        try:
            self._storage.delete(
                PODS, worker.name, namespace=worker.namespace, options=DeleteOptions(uid=worker.uid)
            )
        except ApiError as exc:
            log.debug("taint eviction failed", pod=worker.key, error=str(exc))


def toleration_seconds(spec: Mapping[str, Any]) -> float | None:
    """How long a pod tolerates the unreachable ``NoExecute`` taint (None: forever)."""
    taint = {"key": UNREACHABLE, "effect": "NoExecute"}
    matching = [
        t for t in spec.get("tolerations") or [] if isinstance(t, Mapping) and tolerates([t], taint)
    ]
    if not matching:
        return 0.0
    seconds = [t.get("tolerationSeconds") for t in matching]
    if any(s is None for s in seconds):
        return None
    return float(max(0, min(int(s) for s in seconds if s is not None)))
