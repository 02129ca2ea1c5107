"""Wiring TrainingJob into a Manager: its controllers, under their names."""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.common import ControllerContext, JobSettings, setup_job_controller
from etctl.jobs.launcher import setup_membership_pusher
from etctl.jobs.trainingjob import TRAININGJOBS
from etctl.jobs.trainingjob._layout import LAYOUT
from etctl.jobs.trainingjob._names import NAMES as TRAININGJOB_NAMES
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import Manager, ManagerOptions
from tests._cluster import cluster

NAMES = (
    "trainingjob",
    "trainingjob-scalein-adoption",
    "trainingjob-scaleout-adoption",
    "trainingjob-scaling",
    "trainingjob-hostfile",
)


async def test_the_generic_wiring_sets_up_every_trainingjob_controller(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        manager = Manager(env.client, options=ManagerOptions(), clock=env.clock)
        setup_job_controller(manager, TrainingJobPlugin(), settings=JobSettings())
        for name in NAMES:  # a name is taken once: each of these is registered
            with pytest.raises(ValueError, match=name):
                manager.add_runnable(name, _never, needs_leader_election=True)
        other = Manager(env.client, clock=env.clock)
        context = ControllerContext.of(other, TRAININGJOBS, JobSettings())
        pusher = setup_membership_pusher(
            other, context, names=TRAININGJOB_NAMES, layout=LAYOUT, exec_timeout=5
        )
        assert pusher.reconcile_timeout == 15


async def _never() -> None:
    return None
