r"""What a simulated container does: start, run, exit, fail, be evicted.

Main containers are never executed; what they do comes from a :class:`Behaviour`, resolved per
container (and once per run, so a policy can make the first runs crash and the next one succeed):

1. the defaults: start at once, become ready at once, run until the pod is deleted;
2. the first registered :class:`Policy` that matches (the most recently added wins);
3. the pod's ``sim.etctl.io/<knob>`` annotations, then ``sim.etctl.io/<knob>.<container>``
   annotations for one container.

Annotation knobs (values are seconds unless said otherwise):

* ``start-delay``: seconds between the pod starting and the container running (image pull);
* ``stay-pending``: ``true`` keeps the container waiting in ``ContainerCreating`` forever;
* ``run-seconds`` (alias ``exit-after``): run that long, then exit with ``exit-code``;
* ``exit-code``: the exit code of that exit (default 0);
* ``exit-message``: the terminated state's ``message`` (what a termination log would hold);
* ``fail-start``: ``ImagePullBackOff``, ``ErrImagePull``, ``InvalidImageName``,
  ``CreateContainerError`` or ``CreateContainerConfigError``: the container never starts;
* ``fail-message``: the waiting message of a failed start;
* ``oom-after``: be OOM-killed (exit 137, ``OOMKilled``) after that long;
* ``evict-after``: the kubelet evicts the pod that long after it started (pod-wide);
* ``ready``: ``false`` keeps the container unready while it runs;
* ``ready-delay``: seconds from running to ready;
* ``stop-seconds``: how long the container takes to exit after SIGTERM (capped by the grace
  period, after which it is killed with exit code 137);
* ``log``: lines the container writes when it starts (``\n`` separated).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from etctl.log import get_logger
from etctl.runtime import ObjectView, objects

__all__ = [
    "ANNOTATION_PREFIX",
    "FAIL_START_REASONS",
    "Behaviour",
    "Policy",
    "PodPolicy",
    "resolve_behaviour",
]

log = get_logger(__name__)

ANNOTATION_PREFIX = "sim.etctl.io/"
FAIL_START_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerError",
        "CreateContainerConfigError",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """What one run of one container does.

    Attributes:
        start_delay: seconds from pod start to this container running.
        stay_pending: never start (waiting in ``ContainerCreating``).
        run_seconds: exit after running this long (None: run until stopped).
        exit_code: the exit code when ``run_seconds`` elapses.
        exit_message: the terminated state's message for that exit.
        fail_start: a waiting reason the container is stuck in instead of starting.
        fail_message: the waiting message for ``fail_start``.
        oom_after: be OOM-killed after running this long.
        evict_after: (pod-wide) evict the pod this long after it started.
        ready: whether the running container becomes ready.
        ready_delay: seconds from running to ready.
        stop_seconds: seconds from SIGTERM to exit.
        logs: lines written when the container starts.
    """

    start_delay: float = 0.0
    stay_pending: bool = False
    run_seconds: float | None = None
    exit_code: int = 0
    exit_message: str = ""
    fail_start: str | None = None
    fail_message: str | None = None
    oom_after: float | None = None
    evict_after: float | None = None
    ready: bool = True
    ready_delay: float = 0.0
    stop_seconds: float = 0.0
    logs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.fail_start is not None and self.fail_start not in FAIL_START_REASONS:
            allowed = ", ".join(sorted(FAIL_START_REASONS))
            msg = f"fail_start must be one of {allowed}, not {self.fail_start!r}"
            raise ValueError(msg)


class Policy(Protocol):
    """Decides the behaviour of containers; registered with ``Kubelet.add_policy``."""

    def behaviour(self, pod: ObjectView, container: str, *, restarts: int) -> Behaviour | None:
        """The behaviour of ``container``'s next run (after ``restarts`` restarts), or None."""
        ...


