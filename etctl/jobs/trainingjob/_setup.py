"""Registering TrainingJob's own controller with a Manager: the membership pusher.

The job controller and the scaling machinery are set up by the generic wiring for every job kind
(the TrainingJob plugin is elastic); this adds what only TrainingJob has:
``trainingjob-hostfile`` (:class:`~etctl.jobs.trainingjob._membership.HostfilePusher`), keyed by
job, woken by the job's ConfigMaps and pods (their controller owner) and by the job itself, with
its own workers and a hard timeout per reconcile, so that a launcher whose exec hangs never
delays another job.
"""

from __future__ import annotations

from etctl.jobs.trainingjob._api import GROUP, TRAININGJOBS
from etctl.jobs.trainingjob._membership import DEFAULT_EXEC_TIMEOUT, HostfilePusher
from etctl.runtime import CONFIGMAPS, PODS, EnqueueRequestForObject, EnqueueRequestForOwner, Manager

__all__ = ["setup_hostfile_pusher"]


def setup_hostfile_pusher(
    manager: Manager,
    *,
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    max_concurrent_reconciles: int = 4,
) -> HostfilePusher:
    """Register the hostfile pusher of TrainingJobs with ``manager``.

    Raises:
        ValueError: the manager has a controller of that name already, or an option is out of
            range.
    """
    pusher = HostfilePusher(
        client=manager.client,
        cache=manager.cache,
        recorder=manager.recorder("trainingjob-controller"),  # the kind's one event source
        clock=manager.clock,
        exec_timeout=exec_timeout,
    )
    owner = EnqueueRequestForOwner(GROUP, TRAININGJOBS.kind, only_controller=True)
    (
        manager.controller("trainingjob-hostfile", pusher)
        .watches(TRAININGJOBS, EnqueueRequestForObject())
        .watches(CONFIGMAPS, owner)
        .watches(PODS, owner)
        .with_options(
            max_concurrent_reconciles=max_concurrent_reconciles,
            reconcile_timeout=pusher.reconcile_timeout,
        )
        .build()
    )
    return pusher
