"""Registering JobControllers with a Manager: which informers feed them, and how.

:func:`setup_job_controller` builds the :class:`~etctl.common.JobController` of one
plugin on a :class:`~etctl.runtime.Manager` (its client, cache, clock and an event recorder
named ``<kind>-controller``) and registers a controller with these watches:

* the job kind itself (``for_``): every change of a job enqueues it;
* pods, and services when the plugin builds them, and every resource of the plugin's
  ``owned_resources``, and the PodGroups of the configured gang scheduler: each through the
  controller's :class:`~etctl.common._tracking.ChildEventHandler`, which enqueues the controlling
  job. Their informers select what the operator
  could own (:attr:`~etctl.common.JobSettings.child_selector`, its ``operator-name`` label; not
  PodGroups, which never carried it), so other teams' pods, Secrets and ConfigMaps never reach the
  operator's memory;
* PriorityClasses when gang scheduling is on: read for ``minResources``, never enqueued; watched so
  that their informer exists and has synced before the first reconcile.

Every informer comes from the manager's shared cache, and the controller waits for all of them
before it reconciles: a resource that cannot be listed (a PodGroup CRD that is not installed while
gang scheduling is configured, RBAC that forbids it) makes the manager fail at start with the
reason, never idle silently.

An elastic plugin (:class:`~etctl.common.ScalesElastically`) also gets its scaling machinery
(:func:`~etctl.common._scaling.wiring.setup_scaling`), and a plugin with controllers of its own
(:class:`~etctl.common.RunsControllers`) registers them here, with the kind's
:class:`~etctl.common.ControllerContext`.
"""

from __future__ import annotations

from typing import Any

from etctl.common._context import ControllerContext
from etctl.common._jobcontroller import JobController
from etctl.common._plugin import JobPlugin, JobSettings
from etctl.common._priority import progress_first
from etctl.common._scaling.wiring import setup_scaling
from etctl.runtime import EnqueueRequestsFromMapFunc, Manager, ObjectView, Request

__all__ = ["DEFAULT_JOB_WORKERS", "setup_job_controller"]

DEFAULT_JOB_WORKERS = 16
"""Jobs of one kind reconciled at once by default.

controller-runtime's default is one worker per controller: with a burst of new jobs, each job's
next step then waits for a pass over all the others, and the operator spends its time waiting for
round trips instead of working. A worker is a coroutine here (it costs nothing while it waits on the
API server), and sixteen keep the API server busy without holding a running job's next reconcile
behind more than a moment of other work (``bench/jobs_at_scale.py``).
"""


def _nothing(_obj: ObjectView) -> list[Request]:
    return []


def setup_job_controller(
    manager: Manager,
    plugin: JobPlugin[Any],
    *,
    settings: JobSettings | None = None,
    name: str | None = None,
    max_concurrent_reconciles: int = DEFAULT_JOB_WORKERS,
    reconcile_timeout: float | None = None,
) -> JobController[Any]:
    """Build the JobController of ``plugin`` and register it with ``manager``.

    Args:
        manager: the manager (not started yet).
        plugin: the job kind.
        settings: operator-wide settings (operator name, cluster domain, gang scheduler).
        name: the controller's name; ``<kind lower>`` by default.
        max_concurrent_reconciles: jobs reconciled at once (one worker per job at a time;
            :data:`DEFAULT_JOB_WORKERS` by default).
        reconcile_timeout: cancel a reconcile after this many seconds (none by default).

    Returns:
        The JobController (its ledger and settings, for inspection).

    Raises:
        ConfigError: the plugin or the settings are unusable (an unknown gang scheduler...).
        ValueError: the manager has a controller of that name already.
    """
    kind = plugin.resource.kind
    controller = JobController(
        plugin,
        client=manager.client,
        cache=manager.cache,
        recorder=manager.recorder(f"{kind.lower()}-controller"),
        clock=manager.clock,
        settings=settings,
    )
    builder = manager.controller(name or kind.lower(), controller).for_(controller.resource)
    for res in controller.child_resources:
        builder.watches(
            res,
            controller.child_handler(res),
            label_selector=controller.child_label_selector(res),
        )
    for res in controller.lookup_resources:
        builder.watches(res, EnqueueRequestsFromMapFunc(_nothing))
    builder.with_options(
        max_concurrent_reconciles=max_concurrent_reconciles,
        reconcile_timeout=reconcile_timeout,
        priority=progress_first(manager.cache, controller.resource),
    ).build()
    capabilities = controller.capabilities
    if capabilities.elastic is not None:
        setup_scaling(manager, plugin, settings=controller.settings)
    if capabilities.controllers is not None:
        context = ControllerContext.of(manager, controller.resource, controller.settings)
        capabilities.controllers.setup_controllers(manager, context)
    return controller
