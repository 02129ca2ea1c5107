"""The sandbox's options: the operator runs as ``etctl run`` would, on the sandbox's addresses."""

from __future__ import annotations

from pathlib import Path

from etctl.cli._sandbox_options import SandboxOptions
from etctl.cli._settings import RunSettings


def test_the_operator_settings_are_etctl_runs_defaults_on_loopback() -> None:
    options = SandboxOptions(ready_timeout=5, shutdown_timeout=2)
    settings = options.run_settings(Path("/k"), cert_dir=Path("/certs"))
    assert settings == RunSettings(
        kubeconfig="/k",
        leader_elect=False,
        metrics_bind_address="127.0.0.1:0",
        metrics_secure=False,  # the sandbox's server authenticates no one
        health_probe_bind_address="127.0.0.1:0",
        cache_sync_timeout=5,
        graceful_shutdown_timeout=2,
        # Webhooks as a cluster runs them, on a free loopback port, keeping their own certificate.
        webhooks=True,
        webhook_host="127.0.0.1",
        webhook_port=0,
        webhook_namespace="etctl-system",
        webhook_cert_path="/certs",
    )
    without = SandboxOptions(webhooks=False).run_settings(Path("/k"))
    assert not without.webhooks
    # Every plugin, every namespace: nothing narrows what the operator runs.
    assert settings.jobs == ()
    assert settings.namespaces == ()
