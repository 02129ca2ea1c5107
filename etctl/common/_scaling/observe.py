"""What the scaling controller observes of one elastic job, from one read of the cache.

An :class:`Observation` holds the job (raw and parsed), its pods grouped by replica type, the
scalers it controls, and the two views derived from them: the
:class:`~etctl.common._scaling.elastic.Elasticity` its kind's elastic protocol gives (where the job
records its members, who consumes them) and the machine's
:class:`~etctl.common._scaling.machine.JobView`. After the controller writes the job, it refreshes
the observation (:meth:`Observation.refresh`) with the object the API server returned, so the next
decision reads what was just written (never the cache's older copy).

Pods: a pod belongs to a replica type by its ``training.kubeflow.org/replica-type`` label (lower
case, as the job controller writes it). The plugin sees the live pods (not being deleted); the
machine also sees which worker pods still exist at all (being deleted included), because a removed
worker is gone only when its pod is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from etctl.common._api import JobCondition
from etctl.common._crd import CustomResource
from etctl.common._labels import replica_type_of
from etctl.common._members import WORKER_FIELDS, Members
from etctl.common._plugin import Capabilities, JobSettings, JobState
from etctl.common._scaling.api import ScaleIn, ScaleOut
from etctl.common._scaling.elastic import Elasticity, read_elasticity
from etctl.common._scaling.scaler import JobView, Scaler, scaler_of
from etctl.common._scaling.selection import QueuedScaler
from etctl.runtime import ObjectView, objects, podview

__all__ = ["Observation", "ObservedScaler", "parse_job", "parse_scaler"]


def parse_job(model: type[Any], raw: ObjectView) -> Any | None:
    """``raw`` parsed into the plugin's model, or None when it does not parse."""
    try:
        parsed: Any = model.model_validate(raw)
    except ValidationError:
        return None
    if not isinstance(parsed, BaseModel):
        return None
    return parsed


@dataclass(frozen=True, slots=True)
class ObservedScaler:
    """A scaler: its object as last read or written, and its parsed form."""

    raw: ObjectView
    scaler: Scaler
    created: datetime | None

    @property
    def queued(self) -> QueuedScaler:
        """What the FIFO order reads."""
        return QueuedScaler(
            self.scaler.direction.value,
            self.scaler.name,
            self.created,
            self.scaler.status.queued_resource_version,
        )

    def written(self, raw: ObjectView) -> ObservedScaler:
        """This scaler after a write that returned ``raw``."""
        parsed = parse_scaler(raw)
        return parsed if parsed is not None else self


def parse_scaler(raw: ObjectView) -> ObservedScaler | None:
    """A scaler object parsed, or None when it does not parse."""
    model = ScaleOut if raw.get("kind") == "ScaleOut" else ScaleIn
    try:
        parsed = model.model_validate(raw)
    except ValidationError:
        return None
    return ObservedScaler(raw, scaler_of(parsed), parsed.metadata.creation_timestamp)


class Observation:
    """One elastic job as the scaling controller sees it (see the module docstring).

    Args:
        capabilities: the job kind's phases and capabilities (it scales elastically).
        crd: the job kind's CRD (its ``/scale`` path is the desired member count's).
        model: the job kind's model.
        kind: the job kind.
        raw: the job object.
        job: ``raw`` parsed.
        pods: every pod the job controls, being deleted or not.
        scalers: the scalers the job controls.
        now: the reconcile's time.
        settings: operator-wide settings.
    """

    def __init__(
        self,
        capabilities: Capabilities,
        *,
        crd: CustomResource,
        model: type[Any],
        kind: str,
        raw: ObjectView,
        job: Any,
        pods: Sequence[ObjectView],
        scalers: Sequence[ObservedScaler],
        now: datetime,
        settings: JobSettings,
    ) -> None:
        self._capabilities = capabilities
        self._crd = crd
        self._model = model
        self.kind = kind
        self.now = now
        self.settings = settings
        self.scalers = list(scalers)
        self._pods = list(pods)
        self.raw = raw
        self.job = job
        self.elasticity: Elasticity
        self.view: JobView
        self._members: Members
        self._derive()

    @property
    def conditions(self) -> list[JobCondition]:
        """The job's conditions."""
        conditions: list[JobCondition] = self.job.status.conditions
        return conditions

    @property
    def members(self) -> Members:
        """The job's members as its status records them."""
        return self._members

    @property
    def name(self) -> str:
        """The job's name."""
        return objects.name(self.raw)

    @property
    def namespace(self) -> str:
        """The job's namespace."""
        return objects.namespace(self.raw)

    def refresh(self, raw: ObjectView) -> None:
        """Take the job as the API server returned it after a write."""
        job = parse_job(self._model, raw)
        if job is not None:
            self.raw, self.job = raw, job
            self._derive()

    def _by_type(self) -> dict[str, tuple[ObjectView, ...]]:
        lower = {rtype.lower(): rtype for rtype in self.job.replica_specs()}
        grouped: dict[str, list[ObjectView]] = {rtype: [] for rtype in lower.values()}
        for pod in self._pods:
            if objects.is_terminating(pod):
                continue
            rtype = lower.get((replica_type_of(pod) or "").lower())
            if rtype is not None:
                grouped[rtype].append(pod)
        return {rtype: tuple(found) for rtype, found in grouped.items()}

    def _derive(self) -> None:
        live = self._by_type()
        state = JobState(
            job=self.job,
            pods=live,
            services={},
            children={},
            replica_statuses=dict(self.job.status.replica_statuses),
            now=self.now,
            settings=self.settings,
        )
        elastic = read_elasticity(self._capabilities, self._crd, self.job, state)
        rtype = elastic.replica_type.lower()
        present = frozenset(
            objects.name(pod) for pod in self._pods if (replica_type_of(pod) or "").lower() == rtype
        )
        self.elasticity = elastic
        members = elastic.members or Members(fields=WORKER_FIELDS)
        self._members = members
        self.view = JobView(
            kind=self.kind,
            name=self.name,
            targets=members.targets,
            current=members.current,
            last_index=members.last_index,
            elasticity=elastic,
            phases={objects.name(p): podview.phase(p) for p in live.get(elastic.replica_type, ())},
            present=present,
        )

    def scaler_written(self, observed: ObservedScaler, raw: ObjectView) -> ObservedScaler:
        """Take a scaler as the API server returned it after a write (later decisions read it)."""
        updated = observed.written(raw)
        key = observed.scaler.full_name
        self.scalers = [updated if o.scaler.full_name == key else o for o in self.scalers]
        return updated

    def worker_phase(self, name: str) -> str:
        """The phase of a worker pod (``""`` when it has none)."""
        return self.view.phases.get(name, "")
