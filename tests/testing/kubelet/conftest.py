"""Fixtures of the kubelet tests: a server on a fake clock with a two-node kubelet."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.runtime import FakeClock
from etctl.testing._kubelet import Kubelet, KubeletConfig


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 11}


@pytest.fixture
def etctl_kubelet_config() -> KubeletConfig:
    return KubeletConfig.uniform(2, cpu="4", memory="8Gi", pods=10)


@pytest.fixture
def kubelet(etctl_kubelet: Kubelet) -> Kubelet:
    return etctl_kubelet
