import argparse
from pathlib import Path

import pytest

from etctl.cli._run import job_settings
from etctl.cli._settings import (
    OPTIONS,
    RunSettings,
    SettingsError,
    add_run_arguments,
    settings_from,
)
from etctl.common import DEFAULT_JOB_WORKERS, JobSettings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="etctl run")
    add_run_arguments(p)
    return p


def settings(*argv: str, env: dict[str, str] | None = None) -> RunSettings:
    return settings_from(parser().parse_args(list(argv)), env or {})


def test_defaults() -> None:
    s = settings()
    assert s == RunSettings()
    assert (s.metrics_bind_address, s.health_probe_bind_address) == (":8443", ":8081")
    assert s.metrics_secure  # kubebuilder's scaffold: HTTPS, authenticated and authorized
    assert (s.metrics_cert_path, s.metrics_cert_name, s.metrics_cert_key) == (
        "",
        "tls.crt",
        "tls.key",
    )
    assert (s.leader_elect_lease_duration, s.leader_elect_renew_deadline) == (15.0, 10.0)
    assert s.leader_elect_retry_period == 2.0
    assert s.jobs == ()
    assert s.namespaces == ()
    assert s.log_format == "json"
    assert s.log_level == "info"
    # The product batches an elastic job's member changes; the library's JobSettings does not.
    assert s.member_batch_period == 0.5
    assert job_settings(s).member_batch == 0.5
    assert JobSettings().member_batch == 0.0


def test_flags() -> None:
    s = settings(
        "--jobs=tfjob",
        "--namespace",
        "a",
        "--namespace=b,c",
        "--leader-elect",
        "--leader-election-id=etctl.example.com",
        "--leader-election-namespace=ops",
        "--leader-elect-lease-duration=30s",
        "--leader-elect-renew-deadline=20s",
        "--leader-elect-retry-period=1s",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--max-concurrent-reconciles=8",
        "--cluster-domain=cluster.local",
        "--gang-scheduler=volcano",
        "--member-batch-period=250ms",
        "--log-format=console",
        "--log-level=DEBUG",
        "--kubeconfig=/tmp/kc",
        "--context=dev",
    )
    assert s.jobs == ("tfjob",)
    assert s.namespaces == ("a", "b", "c")
    assert s.leader_elect is True
    assert (s.leader_election_id, s.leader_election_namespace) == ("etctl.example.com", "ops")
    assert (s.leader_elect_lease_duration, s.leader_elect_renew_deadline) == (30.0, 20.0)
    assert s.leader_elect_retry_period == 1.0
    assert (s.metrics_bind_address, s.health_probe_bind_address) == ("0", "127.0.0.1:0")
    assert s.max_concurrent_reconciles == 8
    assert (s.cluster_domain, s.gang_scheduler) == ("cluster.local", "volcano")
    assert s.member_batch_period == 0.25
    assert (s.log_format, s.log_level) == ("console", "debug")
    assert (s.kubeconfig, s.context) == ("/tmp/kc", "dev")


def test_switch_takes_an_optional_value() -> None:
    assert settings("--leader-elect=false").leader_elect is False
    assert settings("--leader-elect=true").leader_elect is True


def test_environment_under_flags() -> None:
    env = {
        "ETCTL_MAX_CONCURRENT_RECONCILES": "3",
        "ETCTL_NAMESPACE": "x, y",
        "ETCTL_LEADER_ELECT": "yes",
        "ETCTL_LOG_LEVEL": "warning",
    }
    s = settings("--log-level=error", env=env)
    assert s.max_concurrent_reconciles == 3
    assert s.namespaces == ("x", "y")
    assert s.leader_elect is True
    assert s.log_level == "error"


def test_namespace_env_uses_the_flag_name() -> None:
    assert {o.flag: o.env for o in OPTIONS}["--namespace"] == "ETCTL_NAMESPACE"


def test_custom_cluster_domain_as_kubeflow_reads_it() -> None:
    assert settings(env={"CUSTOM_CLUSTER_DOMAIN": "corp.local"}).cluster_domain == "corp.local"
    both = {"CUSTOM_CLUSTER_DOMAIN": "corp.local", "ETCTL_CLUSTER_DOMAIN": "cluster.local"}
    assert settings(env=both).cluster_domain == "cluster.local"
    assert settings("--cluster-domain=x.y", env=both).cluster_domain == "x.y"


def test_blank_environment_values_are_unset() -> None:
    blank = settings(env={"ETCTL_MAX_CONCURRENT_RECONCILES": " "})
    assert blank.max_concurrent_reconciles == DEFAULT_JOB_WORKERS == 16


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max-concurrent-reconciles=0"],
            "argument --max-concurrent-reconciles: '0' must be at least 1",
        ),
        (["--gang-scheduler=kube-batch"], "argument --gang-scheduler: 'kube-batch' is not one of"),
        (["--log-format=xml"], "argument --log-format"),
        (["--metrics-bind-address=8080"], "argument --metrics-bind-address"),
        (["--leader-elect-lease-duration=soon"], "argument --leader-elect-lease-duration"),
        (["--leader-elect=perhaps"], "argument --leader-elect"),
        (["--member-batch-period=-1"], "argument --member-batch-period: '-1' must not be"),
        (["--namespace=Bad_NS"], "argument --namespace"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_bad_flags_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_environment_names_the_variable() -> None:
    with pytest.raises(
        SettingsError, match="environment variable ETCTL_LOG_LEVEL: 'loud' is not one of"
    ):
        settings(env={"ETCTL_LOG_LEVEL": "loud"})


def test_lease_timings_are_checked_together() -> None:
    with pytest.raises(SettingsError, match="lease-duration must be longer than"):
        settings("--leader-elect-lease-duration=10s")
    with pytest.raises(SettingsError, match=r"renew-deadline must be longer than 1\.2 x"):
        settings("--leader-elect-retry-period=9s")


def test_help_documents_every_flag_with_its_variable_and_default() -> None:
    text = " ".join(parser().format_help().split())
    for option in OPTIONS:
        assert option.flag in text
        assert f"env {option.env}" in text
    assert "default: :8443" in text
    assert "default: :8081" in text
    assert "default: 15s" in text
    assert "CUSTOM_CLUSTER_DOMAIN" in text


def test_every_setting_has_an_option() -> None:
    assert {o.field for o in OPTIONS} == set(RunSettings.model_fields)


def test_operations_guide_lists_every_flag_and_variable() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    for option in OPTIONS:
        assert f"`{option.flag} " in guide or f"`{option.flag}[" in guide, option.flag
        assert f"`{option.env}`" in guide, option.env
