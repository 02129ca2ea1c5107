"""How pods end on the kubelet: graceful deletion, eviction and ``activeDeadlineSeconds``.

* **Deletion**: once the pod has a ``deletionTimestamp``, every running container gets SIGTERM
  (a ``Killing`` event) and exits after its ``stop_seconds`` with code 143, or is killed with
  137 when the grace period (which a later delete may shorten) ends first. The pod worker then
  writes the final status and removes the pod.
* **Eviction**: the pod ends ``Failed`` with reason ``Evicted``, the kubelet's message and a
  ``DisruptionTarget`` condition; its containers are killed (137) and it stays until deleted.
* **Deadline**: past ``activeDeadlineSeconds`` the pod ends ``Failed``/``DeadlineExceeded``.

Containers of an ended pod that never ran are reported ``terminated`` with
``ContainerStatusUnknown`` (exit code 137), as the kubelet reports them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from etctl.runtime import objects
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.podstatus import Terminal

if TYPE_CHECKING:
    from etctl.testing._kubelet.podworker import PodWorker

__all__ = [
    "advance_stops",
    "check_deadline",
    "check_deletion",
    "check_eviction",
    "eviction_message",
    "finalize_waiting",
    "kill_all",
]

_LOW_MEMORY = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 0. "
_DEADLINE = "Pod was active on the node longer than the specified deadline"


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def check_deletion(worker: PodWorker, mono: float) -> bool:
    """SIGTERM on deletion; the grace period (which may shrink) bounds every stop."""
    stamp = objects.meta(worker.pod).get("deletionTimestamp")
    if not stamp:
        return False
    remaining = (_parse_time(str(stamp)) - worker.env.clock.now()).total_seconds()
    kill_at = mono + max(remaining, 0.0)
    changed = False
    if not worker.stopping:
        worker.stopping = True
        changed = True
        for container in worker.all_containers():
            container.cancel_timers()
            if container.running:
                _sigterm(worker, container, mono, kill_at)
    else:
        for container in worker.all_containers():
            if container.stop_at is not None and container.stop_at > kill_at:
                container.stop_at = kill_at
                container.stop_plan = (137, "Error")
                changed = True
    return advance_stops(worker, mono) or changed


def _sigterm(worker: PodWorker, container: ContainerRuntime, mono: float, kill_at: float) -> None:
    worker.event("Normal", "Killing", f"Stopping container {container.name}", container)
    container.log.write("sim: received SIGTERM", time=worker.env.clock.now())
    container.ready = False
    container.ready_at = None
    graceful = mono + container.behaviour.stop_seconds
    if graceful < kill_at:
        container.stop_at, container.stop_plan = graceful, (143, "Error")
    else:
        container.stop_at, container.stop_plan = kill_at, (137, "Error")


def advance_stops(worker: PodWorker, mono: float) -> bool:
    """Finish the stops (after SIGTERM) that are due; True when a container exited."""
    changed = False
    for container in worker.all_containers():
        if container.running and container.stop_at is not None and container.stop_at <= mono:
            code, reason = container.stop_plan
            container.terminate(code, reason, "", now=worker.now())
            changed = True
    return changed


def kill_all(worker: PodWorker) -> None:
    """Kill every running container (137) and end the waiting ones."""
    now = worker.now()
    for container in worker.all_containers():
        container.cancel_timers()
        if container.running:
            worker.event("Normal", "Killing", f"Stopping container {container.name}", container)
            container.terminate(137, "Error", "", now=now)
    finalize_waiting(worker)


def check_eviction(worker: PodWorker, mono: float) -> bool:
    """Evict the pod if its eviction is due; True when it was."""
    if worker.evict_at is None or worker.evict_at > mono:
        return False
    message = worker.evict_message or eviction_message(worker)
    worker.terminal = Terminal("Failed", "Evicted", message)
    worker.disruption = ("TerminationByKubelet", message)
    worker.event("Warning", "Evicted", message)
    kill_all(worker)
    return True


def eviction_message(worker: PodWorker) -> str:
    """The kubelet's message for a memory-pressure eviction of the pod."""
    parts = [_LOW_MEMORY]
    for container in worker.containers:
        requests = mapping(mapping(container.spec.get("resources")).get("requests"))
        request = str(requests.get("memory") or "0")
        parts.append(
            f"Container {container.name} was using 512Mi, request is {request}, "
            "has larger consumption of memory. "
        )
    return "".join(parts)


def check_deadline(worker: PodWorker, mono: float) -> bool:
    """Fail the pod if it outlived ``activeDeadlineSeconds``; True when it did."""
    deadline = worker.active_deadline()
    if deadline is None or deadline > mono:
        return False
    worker.terminal = Terminal("Failed", "DeadlineExceeded", _DEADLINE)
    worker.event("Normal", "DeadlineExceeded", _DEADLINE)
    kill_all(worker)
    return True


def finalize_waiting(worker: PodWorker) -> None:
    """Containers of an ended pod that never ran report as terminated, as the kubelet does."""
    now = worker.now()
    for container in worker.containers:
        if container.state != "waiting":
            continue
        container.cancel_timers()
        if container.last is not None:
            container.terminated = container.last
            container.state = "terminated"
        else:
            container.terminate(
                137,
                "ContainerStatusUnknown",
                "The container could not be located when the pod was terminated",
                now=now,
            )