BehaviourFactory = Callable[[ObjectView, str, int], Behaviour]
"""``(pod, container, restarts) -> Behaviour``: behaviour that changes from run to run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PodPolicy:
    """A :class:`Policy` matching pods by name pattern, namespace, labels and container.

    Attributes:
        does: the behaviour, or a factory called with ``(pod, container, restarts)``.
        name: a shell-style pattern the pod name must match (``worker-*``); None matches all.
        namespace: the namespace the pod must be in; None matches all.
        labels: labels the pod must carry (a subset match).
        containers: container names the policy applies to; empty means all.
    """

    does: Behaviour | BehaviourFactory = field(default_factory=Behaviour)
    name: str | None = None
    namespace: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    containers: frozenset[str] = frozenset()

    def matches(self, pod: ObjectView, container: str) -> bool:
        """True when the pod (and container) is one this policy is about."""
        if self.name is not None and not fnmatch.fnmatchcase(objects.name(pod), self.name):
            return False
        if self.namespace is not None and objects.namespace(pod) != self.namespace:
            return False
        pod_labels = objects.labels(pod)
        if any(pod_labels.get(k) != v for k, v in self.labels.items()):
            return False
        return not self.containers or container in self.containers

    def behaviour(self, pod: ObjectView, container: str, *, restarts: int) -> Behaviour | None:
        """The behaviour when the policy matches, else None."""
        if not self.matches(pod, container):
            return None
        if isinstance(self.does, Behaviour):
            return self.does
        return self.does(pod, container, restarts)


def _seconds(text: str) -> float:
    value = float(text.strip().removesuffix("s"))
    if value < 0:
        msg = "must not be negative"
        raise ValueError(msg)
    return value


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    msg = f"not a boolean: {text!r}"
    raise ValueError(msg)


def _lines(text: str) -> tuple[str, ...]:
    return tuple(text.replace("\\n", "\n").splitlines())


_KNOBS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "start-delay": ("start_delay", _seconds),
    "stay-pending": ("stay_pending", _flag),
    "run-seconds": ("run_seconds", _seconds),
    "exit-after": ("run_seconds", _seconds),
    "exit-code": ("exit_code", lambda t: int(t.strip())),
    "exit-message": ("exit_message", str),
    "fail-start": ("fail_start", str.strip),
    "fail-message": ("fail_message", str),
    "oom-after": ("oom_after", _seconds),
    "evict-after": ("evict_after", _seconds),
    "ready": ("ready", _flag),
    "ready-delay": ("ready_delay", _seconds),
    "stop-seconds": ("stop_seconds", _seconds),
    "log": ("logs", _lines),
}


def _from_annotations(pod: ObjectView, container: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    notes = objects.annotations(pod)
    for suffix in ("", f".{container}"):
        for knob, (attribute, parse) in _KNOBS.items():
            raw = notes.get(f"{ANNOTATION_PREFIX}{knob}{suffix}")
            if raw is None:
                continue
            try:
                found[attribute] = parse(str(raw))
            except ValueError as exc:
                log.warning(
                    "ignoring a simulation annotation",
                    pod=f"{objects.namespace(pod)}/{objects.name(pod)}",
                    annotation=f"{ANNOTATION_PREFIX}{knob}{suffix}",
                    error=str(exc),
                )
    return found


def resolve_behaviour(
    pod: ObjectView, container: str, policies: list[Policy], *, restarts: int = 0
) -> Behaviour:
    """The behaviour of ``container``'s next run: defaults, then a policy, then annotations."""
    base = Behaviour()
    for policy in reversed(policies):
        chosen = policy.behaviour(pod, container, restarts=restarts)
        if chosen is not None:
            base = chosen
            break
    overrides = _from_annotations(pod, container)
    if not overrides:
        return base
    try:
        return dataclasses.replace(base, **overrides)
    except ValueError as exc:
        log.warning(
            "ignoring simulation annotations",
            pod=f"{objects.namespace(pod)}/{objects.name(pod)}",
            error=str(exc),
        )
        return base
