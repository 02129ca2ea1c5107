"""Kubelet admission of hand-placed pods."""

from __future__ import annotations

from etctl.testing._kubelet.admission import admit
from etctl.testing._kubelet.config import GPU, NodeConfig

NODE = NodeConfig(name="n", cpu="2", memory="4Gi", pods=2, gpus=1)
NODE_OBJECT = {"metadata": {"name": "n", "labels": {"zone": "a"}}}


def _spec(**requests: str) -> dict[str, object]:
    return {"containers": [{"name": "c", "resources": {"requests": requests}}]}


def test_a_pod_that_fits_is_admitted() -> None:
    assert admit(_spec(cpu="1"), NODE, NODE_OBJECT, [_spec(cpu="1")]) is None


def test_resources_pods_and_affinity_are_checked() -> None:
    assert admit(_spec(memory="5Gi"), NODE, NODE_OBJECT, []) == (
        "OutOfmemory",
        "Pod was rejected: Node didn't have enough resource: memory, requested: 5368709120, "
        "used: 0, capacity: 4294967296",
    )
    gpus = admit(_spec(**{GPU: "2"}), NODE, NODE_OBJECT, [])
    assert gpus is not None
    assert gpus[0] == "OutOfnvidia.com/gpu"
    assert admit(_spec(), NODE, NODE_OBJECT, [_spec(), _spec()]) == (
        "OutOfpods",
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, "
        "capacity: 2",
    )
    selected = {**_spec(), "nodeSelector": {"zone": "b"}}
    assert admit(selected, NODE, NODE_OBJECT, []) == (
        "NodeAffinity",
        "Pod was rejected: Predicate NodeAffinity failed",
    )
