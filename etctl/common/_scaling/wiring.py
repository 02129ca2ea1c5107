"""Registering the scaling machinery of one elastic job kind with a Manager.

:func:`setup_scaling` registers three controllers, each fed by the manager's shared informers:

* ``<kind>-scalein-adoption`` and ``<kind>-scaleout-adoption``
  (:class:`~etctl.common._scaling.adoption.ScalerAdoption`): keyed by scaler; woken by the scaler,
  and by its job appearing or changing (through :data:`~etctl.common._scaling.adoption.
  SELECTOR_INDEX`);
* ``<kind>-scaling`` (:class:`~etctl.common._scaling.controller.ScalingController`): keyed by job;
  woken by the job (status writes included: the membership and the scalers' turn are recorded
  there), by the pods it controls, and by the scalers naming it.

The scaler index is added to the manager's cache here, once for every elastic kind (each kind's
controllers keep the scalers that name it). Every controller runs only while the operator leads,
like the job controller.
"""

from __future__ import annotations

import contextlib
from typing import Any

from etctl.common._plugin import JobPlugin, JobSettings
from etctl.common._priority import progress_first
from etctl.common._scaling.adoption import SELECTOR_INDEX, ScalerAdoption, selector_index
from etctl.common._scaling.api import SCALEINS, SCALEOUTS
from etctl.common._scaling.controller import ScalingController
from etctl.runtime import (
    PODS,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    Manager,
)

__all__ = ["setup_scaling"]


def setup_scaling(
    manager: Manager,
    plugin: JobPlugin[Any],
    *,
    settings: JobSettings | None = None,
    max_concurrent_reconciles: int = 16,
) -> ScalingController:
    """Register the adoption and scaling controllers of ``plugin``'s kind with ``manager``.

    Args:
        manager: the manager (not started yet).
        plugin: the elastic job kind.
        settings: operator-wide settings.
        max_concurrent_reconciles: jobs whose scalers advance at once (a script holds a worker
            for at most its timeout).

    Returns:
        The scaling controller.

    Raises:
        ConfigError: the plugin is not elastic.
        ValueError: the manager has controllers of these names already.
    """
    settings = settings or JobSettings()
    jobs = plugin.resource.resource()
    kind = plugin.resource.kind.lower()
    # The job controller's recorder: one event source per kind. Two recorders would name events
    # from the same clock reading and could overwrite each other's.
    recorder = manager.recorder(f"{kind}-controller")
    for res in (SCALEINS, SCALEOUTS):
        # Another elastic kind may have registered it already: the name is reserved for it.
        with contextlib.suppress(ValueError):
            manager.cache.add_indexers(res, {SELECTOR_INDEX: selector_index})
    scaling = ScalingController(
        plugin,
        client=manager.client,
        cache=manager.cache,
        recorder=recorder,
        clock=manager.clock,
        settings=settings,
    )
    for res in (SCALEINS, SCALEOUTS):
        adoption = ScalerAdoption(
            res,
            jobs,
            client=manager.client,
            cache=manager.cache,
            recorder=recorder,
            clock=manager.clock,
        )
        (
            manager.controller(f"{kind}-{res.kind.lower()}-adoption", adoption)
            .for_(res)
            .watches(jobs, EnqueueRequestsFromMapFunc(adoption.requests_for_job))
            .with_options(max_concurrent_reconciles=2)
            .build()
        )
    builder = (
        manager.controller(f"{kind}-scaling", scaling)
        # A job's updates and its pods' changes gather for the member batch period (a new job
        # is taken up at once): its pods start together, and the job controller's status writes
        # in between would otherwise each have the members judged from a part of them.
        .watches(
            jobs, EnqueueRequestForObject(), batch=settings.member_batch, batch_creations=False
        )
        .watches(
            PODS,
            EnqueueRequestForOwner(jobs.group, jobs.kind, only_controller=True),
            label_selector=settings.child_selector,
            batch=settings.member_batch,
        )
    )
    for res in (SCALEINS, SCALEOUTS):
        builder.watches(res, EnqueueRequestsFromMapFunc(scaling.requests_for_scaler))
    builder.with_options(
        max_concurrent_reconciles=max_concurrent_reconciles,
        priority=progress_first(manager.cache, jobs),
    ).build()
    return scaling
