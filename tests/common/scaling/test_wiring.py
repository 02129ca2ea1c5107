"""Registering the scaling machinery: only elastic kinds, under the kind's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.common._scaling.wiring import setup_scaling
from etctl.errors import ConfigError
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin
from etctl.runtime import Manager
from tests._cluster import cluster
from tests.common.simplejob import SimpleJobPlugin


async def _never() -> None:
    return None


async def test_only_elastic_kinds_scale(tmp_path: Path) -> None:
    async with cluster(tmp_path, raw=True) as env:
        with pytest.raises(ConfigError, match="SimpleJob is not elastic"):
            setup_scaling(Manager(env.client, clock=env.clock), SimpleJobPlugin())
        manager = Manager(env.client, clock=env.clock)
        controller = setup_scaling(manager, TrainingJobPlugin())
        assert controller.kind == "TrainingJob"
        for name in ("scalein-adoption", "scaleout-adoption", "scaling"):
            with pytest.raises(ValueError, match=f"trainingjob-{name}"):
                manager.add_runnable(f"trainingjob-{name}", _never, needs_leader_election=True)
