"""What the framework hands a kind's own controllers when the operator is wired.

A plugin that :class:`~etctl.common.RunsControllers` (TrainingJob's and MPIJob's membership
pushers) registers them in ``setup_controllers(manager, context)``. The :class:`ControllerContext`
gives them what the job controller of their kind uses, so they behave alike without reaching into
the framework's modules:

* ``settings``: the operator's (the ``operator-name`` its children carry, the cluster domain);
* ``jobs``: the kind's resource; ``recorder``: the Events source of the kind's job controller
  (``<kind>-controller``);
* ``writes``: reads that show this process's own writes and writes guarded by the version read
  (:class:`~etctl.common._ledger.WriteLedger`): the one stale-cache defence;
* ``priority``: the job controller's queue order (running jobs first, then the jobs furthest
  along: :func:`~etctl.common._priority.progress_first`);
* :meth:`~ControllerContext.exec_took`: the duration of an exec into a job's pod, in the scaling
  machinery's ``etctl_scale_exec_duration_seconds`` histogram.
"""

from __future__ import annotations

from dataclasses import dataclass

from etctl.common._ledger import Recorder, WriteLedger
from etctl.common._plugin import JobSettings
from etctl.common._priority import progress_first
from etctl.common._scaling.metrics import EXEC_DURATION
from etctl.runtime import Manager, PriorityFunc, Resource

__all__ = ["ControllerContext"]


@dataclass(frozen=True, slots=True)
class ControllerContext:
    """What a kind's own controllers get from the framework (see the module docstring)."""

    settings: JobSettings
    jobs: Resource
    recorder: Recorder
    writes: WriteLedger
    priority: PriorityFunc

    @classmethod
    def of(cls, manager: Manager, jobs: Resource, settings: JobSettings) -> ControllerContext:
        """The context of ``jobs``' controllers on ``manager``."""
        return cls(
            settings=settings,
            jobs=jobs,
            recorder=manager.recorder(f"{jobs.kind.lower()}-controller"),
            writes=WriteLedger(manager.client, manager.cache, clock=manager.clock),
            priority=progress_first(manager.cache, jobs),
        )

    def exec_took(self, purpose: str, seconds: float) -> None:
        """Record how long an exec into one of the kind's pods took (``purpose``: its use)."""
        EXEC_DURATION.labels(kind=self.jobs.kind, purpose=purpose).observe(seconds)
