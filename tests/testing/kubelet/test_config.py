"""Kubelet configuration."""

from __future__ import annotations

import pytest

from etctl.testing._kubelet import GPU, KubeletConfig, NodeConfig


def test_uniform_nodes() -> None:
    config = KubeletConfig.uniform(2, cpu="4", gpus=2, labels={"pool": "gpu"}, lease_interval=5)
    assert [n.name for n in config.nodes] == ["node-0", "node-1"]
    assert config.nodes[1].allocatable()[GPU] == "2"
    assert config.nodes[0].labels == {"pool": "gpu"}
    assert config.lease_interval == 5
    assert KubeletConfig.uniform(0).nodes == ()
    with pytest.raises(ValueError, match="zero or more nodes"):
        KubeletConfig.uniform(-1)


def test_allocatable_leaves_out_gpus_when_there_are_none() -> None:
    assert GPU not in NodeConfig(name="n").allocatable()
