"""TrainingJob's own controller: the hostfile pusher, on the launcher/worker layer.

The job controller and the scaling machinery are set up by the generic wiring for every job kind
(the TrainingJob plugin is elastic); this adds the membership pusher of the shared layer
(:class:`~etctl.jobs.launcher.MembershipPusher`) for TrainingJobs, as ``trainingjob-hostfile``: it
keeps each running launcher's ``/etc/edl/hostfile`` and ``/job/hostfile`` equal to its ConfigMap
and records the hostfile's digest on the launcher pod.
"""

from __future__ import annotations

from etctl.common import JobSettings, Recorder
from etctl.jobs.launcher import (
    DEFAULT_EXEC_TIMEOUT,
    MembershipPusher,
    register_membership_pusher,
)
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._layout import LAYOUT
from etctl.jobs.trainingjob._names import NAMES
from etctl.runtime import CacheReader, Client, Clock, Manager

__all__ = ["DEFAULT_EXEC_TIMEOUT", "HostfilePusher", "setup_hostfile_pusher"]


class HostfilePusher(MembershipPusher):
    """The membership pusher of TrainingJobs (their names and launcher layout)."""

    def __init__(
        self,
        *,
        client: Client,
        cache: CacheReader,
        recorder: Recorder,
        clock: Clock,
        exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    ) -> None:
        super().__init__(
            jobs=TRAININGJOBS,
            names=NAMES,
            layout=LAYOUT,
            client=client,
            cache=cache,
            recorder=recorder,
            clock=clock,
            exec_timeout=exec_timeout,
        )


def setup_hostfile_pusher(
    manager: Manager,
    *,
    settings: JobSettings,
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    max_concurrent_reconciles: int = 8,
) -> HostfilePusher:
    """Register the hostfile pusher of TrainingJobs with ``manager`` (an operator of ``settings``).

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
    register_membership_pusher(
        manager, pusher, max_concurrent_reconciles=max_concurrent_reconciles, settings=settings
    )
    return pusher
