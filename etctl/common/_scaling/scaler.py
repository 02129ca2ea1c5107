"""A scaler and its job as the state machine reads them, and what one of its steps decides.

* :class:`Scaler`: a ScaleOut or ScaleIn, parsed: its direction, name, spec and progress;
* :class:`JobView`: what the machine reads of the job (its membership, the plugin's
  :class:`~etctl.common._scaling.elastic.Elasticity`, the phases of its worker pods);
* :class:`Transition`: what a step decided, applied by the controller in field order, the scaler's
  status first (decisions before actions), with the Events (:class:`Note`) to record and, at the
  end, the :class:`Outcome`.

All values are frozen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

from etctl.common._scaling.api import (
    ScaleIn,
    ScaleInSpec,
    ScaleInStatus,
    ScaleOut,
    ScaleOutSpec,
    ScaleOutStatus,
    ScalerStatus,
)
from etctl.common._scaling.elastic import Elasticity

__all__ = [
    "Direction",
    "JobView",
    "Note",
    "Outcome",
    "Scaler",
    "ScriptRun",
    "Transition",
    "scaler_of",
]


class Direction(StrEnum):
    """Which way a scaler resizes; the value is the scaler's kind."""

    OUT = "ScaleOut"
    IN = "ScaleIn"


class Outcome(StrEnum):
    """How a finished scaler ended (a metrics label)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Scaler:
    """A parsed scaler: its kind, name, spec and progress."""

    direction: Direction
    namespace: str
    name: str
    spec: ScaleOutSpec | ScaleInSpec
    status: ScaleOutStatus | ScaleInStatus

    @property
    def full_name(self) -> str:
        """``<Kind>:<namespace>/<name>``, as the job's scaler field names it."""
        return f"{self.direction.value}:{self.namespace}/{self.name}"

    @property
    def chosen(self) -> list[str]:
        """The workers chosen: added by a scale-out, removed by a scale-in."""
        if isinstance(self.status, ScaleOutStatus):
            return list(self.status.add_pods)
        return list(self.status.to_delete_pods)

    def with_status(self, status: ScalerStatus) -> Scaler:
        """This scaler with ``status`` (as written)."""
        assert isinstance(status, ScaleOutStatus | ScaleInStatus)
        return Scaler(self.direction, self.namespace, self.name, self.spec, status)


def scaler_of(obj: ScaleOut | ScaleIn) -> Scaler:
    """The :class:`Scaler` of a parsed ScaleOut or ScaleIn."""
    direction = Direction.OUT if isinstance(obj, ScaleOut) else Direction.IN
    meta = obj.metadata
    return Scaler(direction, meta.namespace, meta.name, obj.spec, obj.status)


@dataclass(frozen=True, slots=True)
class JobView:
    """What the machine reads of the job.

    Attributes:
        kind: the job's kind (for messages).
        name: the job's name.
        targets: the job's targets.
        current: the job's current members.
        last_index: the highest member index ever used.
        elasticity: the plugin's reading of the job.
        phases: the phase of every live worker pod, by name.
        present: names of the worker pods that exist, being deleted or not.
    """

    kind: str
    name: str
    targets: tuple[str, ...]
    current: tuple[str, ...]
    last_index: int | None
    elasticity: Elasticity
    phases: Mapping[str, str] = field(default_factory=dict)
    present: frozenset[str] = frozenset()

    @property
    def title(self) -> str:
        """``<Kind> <name>``, for messages."""
        return f"{self.kind} {self.name}"


@dataclass(frozen=True, slots=True)
class Note:
    """An Event to record, on the scaler or on the job."""

    on: Literal["scaler", "job"]
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ScriptRun:
    """The script to run on the job's executor once the Script step is written."""

    command: list[str]
    timeout: float


@dataclass(frozen=True, slots=True)
class Transition:
    """What one step decided; applied in field order (the status first).

    Attributes:
        status: the scaler's new status, to write before anything else.
        targets: the job's new targets (with ``last_index``), to write next.
        last_index: the job's new high-water mark.
        replicas: the job's desired count to write into its spec.
        script: the script to run, after ``status`` is written.
        wait: seconds until a timeout expires, when the scaler waits for one.
        notes: Events to record.
        outcome: set when the scaler finished.
    """

    status: ScalerStatus | None = None
    targets: tuple[str, ...] | None = None
    last_index: int | None = None
    replicas: int | None = None
    script: ScriptRun | None = None
    wait: float | None = None
    notes: tuple[Note, ...] = ()
    outcome: Outcome | None = None

    @property
    def idle(self) -> bool:
        """True when nothing is to be written or run (the scaler waits)."""
        return (
            self.status is None
            and self.targets is None
            and self.replicas is None
            and self.script is None
        )
