"""The simulated data plane of the embedded API server: nodes, a scheduler and a kubelet.

See :class:`Kubelet` (attach it to a started :class:`~etctl.testing.ApiServer`, or pass
``kubelet=KubeletConfig(...)`` to the server), :class:`KubeletConfig` and :class:`NodeConfig`
for its knobs, and :class:`Behaviour` / :class:`PodPolicy` for what simulated containers do.
"""

from etctl.testing._kubelet.behaviour import ANNOTATION_PREFIX, Behaviour, PodPolicy, Policy
from etctl.testing._kubelet.config import GPU, KubeletConfig, NodeConfig
from etctl.testing._kubelet.host import KubeletHost
from etctl.testing._kubelet.kubelet import Kubelet

__all__ = [
    "ANNOTATION_PREFIX",
    "GPU",
    "Behaviour",
    "Kubelet",
    "KubeletConfig",
    "KubeletHost",
    "NodeConfig",
    "PodPolicy",
    "Policy",
]
