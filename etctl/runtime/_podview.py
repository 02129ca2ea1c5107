"""The facts every controller reads from a pod, defined once.

A pod's phase, whether it is on its way out, how its containers exited and whether it is ready are
read by the job controller, the scaler, the restart policy and every plugin. Each reads them here,
so two controllers can never judge one pod differently. All functions take the pod as the API
server sent it (a plain mapping), tolerate missing or malformed fields (a pod being created has no
status yet) and never raise.

The ``podview`` namespace of :mod:`etctl.runtime`: ``podview.phase(pod)``, ``podview.ready(pod)``...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from etctl.runtime._objects import ObjectView, is_terminating

__all__ = [
    "condition",
    "container_running",
    "exit_code",
    "failure",
    "phase",
    "ready",
    "reason",
    "restarts",
    "running_and_ready",
]


def _status(pod: ObjectView) -> Mapping[str, Any]:
    status = pod.get("status")
    return status if isinstance(status, Mapping) else {}


def phase(pod: ObjectView) -> str:
    """``status.phase`` (``Pending``, ``Running``, ``Succeeded``, ``Failed``, ``Unknown``) or ""."""
    value = _status(pod).get("phase")
    return value if isinstance(value, str) else ""


def reason(pod: ObjectView) -> str:
    """``status.reason`` (``Evicted``, ``DeadlineExceeded``, ``OOMKilled``...) or ``""``."""
    value = _status(pod).get("reason")
    return value if isinstance(value, str) else ""


def condition(pod: ObjectView, kind: str) -> str:
    """The status (``"True"``, ``"False"``, ``"Unknown"``) of pod condition ``kind``, or ``""``."""
    conditions = _status(pod).get("conditions")
    for entry in conditions if isinstance(conditions, list) else ():
        if isinstance(entry, Mapping) and entry.get("type") == kind:
            value = entry.get("status")
            return value if isinstance(value, str) else ""
    return ""


def ready(pod: ObjectView) -> bool:
    """True when the pod's ``Ready`` condition is ``True`` (its readiness probes pass)."""
    return condition(pod, "Ready") == "True"


def running_and_ready(pod: ObjectView) -> bool:
    """Running, Ready and not terminating: a member a training framework can talk to now."""
    return phase(pod) == "Running" and ready(pod) and not is_terminating(pod)


def _statuses(pod: ObjectView, key: str) -> list[Mapping[str, Any]]:
    value = _status(pod).get(key)
    return [s for s in value if isinstance(s, Mapping)] if isinstance(value, list) else []


def container_running(pod: ObjectView, container: str) -> bool:
    """The pod runs and so does its container ``container`` (an exec into anything else fails)."""
    if phase(pod) != "Running":
        return False
    for status in _statuses(pod, "containerStatuses"):
        if status.get("name") == container:
            state = status.get("state")
            return isinstance(state, Mapping) and "running" in state
    return False


def _spec_order(pod: ObjectView, key: str) -> list[str]:
    spec = pod.get("spec")
    value = spec.get(key) if isinstance(spec, Mapping) else None
    if not isinstance(value, list):
        return []
    return [str(c.get("name")) for c in value if isinstance(c, Mapping)]


def _ordered(
    statuses: Sequence[Mapping[str, Any]], order: Sequence[str]
) -> list[Mapping[str, Any]]:
    """Container statuses in the order of the pod spec (the kubelet does not promise one)."""
    rank = {name: i for i, name in enumerate(order)}
    return sorted(statuses, key=lambda s: rank.get(str(s.get("name")), len(rank)))


def _first_failed_container(pod: ObjectView) -> tuple[str, int] | None:
    """``(name, exit code)`` of the first container that exited non-zero, in the order they run."""
    for key, spec_key in (
        ("initContainerStatuses", "initContainers"),
        ("containerStatuses", "containers"),
    ):
        for status in _ordered(_statuses(pod, key), _spec_order(pod, spec_key)):
            state = status.get("state")
            terminated = state.get("terminated") if isinstance(state, Mapping) else None
            code = terminated.get("exitCode") if isinstance(terminated, Mapping) else None
            if isinstance(code, int) and not isinstance(code, bool) and code != 0:
                return str(status.get("name")), code
    return None


def exit_code(pod: ObjectView) -> int | None:
    """The first non-zero ``terminated.exitCode`` of the pod, or None.

    Init containers come first, then the containers, each in the order of the pod spec (the order
    they run): a failed init container is why the pod failed. None means no container reported a
    non-zero exit, so a failed pod failed from outside its program (evicted, node lost, deadline).
    """
    failed = _first_failed_container(pod)
    return failed[1] if failed is not None else None


def failure(pod: ObjectView) -> str:
    """Why the pod failed, in words a message can carry.

    ``reason: message`` from its status (an eviction says why), else the first container that
    exited non-zero (as :func:`exit_code` finds it), else ``no reason given``.
    """
    status = _status(pod)
    parts = [status.get("reason"), status.get("message")]
    details = ": ".join(part for part in parts if isinstance(part, str) and part)
    if details:
        return details
    failed = _first_failed_container(pod)
    if failed is not None:
        return f"container {failed[0]} exited with {failed[1]}"
    return "no reason given"


def restarts(pod: ObjectView) -> int:
    """How often the kubelet restarted the pod's containers in place (init containers included)."""
    total = 0
    for key in ("initContainerStatuses", "containerStatuses"):
        for status in _statuses(pod, key):
            count = status.get("restartCount")
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                total += count
    return total
