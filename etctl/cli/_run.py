"""``etctl run``: the operator, one JobController per enabled job plugin under one Manager.

The command validates every setting before touching the network (bad values exit 2 with the flag
or variable named), picks the plugins (``--jobs``, default every installed one), connects (the
pod's service account, else ``--kubeconfig``/``$KUBECONFIG``/``~/.kube/config``, with
``--context``) and runs the :class:`~etctl.runtime.Manager` until SIGTERM or SIGINT.

Exit statuses: 0 after a complete graceful shutdown (in-flight reconciles finished, Events sent,
lease released); 1 when the operator cannot work, always with the reason logged: the cache did not
sync (a missing CRD or a forbidden list shows up here as the reflector's last error, instead of an
operator idling silently), the lease was lost, the API server is unreachable, or the shutdown was
incomplete (its grace period ran out, or a second signal cut it short, while reconciles still ran
or Events were unsent: they were cancelled or dropped, as controller-runtime reports with an
error); 2 for usage errors.

:func:`serve` is the same operator without the process concerns (argument parsing, logging setup,
signal handlers, exit statuses), for embedding and for tests; :func:`build_manager` assembles it
without running it (``etctl sandbox`` runs it beside the embedded API server). The ``etctl run``
process also stops exporting prometheus-client's ``*_created`` series, which controller-runtime
does not have, and once started freezes its heap for the cycle collector
(:func:`freeze_startup_heap`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
from collections.abc import Sequence
from typing import Any

from etctl.cli._registry import Registered, discover
from etctl.cli._settings import RunSettings, SettingsError, add_run_arguments, settings_from
from etctl.cli._webhook_settings import webhook_options
from etctl.common import JobSettings, setup_job_controller
from etctl.errors import (
    CacheSyncError,
    ConfigError,
    EtctlError,
    LeaderElectionLost,
    ShutdownIncomplete,
)
from etctl.log import configure, get_logger
from etctl.runtime import (
    SERVICE_ACCOUNT_NAMESPACE,
    CacheOptions,
    Client,
    Clock,
    Manager,
    ManagerOptions,
    WebhookServerOptions,
)

__all__ = [
    "add_parser",
    "build_manager",
    "command",
    "freeze_startup_heap",
    "job_settings",
    "manager_options",
    "serve",
]

log = get_logger(__name__)

_EPILOG = """\
Every flag has an environment variable (shown in its help); a flag wins over its variable.
Exit status: 0 after a complete graceful shutdown on SIGTERM or SIGINT, 1 when the operator cannot
run or its shutdown had to cancel work or drop Events (the reason is logged), 2 for a bad flag or
variable.
"""


def add_parser(commands: Any, summary: str) -> argparse.ArgumentParser:
    """Declare ``etctl run`` on the subcommands of the ``etctl`` parser.

    ``summary`` is its line in ``etctl --help``.
    """
    parser: argparse.ArgumentParser = commands.add_parser(
        "run",
        help=summary,
        description="Run the operator: a JobController for every enabled job plugin.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=command)
    return parser


def _pod_namespace() -> str:
    """The operator's own namespace in a pod, ``""`` outside one."""
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def manager_options(settings: RunSettings) -> ManagerOptions:
    """The Manager's options from the run settings.

    Raises:
        ConfigError: leader election, or webhook certificates the operator keeps itself, are on
            outside a pod and no namespace is named (said here in the flags' terms rather than
            the library options').
    """
    if settings.leader_elect and not settings.leader_election_namespace and not _pod_namespace():
        msg = (
            "--leader-elect outside a pod needs --leader-election-namespace "
            "(or ETCTL_LEADER_ELECTION_NAMESPACE): there is no pod namespace to put the "
            "Lease in"
        )
        raise ConfigError(msg)
    webhook, rotation = (
        webhook_options(settings, _pod_namespace)
        if settings.webhooks
        else (WebhookServerOptions(), None)
    )
    return ManagerOptions(
        metrics_bind_address=settings.metrics_bind_address,
        metrics_secure=settings.metrics_secure,
        metrics_cert_dir=settings.metrics_cert_path or None,
        metrics_cert_name=settings.metrics_cert_name,
        metrics_key_name=settings.metrics_cert_key,
        health_probe_bind_address=settings.health_probe_bind_address,
        leader_election=settings.leader_elect,
        leader_election_id=settings.leader_election_id,
        leader_election_namespace=settings.leader_election_namespace or None,
        lease_duration=settings.leader_elect_lease_duration,
        renew_deadline=settings.leader_elect_renew_deadline,
        retry_period=settings.leader_elect_retry_period,
        graceful_shutdown_timeout=settings.graceful_shutdown_timeout,
        cache_sync_timeout=settings.cache_sync_timeout,
        cache=CacheOptions(namespaces=list(settings.namespaces) or None),
        webhook=webhook,
        cert_rotation=rotation,
    )


def job_settings(settings: RunSettings) -> JobSettings:
    """The operator-wide settings plugins read."""
    return JobSettings(
        cluster_domain=settings.cluster_domain,
        gang_scheduler=settings.gang_scheduler,
        member_batch=settings.member_batch_period,
    )


async def _client(settings: RunSettings) -> Client:
    if settings.kubeconfig:
        return await Client.from_kubeconfig(settings.kubeconfig, settings.context or None)
    return await Client.auto(context=settings.context or None)


