"""Which kind of job a scaler names: ``spec.selector.kind``, else the scalers' own group's kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEOUTS
from etctl.common._scaling.api import scaler_targets
from etctl.jobs.trainingjob import TRAININGJOBS
from etctl.runtime import Resource, objects
from etctl.testing import eventually
from tests.common.scaling._env import scaling_env

MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob")
OTHER_KAI = Resource("kai.alibabacloud.com", "v1alpha1", "otherjobs", "OtherJob")


def scaler(**selector: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns"}, "spec": {"selector": {"name": "j", **selector}}}


@pytest.mark.parametrize(
    ("selector", "trainingjob", "mpijob"),
    [
        ({}, True, False),  # et-operator's scalers: the kind of the scalers' own group
        ({"kind": "TrainingJob"}, True, False),
        ({"kind": "MPIJob"}, False, True),
        ({"kind": "MPIJob", "apiGroup": "kubeflow.org"}, False, True),
        ({"kind": "MPIJob", "apiGroup": "example.com"}, False, False),
        ({"apiGroup": "kubeflow.org"}, False, False),
    ],
)
def test_a_selector_names_one_kind(
    selector: dict[str, str], trainingjob: bool, mpijob: bool
) -> None:
    assert scaler_targets(scaler(**selector), TRAININGJOBS) is trainingjob
    assert scaler_targets(scaler(**selector), MPIJOBS) is mpijob


def test_without_a_kind_every_kind_of_the_scalers_group_is_named() -> None:
    # Two elastic kinds in kai.alibabacloud.com would both take it: such kinds name themselves.
    assert scaler_targets(scaler(), OTHER_KAI)
    assert not scaler_targets(scaler(kind="TrainingJob"), OTHER_KAI)
    assert not scaler_targets({"metadata": {}, "spec": {}}, TRAININGJOBS)


async def test_a_scaler_naming_another_kind_is_left_to_it(tmp_path: Path) -> None:
    async with scaling_env(tmp_path) as env:
        env.create_job()
        env.create_scaler(
            SCALEOUTS,
            "for-mpijob",
            {"selector": {"name": "tj", "kind": "MPIJob"}, "toAdd": {"count": 1}},
        )
        env.create_scaler(
            SCALEOUTS,
            "for-trainingjob",
            {"selector": {"name": "tj", "kind": "TrainingJob"}, "toAdd": {"count": 1}},
        )
        await eventually(
            lambda: objects.controller_of(env.scaler(SCALEOUTS, "for-trainingjob")) is not None
        )
        await env.idle()
        # Not TrainingJob tj's, however alike the names: neither adopted nor failed as missing.
        other = env.scaler(SCALEOUTS, "for-mpijob")
        assert objects.controller_of(other) is None
        assert "status" not in other or not other["status"].get("conditions")
        assert env.events("TrainingJobNotFound") == []
