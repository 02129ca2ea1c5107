"""Starting containers: image pulls, failed starts, crash-loop back-off, and their events.

The functions here take one :class:`~etctl.testing._kubelet.containers.ContainerRuntime` of a pod
worker from ``waiting`` to ``running`` (or keep it waiting for a reason), recording the events
the real kubelet records on the way (``Pulling``, ``Pulled``, ``Created``, ``Started``,
``Failed``, ``BackOff``):

* an image is pulled (``Pulling``/``Pulled``) unless the node already has it and the pull policy
  is not ``Always`` (``already present on machine``);
* an image that is not a reference (:mod:`~etctl.testing._kubelet.imageref`: a space in it, upper
  case, an empty one) is never pulled: the container waits with ``InvalidImageName`` and the
  kubelet's message, with a Warning ``InspectFailed`` Event, as the ``fail-start`` knob of that
  name does;
* with ``imagePullPolicy: Never`` an image the node does not hold is not pulled either: the
  container waits with ``ErrImageNeverPull`` and tries again every 10 s (another pod may pull it);
  a policy the API server would refuse is pulled as ``Always`` is, as the kubelet does;
* a failed pull shows ``ErrImagePull``, then ``ImagePullBackOff`` a moment later, and is retried
  after 10 s doubling to 300 s; ``CreateContainerError`` and ``CreateContainerConfigError`` keep
  the container waiting;
* a crashed container restarts at once the first time, then after 10 s, 20 s... up to 300 s
  (``CrashLoopBackOff``); the back-off starts over when the last restart is more than ten
  minutes old.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from etctl.testing._goduration import go_duration as _go_duration
from etctl.testing._kubelet.behaviour import Behaviour
from etctl.testing._kubelet.containerenv import ConfigError
from etctl.testing._kubelet.containers import ContainerRuntime
from etctl.testing._kubelet.imageref import default_tag_problem

if TYPE_CHECKING:
    from etctl.testing._kubelet.podworker import PodWorker

__all__ = [
    "FIRST_BACKOFF",
    "MAX_BACKOFF",
    "exit_reason",
    "go_duration",
    "schedule_restart",
    "settle_pull",
    "try_start",
]

MAX_BACKOFF = 300.0
FIRST_BACKOFF = 10.0
_PULL_SETTLE = 1.0


def go_duration(seconds: float) -> str:
    """Whole seconds as Go prints a ``time.Duration`` (``10s``, ``1m20s``, ``5m0s``)."""
    return _go_duration(int(seconds) * 1_000_000_000)


def exit_reason(code: int) -> str:
    """``Completed`` for exit code 0, ``Error`` otherwise."""
    return "Completed" if code == 0 else "Error"


def _invalid_name(worker: PodWorker, container: ContainerRuntime, detail: str) -> None:
    """The kubelet's refusal of an image it cannot parse: no pull, waiting for good."""
    worker.event("Warning", "InspectFailed", detail, container)
    worker.event("Warning", "Failed", "Error: InvalidImageName", container)
    container.wait("InvalidImageName", detail)


def _pull(
    worker: PodWorker, container: ContainerRuntime, behaviour: Behaviour, mono: float
) -> bool:
    """Pull the image as the pull policy says; False when the container cannot get it."""
    image = container.image
    policy = container.spec.get("imagePullPolicy") or "IfNotPresent"
    reference = container.reference
    present = reference in worker.node.images
    if policy in ("IfNotPresent", "Never") and present:
        worker.event(
            "Normal", "Pulled", f'Container image "{image}" already present on machine', container
        )
        return True
    if policy == "Never":
        detail = f'Container image "{image}" is not present with pull policy of Never'
        worker.event("Warning", "ErrImageNeverPull", detail, container)
        worker.event("Warning", "Failed", "Error: ErrImageNeverPull", container)
        container.wait("ErrImageNeverPull", detail)
        container.start_at = mono + FIRST_BACKOFF  # the pod worker's retry after an error
        return False
    took = go_duration(behaviour.start_delay)
    size = 1_000_000 + int.from_bytes(reference.encode()[:3], "big") % 50_000_000
    worker.event("Normal", "Pulling", f'Pulling image "{image}"', container)
    worker.event(
        "Normal",
        "Pulled",
        f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
        f"Image size: {size} bytes.",
        container,
    )
    worker.node.images.add(reference)
    return True


def _image_ready(
    worker: PodWorker, container: ContainerRuntime, behaviour: Behaviour, mono: float
) -> bool:
    """Get the container's image, or leave it waiting for why it cannot be had; True if got."""
    if behaviour.stay_pending:
        container.wait("ContainerCreating")
        return False
    invalid = default_tag_problem(container.image)
    if invalid is not None:
        _invalid_name(worker, container, invalid)
        return False
    if behaviour.fail_start is not None:
        _fail_start(worker, container, behaviour, mono)
        return False
    return _pull(worker, container, behaviour, mono)


