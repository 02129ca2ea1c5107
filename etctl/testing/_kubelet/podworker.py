"""One pod on one simulated node: the kubelet's pod lifecycle, advanced on the clock.

A :class:`PodWorker` owns a pod bound to a node of the kubelet. :meth:`PodWorker.sync` brings it
up to the current time (a :class:`~etctl.runtime.Clock` reading), writes the resulting
status when it changed, and returns when it next needs to run. It never sleeps: timers are
deadlines the kubelet's loop waits for, so a FakeClock drives it deterministically.

The lifecycle, as the real kubelet runs it:

* admission (enough allocatable left for a pod whose ``nodeName`` was set by hand), then the
  sandbox (volumes must be mountable), ``PodReadyToStartContainers`` and ``startTime``;
* init containers one at a time, each to completion; a failed one fails the pod under
  ``Never`` and is restarted with back-off otherwise;
* main containers start (after their start delay), become ready, and may exit, be OOM-killed or
  fail to start; exits are restarted per ``restartPolicy`` (see
  :mod:`~etctl.testing._kubelet.starts` for the back-off);
* ``activeDeadlineSeconds`` and eviction end the pod ``Failed`` (it stays until deleted);
* graceful deletion: SIGTERM, the containers stop (killed with 137 when the grace period ends
  first), the final status is written and the pod is deleted with grace 0 and a uid
  precondition.

Invariant: once :attr:`PodWorker.terminal` is set, no container starts again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from etctl.errors import ApiError
from etctl.log import get_logger
from etctl.runtime import PODS, Clock, KubeObject, ObjectView, objects
from etctl.testing._apiserver.deletion import DeleteOptions
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.behaviour import Behaviour, Policy, resolve_behaviour
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.endings import (
    advance_stops,
    check_deadline,
    check_deletion,
    check_eviction,
    eviction_message,
    finalize_waiting,
)
from etctl.testing._kubelet.events import EventRecorder, Source
from etctl.testing._kubelet.nodes import SimNode
from etctl.testing._kubelet.podstatus import Terminal, render_status
from etctl.testing._kubelet.starts import (
    MAX_BACKOFF,
    exit_reason,
    schedule_restart,
    settle_pull,
    try_start,
)

__all__ = ["InitResult", "InitRunner", "PodWorker", "WorkerEnv"]

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class InitResult:
    """What running an init container's command gave: exit code and output."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""


class InitRunner(Protocol):
    """Runs an init container's command for real (a shell command in the pod sandbox)."""

    def __call__(
        self, worker: PodWorker, container: ContainerRuntime, env: Mapping[str, str]
    ) -> InitResult | None:
        """The result of running it with ``env``, or None when it is not a command that can run."""
        ...


@dataclass(slots=True)
class WorkerEnv:
    """What a pod worker uses from its kubelet.

    Attributes:
        storage: the server's storage.
        clock: the clock.
        recorder: where events go.
        policies: the registered behaviour policies (shared, may grow).
        log_lines: lines kept per container instance.
        admit: returns ``(reason, message)`` when the node rejects the pod, else None.
        volumes_ready: True once the pod's volumes can be set up (records why not otherwise).
        run_init: runs init container commands for real, when set.
        container_env: the environment a container starts with; raises
            :class:`~etctl.testing._kubelet.containerenv.ConfigError` (the
            ``CreateContainerConfigError`` message) when it cannot be built.
    """

    storage: Storage
    clock: Clock
    recorder: EventRecorder
    policies: list[Policy]
    log_lines: int
    admit: Callable[[PodWorker], tuple[str, str] | None]
    volumes_ready: Callable[[PodWorker], bool]
    run_init: InitRunner | None = None
    container_env: Callable[[PodWorker, ContainerRuntime], Mapping[str, str]] | None = None


