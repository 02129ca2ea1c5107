"""``etctl run``'s webhook settings: kubebuilder's defaults, the certificate's names, refusals."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from etctl.cli import main
from etctl.cli._settings import RunSettings, add_run_arguments, settings_from
from etctl.cli._webhook_settings import webhook_options
from etctl.errors import ConfigError


def settings(*argv: str) -> RunSettings:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return settings_from(parser.parse_args(list(argv)), {})


def test_kubebuilders_defaults_and_the_services_names_in_the_pods_namespace() -> None:
    server, rotation = webhook_options(settings("--webhooks"), lambda: "ml-system")
    assert (server.host, server.port) == ("", 9443)
    assert server.cert_path == Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
    assert rotation is not None
    assert rotation.secret_name == "etctl-webhook-server-cert"
    assert rotation.namespace == "ml-system"
    assert rotation.dns_names == (
        "etctl-webhook-service.ml-system.svc",
        "etctl-webhook-service.ml-system.svc.cluster.local",
    )
    assert rotation.validating_webhooks == ("etctl-validating-webhooks",)
    assert rotation.mutating_webhooks == ("etctl-mutating-webhooks",)


def test_a_url_puts_its_host_in_the_certificate() -> None:
    by_ip = settings(
        "--webhooks", "--webhook-url=https://192.0.2.7:9443", "--webhook-namespace=ops"
    )
    _, rotation = webhook_options(by_ip, lambda: "")
    assert rotation is not None
    assert rotation.ip_addresses == ("192.0.2.7",)
    by_name = settings("--webhooks", "--webhook-url=https://dev.example", "--webhook-namespace=ops")
    _, rotation = webhook_options(by_name, lambda: "")
    assert rotation is not None
    assert rotation.dns_names[-1] == "dev.example"


def test_certificates_from_elsewhere_need_no_namespace_and_no_rotation() -> None:
    server, rotation = webhook_options(
        settings("--webhooks", "--webhook-certs=external", "--webhook-cert-path=/certs"),
        lambda: "",
    )
    assert rotation is None
    assert server.cert_dir == Path("/certs")
    with pytest.raises(ConfigError, match="--webhook-namespace"):
        webhook_options(settings("--webhooks"), lambda: "")


def test_bad_values_exit_2_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--webhook-port=70000"], ["--webhook-url=http://plain:80"]):
        with pytest.raises(SystemExit) as exited:
            main(["run", *argv])
        assert exited.value.code == 2
        assert argv[0].split("=")[0] in capsys.readouterr().err


def test_outside_a_pod_keeping_certificates_needs_a_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused before any connection: the kubeconfig is not even read.
    status = main(["run", "--webhooks", f"--kubeconfig={tmp_path / 'missing'}"])
    assert status == 2
    assert "--webhook-namespace" in capsys.readouterr().err