def try_start(worker: PodWorker, container: ContainerRuntime, mono: float) -> None:
    """Start the container's next run now, or leave it waiting for why it cannot start."""
    behaviour = container.behaviour
    container.start_at = None
    if not _image_ready(worker, container, behaviour, mono):
        return
    build_env = worker.env.container_env
    try:
        # Built once: an init container's command runs with this environment below.
        env = build_env(worker, container) if build_env is not None else {}
    except ConfigError as exc:
        # Retried when a ConfigMap or Secret of the namespace changes (the kubelet unblocks it).
        problem = str(exc)
        worker.event("Warning", "Failed", f"Error: {problem}", container)
        container.wait("CreateContainerConfigError", problem)
        container.blocked = True
        return
    worker.event("Normal", "Created", f"Created container: {container.name}", container)
    worker.event("Normal", "Started", f"Started container {container.name}", container)
    wall = worker.env.clock.now()
    container.start(now=worker.now(), mono=mono, wall=wall)
    container.log.write(f"sim: started container {container.name}", time=wall)
    if behaviour.ready and not container.init:
        container.ready_at = mono + behaviour.ready_delay
    plans: list[tuple[float, tuple[int, str, str]]] = []
    run_seconds = behaviour.run_seconds
    if container.init and run_seconds is None:
        run_seconds = 0.0  # an init container that is not executed completes at once
    if run_seconds is not None:
        code = behaviour.exit_code
        plans.append((mono + run_seconds, (code, exit_reason(code), behaviour.exit_message)))
    if behaviour.oom_after is not None:
        plans.append((mono + behaviour.oom_after, (137, "OOMKilled", "")))
    runner = worker.env.run_init
    if container.init and runner is not None:
        result = runner(worker, container, env)
        if result is not None:
            if result.stdout:
                container.log.write(result.stdout, time=wall)
            if result.stderr:
                container.log.write(result.stderr, time=wall, stream="stderr")
            code = result.exit_code
            plans = [(mono, (code, exit_reason(code), ""))]
    if plans:
        container.exit_at, container.exit_plan = min(plans, key=lambda plan: plan[0])


def _fail_start(
    worker: PodWorker, container: ContainerRuntime, behaviour: Behaviour, mono: float
) -> None:
    reason = str(behaviour.fail_start)
    image = container.image
    reference = container.reference
    if reason in ("ImagePullBackOff", "ErrImagePull"):
        detail = behaviour.fail_message or (
            f'failed to pull and unpack image "{reference}": failed to resolve reference '
            f'"{reference}": {reference}: not found'
        )
        worker.event("Normal", "Pulling", f'Pulling image "{image}"', container)
        worker.event("Warning", "Failed", f'Failed to pull image "{image}": {detail}', container)
        worker.event("Warning", "Failed", "Error: ErrImagePull", container)
        container.wait("ErrImagePull", detail)
        previous = container.pull_backoff
        container.pull_backoff = min(previous * 2, MAX_BACKOFF) if previous else FIRST_BACKOFF
        container.notice_at = mono + _PULL_SETTLE
        container.start_at = mono + container.pull_backoff
        return
    if reason == "InvalidImageName":
        detail = behaviour.fail_message or (
            f'Failed to apply default image tag "{image}": couldn\'t parse image name '
            f'"{image}": invalid reference format'
        )
        _invalid_name(worker, container, detail)
        return
    if not _pull(worker, container, behaviour, mono):
        return
    if reason == "CreateContainerConfigError":
        detail = behaviour.fail_message or 'configmap "missing" not found'
    else:
        detail = behaviour.fail_message or (
            "failed to create containerd task: failed to create shim task: OCI runtime create "
            'failed: unable to start container process: exec: "missing": executable file not '
            "found in $PATH: unknown"
        )
    worker.event("Warning", "Failed", f"Error: {detail}", container)
    container.wait(reason, detail)


def settle_pull(worker: PodWorker, container: ContainerRuntime) -> bool:
    """A failed pull a moment old turns from ``ErrImagePull`` into ``ImagePullBackOff``."""
    container.notice_at = None
    if container.reason != "ErrImagePull":
        return False
    image = container.image
    container.wait(
        "ImagePullBackOff",
        f'Back-off pulling image "{image}": ErrImagePull: {container.message}',
    )
    worker.event("Normal", "BackOff", f'Back-off pulling image "{image}"', container)
    worker.event("Warning", "Failed", "Error: ImagePullBackOff", container)
    return True


def schedule_restart(worker: PodWorker, container: ContainerRuntime, mono: float) -> None:
    """Restart an exited container now, or wait out its crash-loop back-off."""
    if container.backoff == 0 or mono - container.backoff_since > 2 * MAX_BACKOFF:
        container.backoff = FIRST_BACKOFF
        container.backoff_since = mono
        container.behaviour = worker.resolve(container)
        try_start(worker, container, mono)
        return
    pod_ref = f"{worker.name}_{worker.namespace}({worker.uid})"
    container.wait(
        "CrashLoopBackOff",
        f"back-off {go_duration(container.backoff)} restarting failed "
        f"container={container.name} pod={pod_ref}",
    )
    worker.event(
        "Warning",
        "BackOff",
        f"Back-off restarting failed container {container.name} in pod {pod_ref}",
        container,
    )
    container.start_at = mono + container.backoff
    container.backoff_since = mono