def build_manager(
    client: Client,
    settings: RunSettings,
    entries: Sequence[Registered],
    *,
    clock: Clock | None = None,
) -> Manager:
    """The operator's Manager, not started: a JobController for every one of ``entries``.

    This is the one place that assembles the operator, so ``etctl run`` and ``etctl sandbox`` run
    exactly the same thing.

    Args:
        client: the API client the manager shares (its owner closes it).
        settings: validated run settings (the connection settings are not read here).
        entries: the registered job kinds to run a JobController for (with a plugin each).
        clock: the clock of every wait (real time by default).

    Raises:
        ConfigError: an entry has no controller, or the options are unusable.
    """
    manager = Manager(client, options=manager_options(settings), clock=clock)
    scaled = None
    for entry in entries:
        if entry.plugin is None:
            msg = f"job kind {entry.name!r} publishes CRDs only; it has no controller"
            raise ConfigError(msg)
        setup_job_controller(
            manager,
            entry.plugin,
            settings=job_settings(settings),
            name=entry.name,
            max_concurrent_reconciles=settings.max_concurrent_reconciles,
        )
        if settings.webhooks:
            # Here, not at the top: an operator without webhooks never loads the admission code.
            from etctl.common import ScaledJobs, setup_job_webhooks  # noqa: PLC0415

            scaled = scaled or ScaledJobs(manager.cache)
            setup_job_webhooks(manager.webhook_server, entry.plugin, jobs=scaled)
    return manager


async def serve(
    settings: RunSettings,
    entries: Sequence[Registered],
    *,
    clock: Clock | None = None,
    handle_signals: bool = False,
    freeze_heap: bool = False,
) -> None:
    """Run the operator for the job kinds ``entries`` until it is stopped.

    Args:
        settings: validated run settings.
        entries: the registered job kinds to run a JobController for (with a plugin each).
        clock: the clock of every wait (real time by default).
        handle_signals: install SIGTERM/SIGINT handlers for a graceful shutdown (processes only).
        freeze_heap: once started, move what the process holds then out of the cycle
            collector's reach (:func:`freeze_startup_heap`; processes only).

    Raises:
        ConfigError: no usable cluster configuration, or unusable options.
        CacheSyncError: the cache could not sync (missing CRD, forbidden list...).
        LeaderElectionLost: this process stopped leading.
        ShutdownIncomplete: the shutdown cancelled reconciles or dropped Events.
    """
    manager_options(settings)  # unusable settings are refused before anything is connected
    async with await _client(settings) as client:
        manager = build_manager(client, settings, entries, clock=clock)
        if freeze_heap:
            manager.add_runnable(
                "freeze-startup-heap", freeze_startup_heap, needs_leader_election=False
            )
        log.info(
            "starting operator",
            jobs=[entry.name for entry in entries],
            namespaces=list(settings.namespaces) or "all",
            leader_elect=settings.leader_elect,
        )
        await manager.run(handle_signals=handle_signals)
    log.info("operator stopped")


async def freeze_startup_heap() -> None:
    """Collect once, then leave every object the process holds out of later collections.

    Run when the manager has started: the modules, the kinds' models and schemas, the plugins, the
    caches as synced. None of it is garbage, and each full collection walked all of it (some
    30 ms in an operator with the TFJob webhooks) whatever request or reconcile was under way,
    webhook reviews included. Frozen objects are still freed when their last reference goes; only
    the cycle collector stops walking them. Process-wide, so only the ``etctl run`` process does
    it (an embedding program keeps its collector as it is).
    """
    collected = gc.collect()
    gc.freeze()
    log.info("startup heap frozen", objects=gc.get_freeze_count(), collected=collected)


def _usage_error(message: str) -> int:
    print(f"etctl run: error: {message}", file=sys.stderr)  # noqa: T201
    return 2


def command(args: argparse.Namespace) -> int:
    """Run ``etctl run``; returns the exit status."""
    try:
        settings = settings_from(args, os.environ)
    except SettingsError as exc:
        return _usage_error(str(exc))
    try:
        entries = discover().plugins(settings.jobs or None)
        if not entries:
            return _usage_error("no job plugins are installed")
        configure(fmt=settings.log_format, level=settings.log_level)
        # controller-runtime exports no ``*_created`` series. The switch is process-wide, so the
        # binary flips it here; the library never does (an embedding program keeps its choice).
        # (Imported here: after etctl.runtime deferred the package, see its _metrics module.)
        from prometheus_client.metrics import disable_created_metrics  # noqa: PLC0415

        disable_created_metrics()  # type: ignore[no-untyped-call]
        asyncio.run(serve(settings, entries, handle_signals=True, freeze_heap=True))
    except ConfigError as exc:
        return _usage_error(str(exc))
    except OSError as exc:
        # A metrics or probe port in use: a setting to change, not a bug, so no traceback.
        log.error("cannot serve", error=exc.strerror or str(exc))
        return 1
    except EtctlError as exc:
        log.error(_FAILURES.get(type(exc), "operator failed"), error=str(exc))
        return 1
    return 0


_FAILURES: dict[type[EtctlError], str] = {
    CacheSyncError: "the cache did not sync: are the CRDs installed, and may RBAC list them?",
    LeaderElectionLost: "leadership lost; exiting so that a new process can stand",
    ShutdownIncomplete: "the graceful shutdown ran out of time: work was cancelled or lost",
}
