"""The membership pusher: a running launcher's live copies follow its job's ConfigMap.

The ConfigMap (``<job>-config``) is the source of truth of what the launcher should see: the kind
renders it from the job's members. The launcher reads *copies* of some of its files from writable
emptyDirs (the layout's pushed live files, :class:`~etctl.jobs.launcher.LauncherLayout`), which
its init container made at start; a ConfigMap volume is read-only and follows changes only after
the kubelet's sync period. One :class:`MembershipPusher` per kind keeps the copies current, off the
job's reconcile path:

* keyed by job, on its own workqueue and workers (``max_concurrent_reconciles``), so a launcher
  whose exec hangs holds one worker for at most ``exec_timeout`` seconds and never the reconcile
  of any job; the reconcile itself has a hard timeout too;
* woken by the job, and by its ConfigMap and pods changing (their controller owner is the job);
* when the launcher runs and the SHA-256 of the ConfigMap's ``digest_keys`` files
  (:meth:`~etctl.jobs.launcher.LauncherLayout.digest_of`) differs from the one recorded on the
  launcher pod (annotation ``etctl.io/hostfile-sha256``), it writes every pushed file through
  ``pods/exec`` atomically (``cat`` into a temporary file in the same directory, ``chmod`` to the
  copy's mode, then ``mv`` over the old one: a reader sees the old file or the new one, never half
  of one, and a script stays executable) and then records the digest with a patch guarded by the
  pod's ``resourceVersion``;
* a restarted launcher (a new pod) has no digest: it gets the current content at once (its init
  container copied the ConfigMap, which may have changed since).

The scaling machinery reads the recorded digest to know that a membership change reached the
launcher: a scale-in deletes workers only after the files without them are confirmed here. A failed
exec is retried with backoff (and reported as a Warning Event ``HostfilePushFailed``); the digest is
recorded only after every file was written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.common import ControllerContext, first_container_name
from etctl.errors import Conflict, EtctlError, NotFound, TransportError
from etctl.jobs.launcher._hostfile import PUSHED_ANNOTATION
from etctl.jobs.launcher._launcher import LauncherLayout, LiveFile
from etctl.jobs.launcher._names import LauncherNames
from etctl.log import get_logger
from etctl.runtime import (
    CONFIGMAPS,
    PODS,
    CacheReader,
    Client,
    Clock,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    Manager,
    Request,
    Result,
    objects,
    podview,
)

__all__ = [
    "DEFAULT_EXEC_TIMEOUT",
    "MembershipPusher",
    "register_membership_pusher",
    "setup_membership_pusher",
    "write_command",
]

log = get_logger(__name__)

DEFAULT_EXEC_TIMEOUT = 30.0
"""Seconds one exec into a launcher may take."""


def write_command(path: str, mode: int = 0o644) -> list[str]:
    """The argv that replaces ``path`` atomically with its standard input, with ``mode``."""
    directory, _, name = path.rpartition("/")
    temporary = f"{directory}/.{name}.etctl"
    return [
        "sh",
        "-c",
        f"cat > {temporary} && chmod {mode:o} {temporary} && mv {temporary} {path}",
    ]


class MembershipPusher:
    """Pushes each job's ConfigMap files into its running launcher (see the module docstring).

    Args:
        context: the kind's controller context (its job resource, Events source, the writes that
            read back, the queue order).
        names: how the kind names its ConfigMap and launcher.
        layout: the kind's launcher layout (the files to push, the digest's key).
        client: the API client (execs).
        cache: the informer cache of the jobs, pods and ConfigMaps.
        clock: measures exec durations.
        exec_timeout: seconds one exec may take.
    """

    def __init__(
        self,
        context: ControllerContext,
        *,
        names: LauncherNames,
        layout: LauncherLayout,
        client: Client,
        cache: CacheReader,
        clock: Clock,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    ) -> None:
        if exec_timeout <= 0:
            msg = f"exec_timeout must be positive, got {exec_timeout}"
            raise ValueError(msg)
        self.context = context
        self.jobs = context.jobs
        self._names = names
        self._layout = layout
        self._client = client
        self._cache = cache
        self._writer = context.writes
        self._recorder = context.recorder
        self._clock = clock
        self.exec_timeout = exec_timeout

    @property
    def reconcile_timeout(self) -> float:
        """A hard bound on one reconcile: an exec per pushed file, and a patch."""
        return (len(self._layout.pushed) + 1) * self.exec_timeout

    async def reconcile(self, request: Request) -> Result:
        """Bring one job's launcher copies up to date."""
        namespace, job = request.namespace, request.name
        config = self._cache.get(CONFIGMAPS, self._names.config_of(job), namespace=namespace)
        launcher = await self._writer.read(PODS, namespace, self._names.launcher_of(job))
        if config is None or launcher is None:
            return Result()
        owner = objects.controller_of(launcher)
        if (
            owner is None
            or owner.get("kind") != self.jobs.kind
            or objects.controller_ref(config) != owner.get("uid")
            or objects.is_terminating(launcher)
            or not podview.container_running(launcher, first_container_name(launcher))
        ):
            return Result()
        data = config.get("data")
        files: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
        wanted = self._layout.digest_of(files)
        if objects.annotations(launcher).get(PUSHED_ANNOTATION) == wanted:
            return Result()
        pod, container = objects.name(launcher), first_container_name(launcher)
        try:
            for copy in self._layout.pushed:
                text = str(files.get(copy.key) or "")
                await self._push(namespace, pod, container, copy, text)
        except _PushFailed as failure:
            self._warn(namespace, job, f"hostfile of {pod} not updated: {failure}")
            raise
        annotation = {"metadata": {"annotations": {PUSHED_ANNOTATION: wanted}}}
        try:
            await self._writer.patch(PODS, launcher, annotation)
        except (Conflict, NotFound):
            return Result(requeue_after=1.0)  # the pod changed: check it again
        members = str(files.get(self._layout.digest_keys[0]) or "").count("\n")
        log.info("hostfile pushed", launcher=pod, digest=wanted[:12], members=members)
        return Result()

    async def _push(
        self, namespace: str, pod: str, container: str, copy: LiveFile, text: str
    ) -> None:
        path = copy.path
        started = self._clock.monotonic()
        try:
            result = await self._client.exec(
                namespace,
                pod,
                write_command(path, copy.mode),
                container=container or None,
                stdin=text.encode(),
                timeout=self.exec_timeout,
            )
        except TransportError as exc:
            raise _PushFailed(str(exc)) from exc
        finally:
            self.context.exec_took("hostfile", self._clock.monotonic() - started)
        if result.exit_code != 0:
            stderr = result.stderr.decode(errors="replace").strip()[-256:]
            msg = f"writing {path} exited with {result.exit_code}: {stderr}"
            raise _PushFailed(msg)

    def _warn(self, namespace: str, job: str, message: str) -> None:
        owner = self._cache.get(self.jobs, job, namespace=namespace)
        if owner is not None:
            self._recorder.event(owner, "Warning", "HostfilePushFailed", message)


