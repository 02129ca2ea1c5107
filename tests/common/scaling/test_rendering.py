"""The Scaling condition the job controller renders from the scaler field and the scalers."""

from __future__ import annotations

from typing import Any

from etctl.common._api import ConditionStatus, JobCondition
from etctl.common._members import WORKER_FIELDS, Members
from etctl.common._scaling.observe import ObservedScaler, parse_scaler
from etctl.common._scaling.rendering import scaling_change, started
from etctl.common._status import ConditionChange

STAMP = "2026-01-01T00:00:00Z"


def cond(ctype: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": STAMP,
    }


def scaler(
    name: str, created: str, *conditions: dict[str, Any], kind: str = "ScaleOut"
) -> ObservedScaler:
    raw = {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
        "spec": {"selector": {"name": "tj"}},
        "status": {"conditions": [cond("Created", "True", "Adopted"), *conditions]},
    }
    parsed = parse_scaler(raw)
    assert parsed is not None
    return parsed


def ran(name: str, created: str, outcome: str, kind: str = "ScaleOut") -> ObservedScaler:
    return scaler(
        name,
        created,
        cond("Scaling", "True", "ScalingStart"),
        cond(outcome, "True", "Done", f"{name} said so"),
        kind=kind,
    )


def render(
    scalers: list[ObservedScaler], *conditions: dict[str, Any], named: str | None = None
) -> ConditionChange | None:
    members = Members(fields=WORKER_FIELDS, scaler=named)
    parsed = [JobCondition.model_validate(c) for c in conditions]
    return scaling_change("TrainingJob", "tj", members, parsed, scalers)


def test_a_named_scaler_is_scaling() -> None:
    change = render([], named="ScaleOut:ns/more")
    assert change == ConditionChange(
        "Scaling", ConditionStatus.TRUE, "ScalingStart", "TrainingJob tj runs ScaleOut:ns/more"
    )


def test_the_latest_scaler_that_ran_says_how_scaling_ended() -> None:
    older = ran("a", "2026-01-01T00:00:00Z", "ScaleSucceeded")
    newer = ran("b", "2026-01-01T00:00:05Z", "ScaleFailed", kind="ScaleIn")
    change = render([newer, older])
    assert change is not None
    assert (change.status, change.reason) == (ConditionStatus.FALSE, "ScalingInFailed")
    assert change.message == "ScaleIn:ns/b failed: b said so"
    # Even one that started and ended between two reconciles of the job (never seen running).
    running_a = started("TrainingJob", "tj", "ScaleOut:ns/a")
    shown = cond("Scaling", "True", running_a.reason, running_a.message)
    assert render([older, newer], shown) == change


def test_a_scaler_deleted_while_it_ran_is_gone() -> None:
    running = started("TrainingJob", "tj", "ScaleOut:ns/gone")
    shown = cond("Scaling", "True", running.reason, running.message)
    older = ran("a", "2026-01-01T00:00:00Z", "ScaleSucceeded")
    change = render([older], shown)
    assert change is not None
    assert (change.status, change.reason) == (ConditionStatus.FALSE, "ScalerGone")
    assert change.message.startswith("ScaleOut:ns/gone was deleted before it finished")


def test_no_scaler_ever_ran_no_condition() -> None:
    assert render([]) is None
    # Failed without ever running: the job finished or cannot be resized.
    closed = scaler("c", STAMP, cond("ScaleFailed", "True", "JobNotElastic"))
    assert render([closed]) is None
