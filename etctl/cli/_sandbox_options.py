"""The options of ``etctl sandbox`` and of its demo: plain values, checked where they are parsed.

:class:`SandboxOptions` shapes the sandbox cluster (:mod:`etctl.cli._embedded`): the API server's
port, the simulated nodes, the operator's addresses and timeouts. :class:`DemoOptions` bounds the
demo (:mod:`etctl.cli._demo`). This module imports nothing heavy, so the ``etctl`` command can
declare its flags without loading the embedded API server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from etctl.cli._settings import RunSettings

__all__ = ["DEMO_KINDS", "OPERATOR_NAMESPACE", "DemoOptions", "SandboxOptions"]

OPERATOR_NAMESPACE = "etctl-system"
"""The sandbox operator's namespace: its webhook Service and certificate Secret are there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxOptions:
    """How to shape the sandbox.

    Attributes:
        port: the API server's port (0: a free one).
        nodes: how many simulated nodes.
        node_cpu: allocatable CPU per node (a quantity).
        node_memory: allocatable memory per node (a quantity).
        node_gpus: allocatable ``nvidia.com/gpu`` per node.
        node_pods: pods per node.
        pod_start_delay: seconds the simulated kubelet takes to start each container (an image
            pull), so that pods are visibly ``ContainerCreating`` for a moment; 0 starts them at
            once. A pod's ``sim.etctl.io/start-delay`` annotation still wins.
        kubeconfig: where to write the kubeconfig (None: into the sandbox's temporary directory).
        metrics_bind_address: the operator's ``/metrics`` address (``0`` disables it).
        health_probe_bind_address: the operator's probe address (``0`` disables them).
        ready_timeout: seconds the operator may take to sync its caches.
        shutdown_timeout: seconds a graceful stop of the operator may take.
        webhooks: run the operator's admission webhooks, installed as the release installs
            them, so a bad manifest is refused by ``kubectl apply`` as on a cluster.
    """

    port: int = 0
    nodes: int = 3
    node_cpu: str = "8"
    node_memory: str = "32Gi"
    node_gpus: int = 4
    node_pods: int = 110
    pod_start_delay: float = 1.0
    kubeconfig: Path | None = None
    metrics_bind_address: str = "127.0.0.1:0"
    health_probe_bind_address: str = "127.0.0.1:0"
    ready_timeout: float = 30.0
    shutdown_timeout: float = 10.0
    webhooks: bool = True

    def run_settings(self, kubeconfig: Path, *, cert_dir: Path | None = None) -> RunSettings:
        """The operator's settings: as ``etctl run`` with defaults, on the sandbox's addresses.

        With webhooks, the webhook server listens on a free loopback port and keeps its own
        certificates (in :data:`OPERATOR_NAMESPACE`'s Secret, its files in ``cert_dir``).
        """
        webhooks: dict[str, object] = {}
        if self.webhooks:
            webhooks = {
                "webhooks": True,
                "webhook_host": "127.0.0.1",
                "webhook_port": 0,
                "webhook_namespace": OPERATOR_NAMESPACE,
            }
            if cert_dir is not None:
                webhooks["webhook_cert_path"] = str(cert_dir)
        return RunSettings(
            kubeconfig=str(kubeconfig),
            leader_elect=False,
            metrics_bind_address=self.metrics_bind_address,
            # The sandbox's API server authenticates no one: its metrics are served as they
            # were, plain, on loopback.
            metrics_secure=False,
            health_probe_bind_address=self.health_probe_bind_address,
            cache_sync_timeout=self.ready_timeout,
            graceful_shutdown_timeout=self.shutdown_timeout,
            **webhooks,
        )


DEMO_KINDS = ("trainingjob", "mpijob", "pytorch")
"""The job kinds ``etctl sandbox --demo`` can show."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoOptions:
    """Which demo, and its limits.

    Attributes:
        step_timeout: seconds each step may take before the demo fails.
        poll_interval: seconds between looks at the API while waiting.
        kind: the job kind shown (one of :data:`DEMO_KINDS`).
    """

    step_timeout: float = 30.0
    poll_interval: float = 0.05
    kind: str = "trainingjob"