class PodWorker:
    """The lifecycle of one pod on one node.

    Args:
        pod: the pod as first seen.
        node: the node it is bound to.
        env: the kubelet's services.
    """

    def __init__(self, pod: ObjectView, node: SimNode, env: WorkerEnv) -> None:
        self.uid = objects.uid(pod)
        self.namespace = objects.namespace(pod)
        self.name = objects.name(pod)
        self.node = node
        self.env = env
        self.pod: ObjectView = pod
        spec = mapping(pod.get("spec"))
        self.inits = [
            ContainerRuntime(dict(c), pod_uid=self.uid, init=True, log_lines=env.log_lines)
            for c in spec.get("initContainers") or []
            if isinstance(c, Mapping)
        ]
        self.containers = [
            ContainerRuntime(dict(c), pod_uid=self.uid, init=False, log_lines=env.log_lines)
            for c in spec.get("containers") or []
            if isinstance(c, Mapping)
        ]
        if self.inits:
            for container in self.containers:
                container.wait("PodInitializing")
        self.source = Source("kubelet", node.name)
        self.admitted = False
        self.rejected = False
        self.sandbox_ready = False
        self.start_mono = 0.0
        self.start_time = ""
        self.init_index = 0
        self.initialized = not self.inits
        self.terminal: Terminal | None = None
        self.disruption: tuple[str, str] | None = None
        self.evict_at: float | None = None
        self.evict_message = ""
        self.stopping = False
        self.removed = False

    # -- identity -------------------------------------------------------------------------------

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> Mapping[str, Any]:
        """The pod's spec."""
        return mapping(self.pod.get("spec"))

    @property
    def restart_policy(self) -> str:
        """``spec.restartPolicy``."""
        return str(self.spec.get("restartPolicy") or "Always")

    @property
    def active(self) -> bool:
        """True while the pod holds node resources (admitted and not finished)."""
        return self.admitted and not self.rejected and self.terminal is None

    def all_containers(self) -> list[ContainerRuntime]:
        """Init containers, then main containers."""
        return [*self.inits, *self.containers]

    def container(self, name: str) -> ContainerRuntime | None:
        """A main or init container by name."""
        for container in self.all_containers():
            if container.name == name:
                return container
        return None

    def now(self) -> str:
        """The current timestamp as objects carry it."""
        return self.env.storage.now()

    def event(
        self,
        event_type: str,
        reason: str,
        message: str,
        container: ContainerRuntime | None = None,
    ) -> None:
        """Record an event about the pod (or one of its containers)."""
        self.env.recorder.record(
            self.pod,
            event_type,
            reason,
            message,
            source=self.source,
            field_path=container.field_path if container is not None else "",
        )

    def resolve(self, container: ContainerRuntime) -> Behaviour:
        """The behaviour of the container's next run."""
        return resolve_behaviour(
            self.pod, container.name, self.env.policies, restarts=container.restarts
        )

    # -- entry ----------------------------------------------------------------------------------

    def sync(self, pod: ObjectView | None = None) -> float | None:
        """Advance to now and write the status if it changed; returns the next deadline.

        A pod whose deletion has completed is removed from storage (:attr:`removed`); nothing
        happens after that.
        """
        if self.removed:
            return None
        if pod is not None:
            self.pod = pod
        for _ in range(64):
            if not self._advance(self.env.clock.monotonic()):
                break
        done = self.stopping and not any(c.running for c in self.all_containers())
        if done and self.terminal is None:
            succeeded = all(c.succeeded for c in self.containers if c.runs)
            self.terminal = Terminal("Succeeded" if succeeded else "Failed")
            finalize_waiting(self)
        self._write_status()
        if done:
            self._remove()
            return None
        return self.next_deadline()

    def next_deadline(self) -> float | None:
        """The earliest pending timer, or None."""
        timers = [t for c in self.all_containers() for t in c.deadlines()]
        if self.terminal is None:
            if self.evict_at is not None:
                timers.append(self.evict_at)
            deadline = self.active_deadline()
            if deadline is not None:
                timers.append(deadline)
        return min(timers) if timers else None

    # -- test-side actions ----------------------------------------------------------------------

    def evict(self, message: str | None = None) -> None:
        """Evict the pod at the next sync."""
        self.evict_message = message or eviction_message(self)
        self.evict_at = self.env.clock.monotonic()

    def exit(
        self,
        code: int,
        container: str | None = None,
        *,
        reason: str | None = None,
        message: str = "",
    ) -> int:
        """Make running main containers exit at the next sync; returns how many will."""
        now = self.env.clock.monotonic()
        count = 0
        for runtime in self.containers:
            if runtime.running and (container is None or runtime.name == container):
                runtime.exit_at = now
                runtime.exit_plan = (code, reason or exit_reason(code), message)
                count += 1
        return count

    # -- the lifecycle --------------------------------------------------------------------------

    def _advance(self, mono: float) -> bool:
        """Apply every transition due at ``mono``; True when something changed."""
        if not self.admitted:
            return self._admit(mono)
        changed = advance_stops(self, mono)
        if check_deletion(self, mono):
            return True
        if self.terminal is None and (check_eviction(self, mono) or check_deadline(self, mono)):
            return True
        if self.terminal is None and not self.stopping:
            changed = self._advance_running(mono) or changed
        return changed

    def _advance_running(self, mono: float) -> bool:
        """The part of the lifecycle that runs while the pod is neither ending nor ended."""
        changed = False
        if not self.sandbox_ready:
            if not self.env.volumes_ready(self):
                return False
            self.sandbox_ready = True
            changed = True
        if not self.initialized:
            return self._advance_init(mono) or changed
        for container in self.containers:
            changed = self._advance_container(container, mono) or changed
        return self._check_completion() or changed

    def _admit(self, mono: float) -> bool:
        self.admitted = True
        self.start_mono = mono
        self.start_time = self.now()
        rejected = self.env.admit(self)
        if rejected is not None:
            reason, message = rejected
            self.rejected = True
            self.terminal = Terminal("Failed", reason, message)
            self.event("Warning", reason, message)
            return True
        behaviour = resolve_behaviour(self.pod, "", self.env.policies)
        if behaviour.evict_after is not None:
            self.evict_at = mono + behaviour.evict_after
        return True

    def active_deadline(self) -> float | None:
        """When ``activeDeadlineSeconds`` runs out (monotonic), if the pod has one."""
        value = self.spec.get("activeDeadlineSeconds")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return self.start_mono + value
        return None

    # -- containers -----------------------------------------------------------------------------

    def _restarts(self, container: ContainerRuntime) -> bool:
        code = container.terminated.exit_code if container.terminated else 0
        if container.init:
            return code != 0 and self.restart_policy != "Never"
        if self.restart_policy == "Always":
            return True
        return self.restart_policy == "OnFailure" and code != 0

    def _advance_container(self, container: ContainerRuntime, mono: float) -> bool:
        """Start, ready, exit and restart one container as far as ``mono`` allows."""
        changed = False
        if container.state == "waiting":
            if not container.planned:
                container.planned = True
                container.behaviour = self.resolve(container)
                if container.behaviour.stay_pending:
                    container.wait("ContainerCreating")
                else:
                    container.start_at = mono + container.behaviour.start_delay
                changed = True
            if container.notice_at is not None and container.notice_at <= mono:
                changed = settle_pull(self, container) or changed
            if container.start_at is not None and container.start_at <= mono:
                if container.reason == "CrashLoopBackOff":
                    container.backoff = min(container.backoff * 2, MAX_BACKOFF)
                    container.behaviour = self.resolve(container)
                try_start(self, container, mono)
                changed = True
        if container.running:
            if container.ready_at is not None and container.ready_at <= mono:
                container.ready = True
                container.ready_at = None
                changed = True
            if container.exit_at is not None and container.exit_at <= mono:
                code, reason, message = container.exit_plan
                container.log.write(
                    f"sim: container {container.name} exited with code {code}",
                    time=self.env.clock.now(),
                )
                container.terminate(code, reason, message, now=self.now())
                changed = True
        if container.state == "terminated" and self._restarts(container):
            schedule_restart(self, container, mono)
            changed = True
        return changed

    def _advance_init(self, mono: float) -> bool:
        changed = False
        while self.init_index < len(self.inits):
            container = self.inits[self.init_index]
            changed = self._advance_container(container, mono) or changed
            if container.succeeded:
                self.init_index += 1
                changed = True
                continue
            if container.state == "terminated" and self.restart_policy == "Never":
                self.terminal = Terminal("Failed")
                return True
            return changed
        self.initialized = True
        for container in self.containers:
            if container.reason == "PodInitializing":
                container.wait("ContainerCreating")
        return True

    def _check_completion(self) -> bool:
        if self.restart_policy == "Always" or not self.containers:
            return False
        if not all(c.state == "terminated" for c in self.containers):
            return False
        phase = "Succeeded" if all(c.succeeded for c in self.containers) else "Failed"
        self.terminal = Terminal(phase)
        return True

    # -- status ---------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The pod status to write."""
        return render_status(self)

    def _write_status(self) -> None:
        status = self.status()
        if status == self.pod.get("status"):
            return
        # The server copies the body it admits, so a shallow copy with the new status suffices.
        updated: KubeObject = {**self.pod, "status": status}
        try:
            self.pod = self.env.storage.update(
                PODS, updated, namespace=self.namespace, subresource="status"
            )
        except ApiError as exc:
            log.debug("pod status not written", pod=self.key, error=str(exc))

    def _remove(self) -> None:
        self.removed = True
        try:
            self.env.storage.delete(
                PODS,
                self.name,
                namespace=self.namespace,
                options=DeleteOptions(grace_period_seconds=0, uid=self.uid),
            )
        except ApiError as exc:
            log.debug("pod already gone", pod=self.key, error=str(exc))
