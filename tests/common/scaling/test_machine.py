"""The scaler state machine, driven the way the controller drives it: decisions first."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from etctl.common import ConditionStatus, get_condition
from etctl.common._scaling.api import ScaleStep
from etctl.common._scaling.machine import advance, script_finished
from etctl.common._scaling.scaler import JobView, Outcome, Scaler, Transition
from tests.common.scaling._views import (
    T0,
    all_running,
    apply,
    condition,
    job,
    scale_in,
    scale_out,
)


def test_scale_out_happy_path() -> None:
    s, j = scale_out(2, timeout=30), job(last=7)
    t = advance(s, j, T0)
    assert t.status is not None
    assert t.status.step is ScaleStep.CREATING
    assert s.with_status(t.status).chosen == ["j-worker-8", "j-worker-9"]
    assert t.targets == ("j-worker-0", "j-worker-1", "j-worker-2", "j-worker-8", "j-worker-9")
    assert t.last_index == 9
    s, j = apply(s, j, t)
    assert condition(s, "Scaling") == (ConditionStatus.TRUE, "ScalingStart")
    assert s.status.phase == "Scaling"
    # Pods pending: waiting, with the time left until the timeout.
    pending = {**j.phases, "j-worker-8": "Pending"}
    t = advance(s, dataclasses.replace(j, phases=pending), T0 + timedelta(seconds=10))
    assert t.idle
    assert t.wait == 20
    running = {**j.phases, "j-worker-8": "Running", "j-worker-9": "Running"}
    j = dataclasses.replace(j, phases=running, present=frozenset(running))
    t = advance(s, j, T0 + timedelta(seconds=12))
    s, j = apply(s, j, t)
    assert s.status.step is ScaleStep.JOINING
    # Joining waits until the members include them and the launcher holds that hostfile.
    t = advance(s, j, T0 + timedelta(seconds=13))
    assert t.idle
    assert t.wait == 29
    j = dataclasses.replace(j, current=(*j.current, "j-worker-8", "j-worker-9"))
    j = dataclasses.replace(
        j, elasticity=dataclasses.replace(j.elasticity, membership_delivered=False)
    )
    assert advance(s, j, T0 + timedelta(seconds=13)).idle
    j = dataclasses.replace(
        j, elasticity=dataclasses.replace(j.elasticity, membership_delivered=True)
    )
    s, j = apply(s, j, advance(s, j, T0 + timedelta(seconds=14)))
    assert s.status.step is ScaleStep.FINISHING
    t = advance(s, j, T0 + timedelta(seconds=15))
    assert t.replicas == 5
    assert t.status is None
    s, j = apply(s, j, t)
    t = advance(s, j, T0 + timedelta(seconds=15))
    assert t.outcome is Outcome.SUCCEEDED
    s, j = apply(s, j, t)
    assert s.status.step is ScaleStep.DONE
    assert s.status.finished()
    assert condition(s, "ScaleSucceeded") == (ConditionStatus.TRUE, "ScalingOutSucceeded")
    assert s.status.phase == "ScaleSucceeded"
    assert advance(s, j, T0 + timedelta(seconds=16)) == Transition()


def test_scale_out_timeout_rolls_back() -> None:
    s, j = scale_out(1, timeout=60), job()
    s, j = apply(s, j, advance(s, j, T0))
    phases = {**j.phases, "j-worker-3": "Pending"}
    j = dataclasses.replace(j, phases=phases, present=frozenset(phases))
    assert advance(s, j, T0 + timedelta(seconds=59)).wait == 1
    t = advance(s, j, T0 + timedelta(seconds=60))
    assert t.targets == ("j-worker-0", "j-worker-1", "j-worker-2")
    s, j = apply(s, j, t)
    assert s.status.step is ScaleStep.ROLLING_BACK
    assert condition(s, "Scaling") == (ConditionStatus.FALSE, "ScaleOutTimeout")
    assert not s.status.finished()
    # Waits until the pod is gone, then fails.
    assert advance(s, j, T0 + timedelta(seconds=61)).idle
    j = dataclasses.replace(j, present=frozenset(j.targets))
    t = advance(s, j, T0 + timedelta(seconds=62))
    assert t.outcome is Outcome.FAILED
    s, j = apply(s, j, t)
    failed = get_condition(s.status.conditions, "ScaleFailed")
    assert failed is not None
    assert failed.reason == "ScaleOutTimeout"
    assert "j-worker-3 did not run within the timeout of 60 s" in failed.message


def test_a_failed_new_worker_fails_the_scale_out_at_once() -> None:
    s, j = scale_out(1), job()
    s, j = apply(s, j, advance(s, j, T0))
    failed = {**j.phases, "j-worker-3": "Failed"}
    t = advance(s, dataclasses.replace(j, phases=failed), T0 + timedelta(seconds=1))
    assert t.status is not None
    assert t.status.step is ScaleStep.ROLLING_BACK
    assert "j-worker-3" not in (t.targets or ())


def test_scale_out_over_max_fails_naming_the_bound() -> None:
    s, j = scale_out(3), job(max_replicas=5)
    t = advance(s, j, T0)
    assert t.targets is None
    assert t.outcome is Outcome.FAILED
    assert t.status is not None
    failed = get_condition(t.status.conditions, "ScaleFailed")
    assert failed is not None
    assert failed.reason == "MaxReplicasExceeded"
    assert "above its maxReplicas 5" in failed.message


def test_restart_after_the_decision_reapplies_the_action_only() -> None:
    # The scaler's status was written (Creating, addPods) but the operator stopped before the
    # job's targets were: the next advance writes the same targets, chooses nothing new.
    s, j = scale_out(2), job()
    decided = advance(s, j, T0)
    assert decided.status is not None
    s = s.with_status(decided.status)
    again = advance(s, j, T0 + timedelta(seconds=5))
    assert again.status is None
    assert again.targets == decided.targets
    assert again.last_index == 4


def test_scale_in_by_count_happy_path() -> None:
    phases = {"j-worker-0": "Running", "j-worker-1": "Running", "j-worker-2": "Running"}
    s, j = scale_in(count=1), job(phases=phases)
    t = advance(s, j, T0)
    assert t.targets is None  # the victim stays a target until it left the hostfile
    s, j = apply(s, j, t)
    assert s.status.step is ScaleStep.DRAINING
    assert s.chosen == ["j-worker-2"]
    assert advance(s, j, T0).idle  # still a member
    j = dataclasses.replace(j, current=("j-worker-0", "j-worker-1"))
    t = advance(s, j, T0 + timedelta(seconds=1))
    assert t.targets == ("j-worker-0", "j-worker-1")
    s, j = apply(s, j, t)
    assert s.status.step is ScaleStep.DELETING
    assert advance(s, j, T0 + timedelta(seconds=2)).idle  # the pod is still there
    j = dataclasses.replace(j, present=frozenset({"j-worker-0", "j-worker-1"}))
    s, j = apply(s, j, advance(s, j, T0 + timedelta(seconds=3)))
    assert s.status.step is ScaleStep.FINISHING
    s, j = apply(s, j, advance(s, j, T0 + timedelta(seconds=3)))
    assert j.elasticity.replicas == 2
    t = advance(s, j, T0 + timedelta(seconds=3))
    assert t.outcome is Outcome.SUCCEEDED
    s, j = apply(s, j, t)
    assert condition(s, "ScaleSucceeded") == (ConditionStatus.TRUE, "ScalingInSucceeded")


def test_scale_in_by_names_rejects_foreign_pods() -> None:
    s = scale_in(names=["j-worker-1", "other-worker-0"])
    t = advance(s, job(), T0)
    assert t.outcome is Outcome.FAILED
    assert t.status is not None
    failed = get_condition(t.status.conditions, "ScaleFailed")
    assert failed is not None
    assert failed.reason == "UnknownWorkers"
    assert failed.message.startswith("other-worker-0 is not a worker of TrainingJob j")


def test_scale_in_below_min_fails_naming_the_bound() -> None:
    t = advance(scale_in(count=2), job(min_replicas=2), T0)
    assert t.status is not None
    failed = get_condition(t.status.conditions, "ScaleFailed")
    assert failed is not None
    assert failed.reason == "MinReplicasExceeded"
    assert "below its minReplicas 2" in failed.message


def test_drain_timeout_fails_and_keeps_the_workers() -> None:
    s, j = scale_in(names=["j-worker-0"], timeout=10), job(membership_delivered=False)
    s, j = apply(s, j, advance(s, j, T0))
    j = dataclasses.replace(j, current=("j-worker-1", "j-worker-2"))
    assert advance(s, j, T0 + timedelta(seconds=9)).wait == 1
    t = advance(s, j, T0 + timedelta(seconds=10))
    assert t.targets is None
    assert t.outcome is Outcome.FAILED
    s, j = apply(s, j, t)
    failed = get_condition(s.status.conditions, "ScaleFailed")
    assert failed is not None
    assert failed.reason == "DrainTimeout"


def test_script_runs_once_with_the_new_hosts() -> None:
    s = scale_out(1, script="/scripts/on-scale.sh", timeout=30, env=[{"name": "A", "value": "b c"}])
    j = job()
    s, j = apply(s, j, advance(s, j, T0))
    j = all_running(j)
    s, j = apply(s, j, advance(s, j, T0))
    assert s.status.step is ScaleStep.JOINING
    j = dataclasses.replace(j, current=(*j.targets,))
    # The decision: the Script step, its script pending (not sent).
    t = advance(s, j, T0 + timedelta(seconds=1))
    assert t.status is not None
    assert t.status.step is ScaleStep.SCRIPT
    assert t.script is None
    s, j = apply(s, j, t)
    assert condition(s, "ScriptExecuted") == (ConditionStatus.UNKNOWN, "ScriptPending")
    # Then the attempt marker, written before the exec it comes with.
    t = advance(s, j, T0 + timedelta(seconds=1))
    assert t.status is not None
    assert condition(s.with_status(t.status), "ScriptExecuted") == (
        ConditionStatus.UNKNOWN,
        "ScriptSending",
    )
    assert t.script is not None
    assert t.script.timeout == 40
    assert t.script.command[2] == (
        "export A='b c' && timeout 30 sh /scripts/on-scale.sh "
        "j-worker-0:2,j-worker-1:2,j-worker-2:2,j-worker-3:2"
    )
    s, j = apply(s, j, t)
    done = script_finished(s, j, T0 + timedelta(seconds=2), exit_code=0, detail="")
    s, j = apply(s, j, done)
    assert condition(s, "ScriptExecuted") == (ConditionStatus.TRUE, "ScriptSucceeded")
    assert s.status.step is ScaleStep.FINISHING


def script_step() -> tuple[Scaler, JobView]:
    """A scale-in in its Script step, pending (decided, never sent)."""
    s, j = scale_in(names=["j-worker-2"], script="/s.sh"), job()
    s, j = apply(s, j, advance(s, j, T0))
    j = dataclasses.replace(j, current=("j-worker-0", "j-worker-1"))
    t = advance(s, j, T0)
    assert t.script is None
    s, j = apply(s, j, t)
    assert s.status.step is ScaleStep.SCRIPT
    return s, j


def test_a_script_decided_but_never_sent_is_sent() -> None:
    s, j = script_step()
    # The operator stopped after the decision, before the marker: the script never left.
    t = advance(s, j, T0 + timedelta(seconds=30))
    assert t.script is not None
    assert t.outcome is None
    assert t.status is not None
    assert condition(s.with_status(t.status), "ScriptExecuted") == (
        ConditionStatus.UNKNOWN,
        "ScriptSending",
    )


def test_an_interrupted_script_is_not_run_again() -> None:
    s, j = script_step()
    t = advance(s, j, T0)
    assert t.script is not None
    # The marker was written; the operator stopped before the outcome was.
    s, j = apply(s, j, dataclasses.replace(t, script=None))
    t = advance(s, j, T0 + timedelta(seconds=30))
    assert t.script is None
    assert t.outcome is Outcome.FAILED
    s, j = apply(s, j, t)
    assert condition(s, "ScriptExecuted") == (ConditionStatus.FALSE, "ScriptInterrupted")
    assert condition(s, "ScaleFailed") == (ConditionStatus.TRUE, "ScriptInterrupted")
    assert "j-worker-2" in j.targets


def test_the_process_that_withheld_the_exec_sends_it_after_all() -> None:
    s, j = script_step()
    t = advance(s, j, T0)
    s, j = apply(s, j, dataclasses.replace(t, script=None))
    # Its marker write failed (and was stored after all): this process knows it sent nothing.
    t = advance(s, j, T0 + timedelta(seconds=1), unsent=True)
    assert t.script is not None
    assert t.status is None  # the marker is stored already
    assert t.outcome is None


def test_a_script_step_of_an_earlier_version_may_have_run() -> None:
    s, j = script_step()
    # An earlier version wrote the step without ScriptExecuted and sent the exec right after.
    legacy = [c for c in s.status.conditions if c.type != "ScriptExecuted"]
    s = s.with_status(s.status.model_copy(update={"conditions": legacy}))
    t = advance(s, j, T0 + timedelta(seconds=1))
    assert t.script is None
    assert t.outcome is Outcome.FAILED
    s, j = apply(s, j, t)
    assert condition(s, "ScriptExecuted") == (ConditionStatus.FALSE, "ScriptInterrupted")


def test_a_script_whose_launcher_went_before_it_was_sent_never_ran() -> None:
    s, j = script_step()
    t = advance(
        s, dataclasses.replace(j, elasticity=dataclasses.replace(j.elasticity, executor=None)), T0
    )
    assert t.script is None
    assert t.outcome is Outcome.FAILED
    assert t.status is not None
    assert condition(s.with_status(t.status), "ScriptExecuted") == (
        ConditionStatus.FALSE,
        "ScriptNotStarted",
    )


def test_a_failed_script_rolls_a_scale_out_back() -> None:
    s, j = scale_out(1, script="/s.sh"), job()
    s, j = apply(s, j, advance(s, j, T0))
    j = all_running(j)
    s, j = apply(s, j, advance(s, j, T0))
    j = dataclasses.replace(j, current=j.targets)
    s, j = apply(s, j, advance(s, j, T0))
    assert s.status.step is ScaleStep.SCRIPT
    s, j = apply(s, j, dataclasses.replace(advance(s, j, T0), script=None))
    t = script_finished(s, j, T0, exit_code=3, detail="boom")
    assert t.status is not None
    assert t.status.step is ScaleStep.ROLLING_BACK
    assert t.targets == ("j-worker-0", "j-worker-1", "j-worker-2")
    failed = get_condition(t.status.conditions, "ScriptExecuted")
    assert failed is not None
    assert failed.message == "script /s.sh on TrainingJob j exited with 3: boom"
    lost = script_finished(s, j, T0, exit_code=None, detail="connection reset")
    assert lost.status is not None
    assert lost.status.step is ScaleStep.ROLLING_BACK
    late = script_finished(s, j, T0, exit_code=124, detail="")
    assert late.status is not None
    message = get_condition(late.status.conditions, "ScriptExecuted")
    assert message is not None
    assert "ran past its timeout of 60 s" in message.message
    unknown = get_condition(lost.status.conditions, "ScriptExecuted")
    assert unknown is not None
    assert unknown.reason == "ScriptFailed"
    assert "did not report an end: connection reset" in unknown.message
    refused = script_finished(s, j, T0, exit_code=None, detail="(403) no", started=False)
    assert refused.status is not None
    assert refused.status.step is ScaleStep.ROLLING_BACK
    never = get_condition(refused.status.conditions, "ScriptExecuted")
    assert never is not None
    assert (never.status, never.reason) == ("False", "ScriptNotStarted")
    assert never.message == (
        "script /s.sh never started on TrainingJob j: (403) no; it did not run"
    )


def test_a_script_needs_a_launcher() -> None:
    s, j = scale_in(names=["j-worker-2"], script="/s.sh"), job(executor=None)
    s, j = apply(s, j, advance(s, j, T0))
    j = dataclasses.replace(j, current=("j-worker-0", "j-worker-1"))
    t = advance(s, j, T0)
    assert t.outcome is Outcome.FAILED
    assert t.status is not None
    assert condition(s.with_status(t.status), "ScaleFailed") == (ConditionStatus.TRUE, "NoLauncher")


def test_invalid_scalers_fail_without_acting() -> None:
    bad = scale_out(1, env=[{"name": "1X", "value": "v"}])
    t = advance(bad, job(), T0)
    assert t.targets is None
    assert t.outcome is Outcome.FAILED
    assert t.status is not None
    assert condition(bad.with_status(t.status), "ScaleFailed") == (
        ConditionStatus.TRUE,
        "InvalidScaler",
    )
