"""One simulated container: its state machine and its ``containerStatuses`` entry.

A :class:`ContainerRuntime` is what the kubelet knows about one container of a pod across its
runs: the current state (``waiting`` with a reason, ``running`` since a time, or ``terminated``
with an exit code), the last termination, the restart count, readiness, the ids a real runtime
would report, the timers of the current run (when it next tries to start, when its waiting
reason changes, becomes ready, exits or finishes stopping) and the logs of the current and
previous instance.

Invariants:

* ``state == "running"`` exactly when the current instance has a ``container_id`` and no
  ``terminated`` record;
* every run gets a fresh container id and log; the previous run's log and termination are kept
  as ``previous_log`` and ``last``;
* ``restarts`` counts runs started after the first.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from etctl.testing._kubelet.behaviour import Behaviour
from etctl.testing._kubelet.imageref import InvalidReference, parse
from etctl.testing._kubelet.logs import ContainerLog

__all__ = ["ContainerRuntime", "Termination", "image_id", "normalize_image"]

State = Literal["waiting", "running", "terminated"]


def normalize_image(image: str) -> str:
    """The fully qualified reference a runtime reports (``docker.io/library/busybox:1.36``).

    An image that is not a reference is never pulled: its status reports it as written.
    """
    try:
        parse(image)
    except InvalidReference:
        return image
    reference = image.strip()
    first, _, rest = reference.partition("/")
    if not rest:
        reference = f"docker.io/library/{reference}"
    elif "." not in first and ":" not in first and first != "localhost":
        reference = f"docker.io/{reference}"
    last = reference.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        reference += ":latest"
    return reference


def image_id(image: str) -> str:
    """A stable digest reference for an image (``docker.io/library/busybox@sha256:...``)."""
    reference = normalize_image(image)
    repository = reference.split("@", 1)[0]
    last = repository.rsplit("/", 1)
    if ":" in last[-1]:
        repository = repository.rsplit(":", 1)[0]
    digest = hashlib.sha256(reference.encode()).hexdigest()
    return f"{repository}@sha256:{digest}"


@dataclass(frozen=True, slots=True)
class Termination:
    """How one run ended."""

    exit_code: int
    reason: str
    message: str
    started_at: str
    finished_at: str
    container_id: str

    def status(self) -> dict[str, Any]:
        """The ``terminated`` state."""
        out: dict[str, Any] = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": self.started_at or None,
            "finishedAt": self.finished_at,
        }
        if self.message:
            out["message"] = self.message
        if self.container_id:
            out["containerID"] = self.container_id
        return out


class ContainerRuntime:
    """The kubelet's record of one container.

    Args:
        spec: the container's spec.
        pod_uid: the pod's uid (seeds the container ids).
        init: True for an init container.
        log_lines: lines kept per instance.
    """

    def __init__(self, spec: dict[str, Any], *, pod_uid: str, init: bool, log_lines: int) -> None:
        self.spec = spec
        self.name = str(spec.get("name") or "")
        self.init = init
        self.pod_uid = pod_uid
        self.image = str(spec.get("image") or "")
        # A container's image never changes: resolve its reference and digest once.
        self.reference = normalize_image(self.image)
        self.image_id = image_id(self.image)
        self.log_lines = log_lines
        self.state: State = "waiting"
        self.reason = "PodInitializing" if init else "ContainerCreating"
        self.message = ""
        self.container_id = ""
        self.started_at = ""
        self.started_mono = 0.0
        self.terminated: Termination | None = None
        self.last: Termination | None = None
        self.restarts = 0
        self.runs = 0
        self.ready = False
        self.behaviour = Behaviour()
        self.planned = False
        self.blocked = False
        self.start_at: float | None = None
        self.notice_at: float | None = None
        self.ready_at: float | None = None
        self.exit_at: float | None = None
        self.exit_plan: tuple[int, str, str] = (0, "Completed", "")
        self.stop_at: float | None = None
        self.stop_plan: tuple[int, str] = (143, "Error")
        self.backoff = 0.0
        self.backoff_since = 0.0
        self.pull_backoff = 0.0
        self.log = ContainerLog(log_lines)
        self.previous_log: ContainerLog | None = None

    @property
    def field_path(self) -> str:
        """The event ``fieldPath`` of this container."""
        kind = "initContainers" if self.init else "containers"
        return f"spec.{kind}{{{self.name}}}"

    @property
    def running(self) -> bool:
        """True while an instance runs."""
        return self.state == "running"

    @property
    def succeeded(self) -> bool:
        """True when the current instance exited with code 0."""
        return self.terminated is not None and self.terminated.exit_code == 0

    def wait(self, reason: str, message: str = "") -> None:
        """Enter (or stay in) ``waiting`` with a reason."""
        self.state = "waiting"
        self.reason = reason
        self.message = message

    def cancel_timers(self) -> None:
        """Drop pending starts (the pod is ending)."""
        self.start_at = None
        self.notice_at = None

    def start(self, *, now: str, mono: float, wall: datetime) -> None:
        """Begin a new instance (a restart when one ran before)."""
        if self.runs:
            self.restarts += 1
            if self.terminated is not None:
                self.last = self.terminated
            self.previous_log = self.log
            self.log = ContainerLog(self.log_lines)
        self.runs += 1
        self.state = "running"
        self.reason = ""
        self.message = ""
        self.terminated = None
        self.started_at = now
        self.started_mono = mono
        seed = f"{self.pod_uid}/{self.name}/{self.runs}"
        self.container_id = "containerd://" + hashlib.sha256(seed.encode()).hexdigest()
        self.ready = False
        self.ready_at = None
        self.exit_at = None
        self.stop_at = None
        self.start_at = None
        self.notice_at = None
        for line in self.behaviour.logs:
            self.log.write(line, time=wall)

    def terminate(self, exit_code: int, reason: str, message: str, *, now: str) -> Termination:
        """End the running instance (or record an instance that never ran)."""
        record = Termination(
            exit_code=exit_code,
            reason=reason,
            message=message,
            started_at=self.started_at,
            finished_at=now,
            container_id=self.container_id,
        )
        self.terminated = record
        self.state = "terminated"
        self.reason = ""
        self.message = ""
        self.ready = False
        self.ready_at = None
        self.exit_at = None
        self.stop_at = None
        self.log.close()
        return record

    def deadlines(self) -> list[float]:
        """Every pending timer of this container."""
        timers = (self.start_at, self.notice_at, self.ready_at, self.exit_at, self.stop_at)
        return [t for t in timers if t is not None]

    def status(self) -> dict[str, Any]:
        """The ``containerStatuses`` entry."""
        state: dict[str, Any]
        if self.state == "running":
            state = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated" and self.terminated is not None:
            state = {"terminated": self.terminated.status()}
        else:
            waiting: dict[str, Any] = {"reason": self.reason}
            if self.message:
                waiting["message"] = self.message
            state = {"waiting": waiting}
        out: dict[str, Any] = {
            "name": self.name,
            "state": state,
            "lastState": {"terminated": self.last.status()} if self.last else {},
            "ready": self.ready,
            "restartCount": self.restarts,
            "image": self.reference,
            "imageID": self.image_id if self.runs else "",
            "started": self.state == "running",
        }
        if self.runs:
            out["containerID"] = self.container_id
        return out
