"""The membership a job records around its active scaler: targets, replacements, hostfile."""

from __future__ import annotations

import dataclasses

from etctl.common._scaling.api import ScaleStep
from etctl.common._scaling.machine import advance
from etctl.common._scaling.roster import settle
from tests.common.scaling._views import T0, all_running, apply, job, scale_in, scale_out


def test_a_new_job_gets_initial_targets_clamped_into_its_bounds() -> None:
    view = dataclasses.replace(
        job([], phases={}, replicas=9, max_replicas=4), last_index=None, current=()
    )
    settled = settle(view, None)
    assert settled.targets == ("j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3")
    assert settled.last_index == 3
    assert settled.current == ()


def test_failed_members_are_replaced_under_new_names() -> None:
    phases = {"j-worker-0": "Running", "j-worker-1": "Failed", "j-worker-2": "Running"}
    view = job(phases=phases, last=6, replace=frozenset({"j-worker-1"}))
    settled = settle(view, None)
    assert settled.targets == ("j-worker-0", "j-worker-7", "j-worker-2")
    assert settled.last_index == 7
    assert settled.current == ("j-worker-0", "j-worker-2")
    assert [(r.old, r.new) for r in settled.replaced] == [("j-worker-1", "j-worker-7")]


def test_an_unused_membership_keeps_members_that_stopped() -> None:
    # A whole-job restart: every pod went, no launcher uses the hostfile. Nothing changes, so
    # nothing is written while the job controller restarts the job.
    view = job(phases={}, membership_in_use=False)
    settled = settle(view, None)
    assert settled.current == view.current
    assert settled.targets == view.targets
    # A member that stopped being a target leaves even then.
    fewer = dataclasses.replace(view, targets=("j-worker-0",))
    assert settle(fewer, None).current == ("j-worker-0",)
    assert settle(job(phases={}), None).current == ()


def test_the_active_scalers_workers_are_never_replaced() -> None:
    s, j = scale_in(names=["j-worker-1"]), job()
    s, _ = apply(s, j, advance(s, j, T0))
    view = job(replace=frozenset({"j-worker-1"}))
    settled = settle(view, s)
    assert settled.replaced == ()
    # ... and a draining victim is out of the hostfile.
    assert settled.current == ("j-worker-0", "j-worker-2")


def test_new_workers_join_the_hostfile_only_when_the_scale_out_admits_them() -> None:
    s, j = scale_out(1), job()
    s, j = apply(s, j, advance(s, j, T0))
    j = all_running(j)
    assert settle(j, s).current == ("j-worker-0", "j-worker-1", "j-worker-2")
    s, j = apply(s, j, advance(s, j, T0))
    assert s.status.step is ScaleStep.JOINING
    assert settle(j, s).current == ("j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3")
    # A finished scaler keeps nobody out.
    done = s.with_status(s.status.model_copy(update={"step": ScaleStep.DONE}))
    assert settle(j, done).current == settle(j, None).current


def test_replacements_stay_within_the_name_limit() -> None:
    long = "j" * 54 + "-worker-"
    names = (f"{long}0", f"{long}9")
    phases = {names[0]: "Running", names[1]: "Failed"}
    view = dataclasses.replace(
        job(list(names), phases=phases, last=9, replace=frozenset({names[1]})),
        elasticity=dataclasses.replace(
            job().elasticity, member_prefix=long, replace=frozenset({names[1]})
        ),
    )
    settled = settle(view, None)
    # worker-9's pod still exists (it is deleted once replaced): worker-1 is the lowest free name.
    assert settled.targets == (names[0], f"{long}1")
    assert settled.last_index == 9
    assert [(r.old, r.new, r.reused) for r in settled.replaced] == [(names[1], f"{long}1", True)]
    # Every name that fits taken: the failed member is left, and said so.
    full = tuple(f"{long}{i}" for i in range(10))
    crowded = dataclasses.replace(
        view, targets=full, present=frozenset(full), phases=dict.fromkeys(full, "Running")
    )
    stuck = settle(crowded, None)
    assert stuck.targets == full
    assert stuck.unreplaced == (names[1],)
