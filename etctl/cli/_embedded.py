"""The sandbox cluster: embedded API server, simulated kubelet and the operator, in one event loop.

:func:`run_sandbox` starts, in order:

1. the embedded API server (:class:`~etctl.testing.ApiServer`) on ``127.0.0.1``, serving the CRDs
   of every registered job kind, with the simulated kubelet and scheduler on a few nodes;
2. a kubeconfig for it, which kubectl and kubernetes_asyncio accept;
3. the operator: the very :class:`~etctl.runtime.Manager` that ``etctl run`` builds
   (:func:`etctl.cli._run.build_manager`), every plugin enabled, leader election off, its metrics
   and probe servers on free loopback ports unless told otherwise, and its admission webhooks
   installed as the release installs them (:mod:`etctl.cli._local_webhooks`: the configurations
   name the ``etctl-webhook-service`` Service in ``etctl-system``, whose endpoint is the webhook
   server's loopback port), so ``kubectl apply`` of a bad job is refused here exactly as on a
   cluster; it is ready once its caches have synced and, with webhooks, once its certificate is
   provisioned, its CA injected and its endpoint published;

then runs a *main* coroutine beside the operator (the demo, or waiting for a signal), and stops
everything when main returns, when ``stop`` is set, or when the operator fails.

Invariants: every task (operator, readiness wait, main, stop watcher) is named and owned by one
``asyncio.TaskGroup``, and none of them lets an exception escape into the group: each outcome is
kept and re-raised after the group, so callers see the operator's own error (a
:class:`~etctl.errors.CacheSyncError`, say), never an ``ExceptionGroup``. The operator is always
stopped gracefully before the API server goes away, and the sandbox's temporary directory (pod
sandboxes, and the kubeconfig unless a path was given) is removed on the way out.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from etctl.cli._local_webhooks import install_webhooks, publish_endpoint
from etctl.cli._registry import Registered, Registry, discover
from etctl.cli._run import build_manager
from etctl.cli._sandbox_options import OPERATOR_NAMESPACE, SandboxOptions
from etctl.common import crd_manifest
from etctl.log import get_logger
from etctl.runtime import Client, Clock, Manager, RealClock
from etctl.testing import (
    ApiServer,
    Behaviour,
    Kubelet,
    KubeletConfig,
    PodPolicy,
    WatchLatency,
)

__all__ = ["Sandbox", "run_sandbox"]

log = get_logger(__name__)

T = TypeVar("T")

_READY_POLL = 0.01  # seconds between looks at the operator's caches while it starts


@dataclass(frozen=True, slots=True)
class Sandbox:
    """A running sandbox, as handed to the main coroutine.

    Attributes:
        server: the embedded API server (with its kubelet).
        manager: the operator's manager.
        kubeconfig: the kubeconfig written for the server.
        jobs: the job kinds the operator runs.
        options: what the sandbox was started with.
    """

    server: ApiServer
    manager: Manager
    kubeconfig: Path
    jobs: tuple[Registered, ...]
    options: SandboxOptions

    @property
    def url(self) -> str:
        """The API server's URL."""
        return self.server.url

    @property
    def kubelet(self) -> Kubelet:
        """The simulated kubelet (node-level actions such as evictions)."""
        kubelet = self.server.kubelet
        assert kubelet is not None  # the sandbox always runs one
        return kubelet

    @property
    def metrics_url(self) -> str | None:
        """Where the operator serves ``/metrics`` (None when disabled)."""
        address = self.manager.metrics_address
        return None if address is None else f"http://{_host(address[0])}:{address[1]}/metrics"

    @property
    def probes_url(self) -> str | None:
        """Where the operator serves ``/healthz`` and ``/readyz`` (None when disabled)."""
        address = self.manager.probe_address
        return None if address is None else f"http://{_host(address[0])}:{address[1]}"

    @property
    def node_names(self) -> list[str]:
        """The simulated nodes' names."""
        return [node.name for node in self.kubelet.config.nodes]


def _kubelet_config(options: SandboxOptions, root: Path) -> KubeletConfig:
    """The simulated kubelet of ``options``, its pod sandboxes under ``root``."""
    return KubeletConfig.uniform(
        options.nodes,
        cpu=options.node_cpu,
        memory=options.node_memory,
        pods=options.node_pods,
        gpus=options.node_gpus,
        root=root,
    )


def _host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 - reporting a bind address, not binding
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


class _Outcome(Generic[T]):
    """What a task ended with: a value, an error, or nothing yet (never raised into the group)."""

    def __init__(self) -> None:
        self.value: T | None = None
        self.error: Exception | None = None
        self.finished = False

    async def capture(self, work: Awaitable[T]) -> None:
        try:
            self.value = await work
        except Exception as exc:  # noqa: BLE001 - kept, and raised again after the task group
            self.error = exc
        self.finished = True


