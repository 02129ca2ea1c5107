"""Log lines of scaler transitions: one per written change of a scaler's step or outcome.

Events expire after an hour; logs are what an operator keeps. Each change of a scaler's status
that this operator writes (a new step, a success, a failure with its reason) is logged once, at
info, a failure (and a step to RollingBack) at warning, with the scaler's kind, namespace and name
and its job: the writes happen only when the status changes, so a reconcile that changes nothing
logs nothing.
"""

from __future__ import annotations

from etctl.common._api import ConditionStatus, JobConditionType
from etctl.common._conditions import get_condition, is_true
from etctl.common._scaling.api import ScalerStatus, ScaleStep
from etctl.log import get_logger
from etctl.runtime import ObjectView, objects

__all__ = ["scaler_changed"]

log = get_logger(__name__)


def scaler_changed(
    kind: str, raw: ObjectView, before: ScalerStatus, after: ScalerStatus, *, job: str
) -> None:
    """Log the change of a scaler's status from ``before`` to ``after`` (nothing if none)."""
    latest = after.conditions[-1] if after.conditions else None
    fields = {
        "kind": kind,
        "namespace": objects.namespace(raw),
        "name": objects.name(raw),
        "job": job,
        "step": after.step.value if after.step is not None else None,
        "reason": latest.reason if latest is not None else "",
        "message": latest.message if latest is not None else "",
    }
    for outcome in (JobConditionType.SCALE_FAILED, JobConditionType.SCALE_SUCCEEDED):
        if is_true(after.conditions, outcome) and not is_true(before.conditions, outcome):
            condition = get_condition(after.conditions, outcome)
            assert condition is not None
            fields.update(reason=condition.reason, message=condition.message)
            if outcome == JobConditionType.SCALE_FAILED:
                log.warning("scaler failed", **fields)
            else:
                log.info("scaler succeeded", **fields)
            return
    if before.step != after.step and after.step is not None:
        # A rollback is a failure on its way: say so before the scaler ends.
        rolling_back = after.step is ScaleStep.ROLLING_BACK
        (log.warning if rolling_back else log.info)("scaler step changed", **fields)
        return
    executed = get_condition(after.conditions, JobConditionType.SCRIPT_EXECUTED)
    if executed is not None and executed != get_condition(
        before.conditions, JobConditionType.SCRIPT_EXECUTED
    ):
        fields.update(reason=executed.reason, message=executed.message)
        if executed.status is ConditionStatus.UNKNOWN:
            log.info("scaler script being sent", **fields)  # its attempt marker is stored
            return
        failed = executed.status is not ConditionStatus.TRUE
        (log.warning if failed else log.info)("scaler script ended", **fields)
