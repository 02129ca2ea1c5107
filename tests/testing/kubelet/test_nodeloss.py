"""How long a pod outlives the loss of its node."""

from __future__ import annotations

from etctl.testing._kubelet.nodeloss import toleration_seconds

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}


def test_toleration_seconds() -> None:
    assert toleration_seconds({}) == 0.0
    assert toleration_seconds({"tolerations": [{**UNREACHABLE, "tolerationSeconds": 300}]}) == 300.0
    assert toleration_seconds({"tolerations": [UNREACHABLE]}) is None
    assert toleration_seconds({"tolerations": [{"operator": "Exists"}]}) is None
    both = [{**UNREACHABLE, "tolerationSeconds": 60}, {**UNREACHABLE, "tolerationSeconds": 10}]
    assert toleration_seconds({"tolerations": both}) == 10.0
