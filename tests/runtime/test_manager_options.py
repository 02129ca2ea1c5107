"""Manager options: validation, defaults and the leader-election settings they produce."""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.errors import ConfigError
from etctl.runtime import ManagerOptions
from etctl.runtime import _manager_options as manager_options


def test_defaults_are_controller_runtimes() -> None:
    options = ManagerOptions()
    # A library's manager claims no port unless asked (etctl run's flags default to :8080/:8081).
    assert options.metrics_bind_address == "0"
    assert options.health_probe_bind_address == "0"
    assert (options.lease_duration, options.renew_deadline, options.retry_period) == (15, 10, 2)
    assert options.graceful_shutdown_timeout == 30.0
    assert options.cache_sync_timeout == 120.0
    assert options.cache.namespaces is None
    assert options.leader_election_config() is None


def test_bad_options_fail_when_built() -> None:
    with pytest.raises(ConfigError, match="leader_election_id"):
        ManagerOptions(leader_election=True)
    with pytest.raises(ConfigError, match="bind address"):
        ManagerOptions(metrics_bind_address="8080")
    with pytest.raises(ConfigError, match="bind address"):
        ManagerOptions(health_probe_bind_address="localhost:http")
    with pytest.raises(ConfigError, match="graceful_shutdown_timeout"):
        ManagerOptions(graceful_shutdown_timeout=-1)
    with pytest.raises(ConfigError, match="cache_sync_timeout"):
        ManagerOptions(cache_sync_timeout=0)
    durations = ManagerOptions(
        leader_election=True,
        leader_election_id="x",
        leader_election_namespace="default",
        lease_duration=5,
    )
    with pytest.raises(ConfigError, match="renew_deadline"):
        durations.leader_election_config()


def test_the_lease_lives_in_the_pods_namespace_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = ManagerOptions(leader_election=True, leader_election_id="etctl-lock")
    monkeypatch.setattr(manager_options, "SERVICE_ACCOUNT_NAMESPACE", tmp_path / "missing")
    with pytest.raises(ConfigError, match="leader_election_namespace"):
        options.leader_election_config()
    in_pod = tmp_path / "namespace"
    in_pod.write_text("operators\n")
    monkeypatch.setattr(manager_options, "SERVICE_ACCOUNT_NAMESPACE", in_pod)
    config = options.leader_election_config()
    assert config is not None
    assert (config.name, config.namespace) == ("etctl-lock", "operators")
    host, _, suffix = config.identity.rpartition("_")
    assert host
    assert len(suffix) == 36
    told = ManagerOptions(
        leader_election=True,
        leader_election_id="etctl-lock",
        leader_election_namespace="elsewhere",
        leader_election_identity="me",
        lease_duration=30,
        renew_deadline=20,
        retry_period=4,
    ).leader_election_config()
    assert told is not None
    assert (told.namespace, told.identity) == ("elsewhere", "me")
    assert (told.lease_duration, told.renew_deadline, told.retry_period) == (30, 20, 4)
