"""TrainingJob's own controller: the hostfile pusher, on the launcher/worker layer.

The job controller and the scaling machinery are set up by the generic wiring for every job kind
(the TrainingJob plugin is elastic); this adds the membership pusher of the shared layer
(:class:`~etctl.jobs.launcher.MembershipPusher`) for TrainingJobs, as ``trainingjob-hostfile``: it
keeps each running launcher's ``/etc/edl/hostfile`` and ``/job/hostfile`` equal to its ConfigMap
and records the hostfile's digest on the launcher pod.
"""

from __future__ import annotations

from etctl.common import JobSettings
from etctl.jobs.launcher import (
    DEFAULT_EXEC_TIMEOUT,
    MembershipPusher,
    setup_membership_pusher,
)
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.jobs.trainingjob._layout import LAYOUT
from etctl.jobs.trainingjob._names import NAMES
from etctl.runtime import Manager

__all__ = ["DEFAULT_EXEC_TIMEOUT", "setup_hostfile_pusher"]


def setup_hostfile_pusher(
    manager: Manager,
    *,
    settings: JobSettings,
    exec_timeout: float = DEFAULT_EXEC_TIMEOUT,
    max_concurrent_reconciles: int = 8,
) -> MembershipPusher:
    """Register the hostfile pusher of TrainingJobs with ``manager`` (an operator of ``settings``).

    Raises:
        ValueError: the manager has a controller of that name already, or an option is out of
            range.
    """
    return setup_membership_pusher(
        manager,
        jobs=TRAININGJOBS,
        names=NAMES,
        layout=LAYOUT,
        settings=settings,
        exec_timeout=exec_timeout,
        max_concurrent_reconciles=max_concurrent_reconciles,
    )
