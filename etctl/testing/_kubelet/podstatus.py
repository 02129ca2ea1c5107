"""A pod's status as the kubelet writes it: phase, conditions, addresses and container statuses.

:func:`render_status` builds the whole ``status`` of a pod worker (keeping ``qosClass`` and the
scheduler's ``PodScheduled``; a pod the kubelet rejected gets only its phase, reason and
message). :func:`pod_phase` is the kubelet's ``getPhase``: pending while initializing or while a
container waits to run for the first time; running while a container runs (or, under
``Always``, while crashed containers wait to restart); succeeded or failed once every container
has stopped for good. :func:`pod_conditions` renders the five pod conditions in the order the
kubelet writes them, keeping a condition's ``lastTransitionTime`` while its status does not
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.containers import ContainerRuntime

if TYPE_CHECKING:
    from etctl.testing._kubelet.podworker import PodWorker

__all__ = ["PodView", "Terminal", "pod_conditions", "pod_phase", "render_status"]


@dataclass(frozen=True, slots=True)
class Terminal:
    """Why a pod ended: its final phase, and the pod-level reason and message (may be empty)."""

    phase: str
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class PodView:
    """What the status rendering needs to know about a pod worker."""

    restart_policy: str
    admitted: bool
    initialized: bool
    inits: Sequence[ContainerRuntime]
    containers: Sequence[ContainerRuntime]
    terminal: Terminal | None
    readiness_gates: Sequence[str]
    disruption: tuple[str, str] | None = None


def pod_phase(view: PodView) -> str:
    """The pod phase (the kubelet's ``getPhase``)."""
    if view.terminal is not None:
        return view.terminal.phase
    if not view.initialized:
        return "Pending"
    counts = {"waiting": 0, "running": 0, "stopped": 0, "succeeded": 0}
    for container in view.containers:
        if container.state == "running":
            counts["running"] += 1
        elif container.state == "terminated" or container.last is not None:
            counts["stopped"] += 1
            counts["succeeded"] += int(container.succeeded)
        else:
            counts["waiting"] += 1
    if counts["waiting"] or not (counts["running"] or counts["stopped"]):
        return "Pending"
    if counts["running"]:
        return "Running"
    return _stopped_phase(view.restart_policy, counts["stopped"] == counts["succeeded"])


def _stopped_phase(restart_policy: str, all_succeeded: bool) -> str:
    """The phase once every container has stopped (some may restart)."""
    if restart_policy == "Always":
        return "Running"
    if all_succeeded:
        return "Succeeded"
    return "Failed" if restart_policy == "Never" else "Running"


def _condition(
    kind: str,
    status: bool,
    previous: Mapping[str, Mapping[str, Any]],
    now: str,
    *,
    reason: str = "",
    message: str = "",
) -> dict[str, Any]:
    text = "True" if status else "False"
    old = previous.get(kind)
    transition = now
    if old is not None and old.get("status") == text and old.get("lastTransitionTime"):
        transition = str(old["lastTransitionTime"])
    out: dict[str, Any] = {
        "type": kind,
        "status": text,
        "lastProbeTime": None,
        "lastTransitionTime": transition,
    }
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def _names(containers: Sequence[ContainerRuntime]) -> str:
    return "[" + " ".join(c.name for c in containers) + "]"


def pod_conditions(
    view: PodView, previous: Sequence[Any], now: str, pod_conditions_now: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The pod's conditions.

    Args:
        view: the pod worker's state.
        previous: the conditions currently in the pod's status.
        now: the current timestamp.
        pod_conditions_now: condition type to status of every condition in the pod's status
            (for readiness gates).
    """
    before = {str(c.get("type")): c for c in previous if isinstance(c, Mapping) and c.get("type")}
    completed = view.terminal is not None
    out: list[dict[str, Any]] = []
    if view.disruption is not None:
        reason, message = view.disruption
        out.append(
            _condition("DisruptionTarget", True, before, now, reason=reason, message=message)
        )
    out.append(
        _condition("PodReadyToStartContainers", view.admitted and not completed, before, now)
    )
    if view.initialized:
        reason = "PodCompleted" if completed and view.inits else ""
        out.append(_condition("Initialized", True, before, now, reason=reason))
    else:
        pending = [c for c in view.inits if not c.succeeded]
        out.append(
            _condition(
                "Initialized",
                False,
                before,
                now,
                reason="ContainersNotInitialized",
                message=f"containers with incomplete status: {_names(pending)}",
            )
        )
    if completed:
        ready = _condition("Ready", False, before, now, reason="PodCompleted")
        containers_ready = _condition("ContainersReady", False, before, now, reason="PodCompleted")
    else:
        unready = [c for c in view.containers if not c.ready]
        if unready:
            message = f"containers with unready status: {_names(unready)}"
            containers_ready = _condition(
                "ContainersReady", False, before, now, reason="ContainersNotReady", message=message
            )
            ready = _condition(
                "Ready", False, before, now, reason="ContainersNotReady", message=message
            )
        else:
            containers_ready = _condition("ContainersReady", True, before, now)
            ready = _gated_ready(view, before, now, pod_conditions_now)
    out.append(ready)
    out.append(containers_ready)
    scheduled = before.get("PodScheduled")
    if scheduled is not None and scheduled.get("status") == "True":
        out.append(dict(scheduled))
    else:
        out.append(_condition("PodScheduled", True, before, now))
    return out


def _gated_ready(
    view: PodView,
    before: Mapping[str, Mapping[str, Any]],
    now: str,
    current: Mapping[str, str],
) -> dict[str, Any]:
    problems = []
    for gate in view.readiness_gates:
        status = current.get(gate)
        if status is None:
            problems.append(
                f'corresponding condition of pod readiness gate "{gate}" does not exist.'
            )
        elif status != "True":
            problems.append(
                f'the status of pod readiness gate "{gate}" is not "True", but {status}'
            )
    if problems:
        return _condition(
            "Ready",
            False,
            before,
            now,
            reason="ReadinessGatesNotReady",
            message=", ".join(problems),
        )
    return _condition("Ready", True, before, now)


def _view(worker: PodWorker) -> PodView:
    """What the status rendering needs."""
    gates = [
        str(mapping(g).get("conditionType") or "") for g in worker.spec.get("readinessGates") or []
    ]
    return PodView(
        restart_policy=worker.restart_policy,
        admitted=worker.admitted and worker.sandbox_ready,
        initialized=worker.initialized,
        inits=worker.inits,
        containers=worker.containers,
        terminal=worker.terminal,
        readiness_gates=[g for g in gates if g],
        disruption=worker.disruption,
    )


def render_status(worker: PodWorker) -> dict[str, Any]:
    """The status the kubelet writes for a pod worker's state."""
    current = mapping(worker.pod.get("status"))
    existing = [c for c in current.get("conditions") or [] if isinstance(c, Mapping)]
    view = _view(worker)
    status: dict[str, Any] = {"phase": pod_phase(view)}
    if worker.rejected:
        scheduled = [dict(c) for c in existing if c.get("type") == "PodScheduled"]
        status["conditions"] = scheduled
    else:
        statuses = {str(c.get("type")): str(c.get("status")) for c in existing}
        status["conditions"] = pod_conditions(view, existing, worker.now(), statuses)
    if worker.terminal is not None and worker.terminal.reason:
        status["reason"] = worker.terminal.reason
        status["message"] = worker.terminal.message
    status["hostIP"] = worker.node.ip
    status["hostIPs"] = [{"ip": worker.node.ip}]
    if worker.sandbox_ready:
        ip = worker.node.ip if worker.spec.get("hostNetwork") else worker.node.pod_ip(worker.uid)
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    if worker.start_time:
        status["startTime"] = worker.start_time
    if not worker.rejected:
        if worker.inits:
            status["initContainerStatuses"] = [c.status() for c in worker.inits]
        status["containerStatuses"] = sorted(
            (c.status() for c in worker.containers), key=lambda s: str(s["name"])
        )
    if "qosClass" in current:
        status["qosClass"] = current["qosClass"]
    return status
