"""Builders for the state machine's tests: scalers, job views, and applying a transition."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from etctl.common import ConditionStatus, ExecTarget, ScaleIn, ScaleOut, get_condition
from etctl.common._scaling.elastic import Elasticity
from etctl.common._scaling.scaler import JobView, Scaler, Transition, scaler_of

P = "j-worker-"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
LAUNCHER = ExecTarget("j-launcher", "main")


def elasticity(**changes: Any) -> Elasticity:
    base = Elasticity(
        replica_type="Worker",
        replicas=3,
        replicas_path=("spec", "etReplicaSpecs", "worker", "replicas"),
        min_replicas=1,
        max_replicas=5,
        member_prefix=P,
        slots=2,
        ready=True,
        executor=LAUNCHER,
    )
    return dataclasses.replace(base, **changes)


def job(
    targets: list[str] | None = None,
    *,
    current: list[str] | None = None,
    phases: dict[str, str] | None = None,
    last: int | None = None,
    **elastic: Any,
) -> JobView:
    names = targets if targets is not None else [f"{P}{i}" for i in range(3)]
    found = phases if phases is not None else dict.fromkeys(names, "Running")
    return JobView(
        kind="TrainingJob",
        name="j",
        targets=tuple(names),
        current=tuple(current if current is not None else names),
        last_index=last if last is not None else len(names) - 1,
        elasticity=elasticity(**elastic),
        phases=found,
        present=frozenset(found),
    )


def scale_out(count: int = 1, **spec: Any) -> Scaler:
    body = {"selector": {"name": "j"}, "toAdd": {"count": count}, **spec}
    return scaler_of(ScaleOut.model_validate({"metadata": {"name": "out"}, "spec": body}))


def scale_in(*, count: int | None = None, names: list[str] | None = None, **spec: Any) -> Scaler:
    to_delete = {"count": count} if count is not None else {"podNames": names}
    body = {"selector": {"name": "j"}, "toDelete": to_delete, **spec}
    return scaler_of(ScaleIn.model_validate({"metadata": {"name": "in"}, "spec": body}))


def apply(scaler: Scaler, view: JobView, t: Transition) -> tuple[Scaler, JobView]:
    """What the controller does with a transition: status first, then the job."""
    if t.status is not None:
        scaler = scaler.with_status(t.status)
    if t.targets is not None:
        view = dataclasses.replace(
            view,
            targets=t.targets,
            last_index=t.last_index if t.last_index is not None else view.last_index,
        )
    if t.replicas is not None:
        view = dataclasses.replace(
            view, elasticity=dataclasses.replace(view.elasticity, replicas=t.replicas)
        )
    return scaler, view


def all_running(view: JobView) -> JobView:
    phases = dict.fromkeys(view.targets, "Running")
    return dataclasses.replace(view, phases=phases, present=frozenset(phases))


def condition(scaler: Scaler, kind: str) -> tuple[ConditionStatus, str] | None:
    found = get_condition(scaler.status.conditions, kind)
    return (found.status, found.reason) if found else None