class _PushFailed(EtctlError):
    """An exec that should have written a file did not (retried with backoff)."""


def setup_membership_pusher(
    manager: Manager,
    context: ControllerContext,
    *,
    names: LauncherNames,
    layout: LauncherLayout,
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    max_concurrent_reconciles: int = 8,
) -> MembershipPusher:
    """Build the membership pusher of the kind of ``context`` and register it with ``manager``.

    Its Events come from the kind's job controller's source (``<kind>-controller``); its pods and
    ConfigMaps are those the operator of ``context.settings`` could own.

    Raises:
        ValueError: the manager has a controller of that name already, or an option is out of
            range.
    """
    pusher = MembershipPusher(
        context,
        names=names,
        layout=layout,
        client=manager.client,
        cache=manager.cache,
        clock=manager.clock,
        exec_timeout=exec_timeout,
    )
    return register_membership_pusher(
        manager, pusher, max_concurrent_reconciles=max_concurrent_reconciles
    )


def register_membership_pusher(
    manager: Manager,
    pusher: MembershipPusher,
    *,
    max_concurrent_reconciles: int = 8,
) -> MembershipPusher:
    """Register ``pusher`` with ``manager`` as the controller ``<kind>-hostfile``.

    It is keyed by job, woken by the job's ConfigMaps and pods (their controller owner) and by the
    job itself, with its own workers and a hard timeout per reconcile, so that a launcher whose
    exec hangs never delays another job. Its pod and ConfigMap informers are the job controller's:
    they select what the operator of its context's settings could own. Running jobs go first (the
    job controller's queue order).

    Raises:
        ValueError: the manager has a controller of that name already, or an option is out of
            range.
    """
    jobs = pusher.jobs
    owner = EnqueueRequestForOwner(jobs.group, jobs.kind, only_controller=True)
    selector = pusher.context.settings.child_selector
    (
        manager.controller(f"{jobs.kind.lower()}-hostfile", pusher)
        .watches(jobs, EnqueueRequestForObject())
        .watches(CONFIGMAPS, owner, label_selector=selector)
        .watches(PODS, owner, label_selector=selector)
        .with_options(
            max_concurrent_reconciles=max_concurrent_reconciles,
            reconcile_timeout=pusher.reconcile_timeout,
            priority=pusher.context.priority,
        )
        .build()
    )
    return pusher