async def _ready(sandbox: Sandbox, clock: Clock) -> None:
    """Return once the operator can serve: caches synced and, with webhooks, webhooks reachable.

    The manager fails by itself past its cache-sync timeout (CacheSyncError) or when its
    certificate never comes; until then, wait.
    """
    manager = sandbox.manager
    while not manager.cache.has_synced():
        await clock.sleep(_READY_POLL)
    if not manager.webhook_server.active:
        return
    while manager.webhook_server.address is None:
        await clock.sleep(_READY_POLL)
    async with await Client.from_kubeconfig(sandbox.kubeconfig) as client:
        await publish_endpoint(client, OPERATOR_NAMESPACE, manager.webhook_server.address[1])
    rotator = manager.cert_rotator
    while rotator is not None and rotator.check() is not None:
        await clock.sleep(_READY_POLL)


async def _first(tasks: Sequence[asyncio.Task[None]]) -> None:
    await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)


async def run_sandbox(
    options: SandboxOptions,
    main: Callable[[Sandbox], Awaitable[T]],
    *,
    stop: asyncio.Event | None = None,
    registry: Registry | None = None,
) -> T | None:
    """Run a sandbox and ``main(sandbox)`` in it; stop everything when main returns.

    Args:
        options: the sandbox's shape and addresses.
        main: what to do once the operator is ready (it is cancelled when ``stop`` is set).
        stop: set it to stop the sandbox early (a signal handler does).
        registry: the job kinds (every installed one by default).

    Returns:
        What ``main`` returned, or None when ``stop`` was set before main finished.

    Raises:
        CacheSyncError: the operator's caches did not sync within ``options.ready_timeout``.
        ConfigError: a job kind is unusable.
        OSError: a port is taken.
        Exception: what ``main`` or the operator raised.
    """
    registry = registry if registry is not None else discover()
    jobs = tuple(registry.plugins())
    crds = [crd_manifest(resource) for resource in registry.custom_resources()]
    stop = stop or asyncio.Event()
    clock = RealClock()
    with tempfile.TemporaryDirectory(prefix="etctl-sandbox-", ignore_cleanup_errors=True) as tmp:
        workdir = Path(tmp)
        server = ApiServer(
            port=options.port,
            clock=clock,
            crds=crds,
            kubelet=_kubelet_config(options, workdir / "pods"),
            watch_latency=WatchLatency.realistic(),  # a real cluster's timing, races included
        )
        async with server:
            if options.pod_start_delay > 0:
                assert server.kubelet is not None  # started with a kubelet configuration
                delay = Behaviour(start_delay=options.pod_start_delay)
                server.kubelet.add_policy(PodPolicy(does=delay))
            kubeconfig = server.write_kubeconfig(options.kubeconfig or workdir / "kubeconfig")
            async with await Client.from_kubeconfig(kubeconfig) as client:
                settings = options.run_settings(kubeconfig, cert_dir=workdir / "webhook-certs")
                manager = build_manager(client, settings, jobs, clock=clock)
                if options.webhooks:
                    plugins = [entry.plugin for entry in jobs if entry.plugin is not None]
                    await install_webhooks(client, plugins, OPERATOR_NAMESPACE)
                sandbox = Sandbox(server, manager, kubeconfig, jobs, options)
                return await _supervise(sandbox, main, stop, clock)


async def _supervise(
    sandbox: Sandbox,
    main: Callable[[Sandbox], Awaitable[T]],
    stop: asyncio.Event,
    clock: Clock,
) -> T | None:
    manager = sandbox.manager
    operator: _Outcome[None] = _Outcome()
    body: _Outcome[T] = _Outcome()
    async with asyncio.TaskGroup() as group:
        running = group.create_task(operator.capture(manager.run()), name="sandbox:operator")
        stopping = group.create_task(_wait(stop), name="sandbox:stop")
        ready = group.create_task(_ready(sandbox, clock), name="sandbox:ready")
        others: list[asyncio.Task[None]] = [stopping, ready]
        try:
            await _first([running, stopping, ready])
            if ready.done() and not running.done() and not stop.is_set():
                log.info("sandbox ready", url=sandbox.url, kubeconfig=str(sandbox.kubeconfig))
                work = group.create_task(body.capture(main(sandbox)), name="sandbox:main")
                others.append(work)
                await _first([running, stopping, work])
        finally:
            for task in others:
                task.cancel()
            manager.stop()
    if operator.error is not None:
        raise operator.error
    if body.error is not None:
        raise body.error
    return body.value if body.finished else None


async def _wait(event: asyncio.Event) -> None:
    await event.wait()
