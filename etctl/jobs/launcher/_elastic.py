"""What the scaling machinery needs to know of a launcher: where scripts run, what it holds.

A launcher/worker kind's members are consumed by its launcher. :func:`read_launcher` reads, from
the job's live launcher pods and the digest of the membership file the kind wants delivered:

* the running launcher, if any: the membership is *in use* only while one runs (a worker that
  stops running leaves it then, and a vanished member is replaced);
* the executor: the running launcher's first container, where scalers' scripts run;
* whether the membership is *delivered*: the running launcher's recorded digest (written by the
  membership pusher) is the wanted one, or there is no launcher to deliver it to (a launcher that
  starts later copies the ConfigMap, which already has it). A launcher still starting is not
  delivered to: its copy may predate the change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from etctl.common import Consumer, ExecTarget, first_container_name
from etctl.jobs.launcher._hostfile import PUSHED_ANNOTATION
from etctl.runtime import ObjectView, objects, podview

__all__ = ["LauncherReading", "read_launcher"]


@dataclass(frozen=True, slots=True)
class LauncherReading:
    """A job's launcher as the scaling machinery reads it (see the module docstring)."""

    running: ObjectView | None
    executor: ExecTarget | None
    delivered: bool

    def consumer(self, slots: int) -> Consumer:
        """The launcher as the consumer of the members, each with ``slots`` slots."""
        return Consumer(
            running=self.running is not None,
            delivered=self.delivered,
            executor=self.executor,
            slots=slots,
        )


def read_launcher(launchers: Sequence[ObjectView], wanted: str) -> LauncherReading:
    """Read the job's live ``launchers`` against the ``wanted`` digest of the membership file."""
    running = next((p for p in launchers if podview.phase(p) == "Running"), None)
    executor = None
    if running is not None:
        container = first_container_name(running)
        if container:
            executor = ExecTarget(objects.name(running), container)
    if not launchers:
        delivered = True
    elif running is None:
        delivered = False
    else:
        delivered = objects.annotations(running).get(PUSHED_ANNOTATION) == wanted
    return LauncherReading(running, executor, delivered)
