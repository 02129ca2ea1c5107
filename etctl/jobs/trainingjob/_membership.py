"""The membership pusher: the live hostfile in each running launcher follows its ConfigMap.

The ConfigMap ``<job>-config`` is the source of truth (rendered from ``status.currentWorkers``).
The launcher reads its *copy*, ``/etc/edl/hostfile`` (and DeepSpeed's ``/job/hostfile``), which its
init container made at start; a ConfigMap volume is read-only and follows changes late. This
controller keeps the copy current, off the job's reconcile path:

* keyed by job, on its own workqueue and workers (``max_concurrent_reconciles``), so a launcher
  whose exec hangs holds one worker for at most ``exec_timeout`` seconds and never the reconcile
  of any job; the reconcile itself has a hard timeout too;
* woken by the job's ConfigMap and launcher pod changing (their owner is the job);
* when the launcher runs and the SHA-256 of the ConfigMap's hostfile differs from the one recorded
  on the launcher pod (annotation ``etctl.io/hostfile-sha256``), it writes both files through
  ``pods/exec`` atomically (``cat`` into a temporary file in the same directory, then ``mv`` over
  the old one: a reader sees the old file or the new one, never half of one) and then records the
  digest with a patch guarded by the pod's ``resourceVersion``;
* a restarted launcher (a new pod) has no digest: it gets the current content at once (its init
  container copied the ConfigMap, which may have changed since).

The scaling machinery reads the recorded digest to know that a membership change reached the
launcher (:mod:`~etctl.jobs.trainingjob._scaling`): a scale-in deletes workers only after the
hostfile without them is confirmed here. A failed exec is retried with backoff; the digest is
recorded only after both files were written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.common import EXEC_DURATION, GuardedWriter, Recorder, first_container_name
from etctl.errors import Conflict, EtctlError, NotFound, TransportError
from etctl.jobs.trainingjob import _hostfile as hf
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._names import config_name, launcher_name
from etctl.log import get_logger
from etctl.runtime import (
    CONFIGMAPS,
    PODS,
    CacheReader,
    Client,
    Clock,
    ObjectView,
    Request,
    Result,
    objects,
)

__all__ = ["DEFAULT_EXEC_TIMEOUT", "HostfilePusher", "write_command"]

log = get_logger(__name__)

DEFAULT_EXEC_TIMEOUT = 30.0
"""Seconds one exec into a launcher may take."""

_KIND = "TrainingJob"


def write_command(path: str) -> list[str]:
    """The argv that replaces ``path`` atomically with its standard input (mode 0644)."""
    directory, _, name = path.rpartition("/")
    temporary = f"{directory}/.{name}.etctl"
    return [
        "sh",
        "-c",
        f"cat > {temporary} && chmod 644 {temporary} && mv {temporary} {path}",
    ]


def _running(pod: ObjectView, container: str) -> bool:
    """The pod runs and so does ``container`` (an exec into anything else is refused)."""
    status = pod.get("status")
    if not isinstance(status, Mapping) or status.get("phase") != "Running":
        return False
    statuses = status.get("containerStatuses")
    for entry in statuses if isinstance(statuses, list) else []:
        if isinstance(entry, Mapping) and entry.get("name") == container:
            state = entry.get("state")
            return isinstance(state, Mapping) and "running" in state
    return False


class HostfilePusher:
    """Pushes each job's ConfigMap hostfiles into its running launcher (see the module docstring).

    Args:
        client: the API client (execs and the digest patch).
        cache: the informer cache of TrainingJobs, pods and ConfigMaps.
        recorder: where Events go.
        clock: measures exec durations.
        exec_timeout: seconds one exec may take.
    """

    def __init__(
        self,
        *,
        client: Client,
        cache: CacheReader,
        recorder: Recorder,
        clock: Clock,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    ) -> None:
        if exec_timeout <= 0:
            msg = f"exec_timeout must be positive, got {exec_timeout}"
            raise ValueError(msg)
        self._client = client
        self._cache = cache
        self._writer = GuardedWriter(client, cache)
        self._recorder = recorder
        self._clock = clock
        self.exec_timeout = exec_timeout

    @property
    def reconcile_timeout(self) -> float:
        """A hard bound on one reconcile: two execs and a patch."""
        return 3 * self.exec_timeout

    async def reconcile(self, request: Request) -> Result:
        """Bring one job's launcher copy of the hostfile up to date."""
        namespace, job = request.namespace, request.name
        config = self._cache.get(CONFIGMAPS, config_name(job), namespace=namespace)
        launcher = await self._writer.read(PODS, namespace, launcher_name(job))
        if config is None or launcher is None:
            return Result()
        owner = objects.controller_of(launcher)
        if (
            owner is None
            or owner.get("kind") != _KIND
            or objects.controller_ref(config) != owner.get("uid")
            or objects.is_terminating(launcher)
            or not _running(launcher, first_container_name(launcher))
        ):
            return Result()
        data = config.get("data")
        files: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
        content = str(files.get(hf.HOSTFILE_KEY) or "")
        wanted = hf.digest(content)
        if objects.annotations(launcher).get(hf.PUSHED_ANNOTATION) == wanted:
            return Result()
        deepspeed = str(files.get(hf.DEEPSPEED_KEY) or "")
        pod, container = objects.name(launcher), first_container_name(launcher)
        try:
            await self._push(namespace, pod, container, hf.HOSTFILE, content)
            await self._push(namespace, pod, container, hf.DEEPSPEED_HOSTFILE, deepspeed)
        except _PushFailed as failure:
            self._warn(namespace, job, f"hostfile of {pod} not updated: {failure}")
            raise
        annotation = {"metadata": {"annotations": {hf.PUSHED_ANNOTATION: wanted}}}
        try:
            await self._writer.patch(PODS, launcher, annotation)
        except (Conflict, NotFound):
            return Result(requeue_after=1.0)  # the pod changed: check it again
        log.info("hostfile pushed", launcher=pod, digest=wanted[:12], members=content.count("\n"))
        return Result()

    async def _push(self, namespace: str, pod: str, container: str, path: str, text: str) -> None:
        started = self._clock.monotonic()
        try:
            result = await self._client.exec(
                namespace,
                pod,
                write_command(path),
                container=container or None,
                stdin=text.encode(),
                timeout=self.exec_timeout,
            )
        except TransportError as exc:
            raise _PushFailed(str(exc)) from exc
        finally:
            elapsed = self._clock.monotonic() - started
            EXEC_DURATION.labels(kind=_KIND, purpose="hostfile").observe(elapsed)
        if result.exit_code != 0:
            stderr = result.stderr.decode(errors="replace").strip()[-256:]
            msg = f"writing {path} exited with {result.exit_code}: {stderr}"
            raise _PushFailed(msg)

    def _warn(self, namespace: str, job: str, message: str) -> None:
        owner = self._cache.get(TRAININGJOBS, job, namespace=namespace)
        if owner is not None:
            self._recorder.event(owner, "Warning", "HostfilePushFailed", message)


class _PushFailed(EtctlError):
    """An exec that should have written a hostfile did not (retried with backoff)."""
