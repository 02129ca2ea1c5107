"""The flags of ``etctl sandbox``: each value checked at parse time, then turned into options."""

from __future__ import annotations

from pathlib import Path

import pytest

from etctl.cli import build_parser
from etctl.cli._sandbox_args import (
    demo_options,
    parse_count,
    parse_delay,
    parse_port,
    parse_resource_quantity,
    sandbox_options,
)
from etctl.cli._sandbox_options import DemoOptions, SandboxOptions


def test_ports_go_from_0_to_65535() -> None:
    assert parse_port("0") == 0
    assert parse_port(" 6443 ") == 6443
    for bad in ("65536", "-1", "http", ""):
        with pytest.raises(ValueError, match="is not a port"):
            parse_port(bad)


def test_counts_may_be_zero() -> None:
    assert parse_count("0") == 0
    assert parse_count("8") == 8
    with pytest.raises(ValueError, match="is not a whole number"):
        parse_count("1.5")


def test_delays_may_be_zero_and_are_durations_otherwise() -> None:
    assert parse_delay("0") == 0.0
    assert parse_delay("0s") == 0.0
    assert parse_delay("500ms") == 0.5
    assert parse_delay("1m") == 60.0
    assert parse_delay("0.0ms") == 0.0
    with pytest.raises(ValueError, match="must not be negative"):
        parse_delay("-1")
    with pytest.raises(ValueError, match="is not a duration"):
        parse_delay("soon")


def test_quantities_are_kept_as_written_and_must_be_positive() -> None:
    assert parse_resource_quantity(" 7500m ") == "7500m"
    assert parse_resource_quantity("32Gi") == "32Gi"
    with pytest.raises(ValueError, match="must be more than zero"):
        parse_resource_quantity("0")
    with pytest.raises(ValueError, match="is not a quantity"):
        parse_resource_quantity("lots")


def test_no_flags_give_the_default_options() -> None:
    args = build_parser().parse_args(["sandbox"])
    assert sandbox_options(args) == SandboxOptions()
    assert demo_options(args) == DemoOptions()
    assert args.demo is None
    assert args.log_level is None


def test_flags_become_options() -> None:
    args = build_parser().parse_args(
        [
            "sandbox",
            "--demo",
            "--kubeconfig=/tmp/k",
            "--port=6443",
            "--nodes=2",
            "--node-cpu=4",
            "--node-memory=16Gi",
            "--node-gpus=0",
            "--node-pods=20",
            "--pod-start-delay=250ms",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=127.0.0.1:8081",
            "--step-timeout=1m",
        ]
    )
    assert args.demo == "trainingjob"
    assert sandbox_options(args) == SandboxOptions(
        kubeconfig=Path("/tmp/k"),
        port=6443,
        nodes=2,
        node_cpu="4",
        node_memory="16Gi",
        node_gpus=0,
        node_pods=20,
        pod_start_delay=0.25,
        metrics_bind_address="0",
        health_probe_bind_address="127.0.0.1:8081",
    )
    assert demo_options(args) == DemoOptions(step_timeout=60.0)


def test_the_demo_may_name_a_kind() -> None:
    assert demo_options(build_parser().parse_args(["sandbox", "--demo"])).kind == "trainingjob"
    args = build_parser().parse_args(["sandbox", "--demo", "mpijob"])
    assert demo_options(args) == DemoOptions(kind="mpijob")
    args = build_parser().parse_args(["sandbox", "--demo=trainingjob", "--nodes=2"])
    assert (demo_options(args).kind, args.nodes) == ("trainingjob", 2)


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("--demo=tfjob", "argument --demo: invalid choice: 'tfjob'"),
        ("--port=70000", "argument --port: '70000' is not a port"),
        ("--nodes=0", "argument --nodes: '0' must be at least 1"),
        ("--node-memory=lots", "argument --node-memory: 'lots' is not a quantity"),
        ("--node-cpu=0", "argument --node-cpu: '0' must be more than zero"),
        ("--node-gpus=-1", "argument --node-gpus: '-1' is not a whole number"),
        ("--pod-start-delay=soon", "argument --pod-start-delay: 'soon' is not a duration"),
        ("--step-timeout=0", "argument --step-timeout: '0' must be a positive duration"),
        ("--metrics-bind-address=8080", "argument --metrics-bind-address: '8080' is not a bind"),
        ("--log-level=loud", "argument --log-level: invalid choice: 'loud'"),
    ],
)
def test_bad_flags_are_usage_errors(
    flag: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["sandbox", flag])
    assert exited.value.code == 2
    assert expected in capsys.readouterr().err
