"""The CRD files: written, checked against the generator, and the kinds they cover."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from etctl.cli._crdfiles import check_manifests, render_manifests, write_manifests
from etctl.cli._registry import discover
from etctl.common import crd_manifest
from etctl.errors import ConfigError
from tests.common.crd._widget import widget
from tests.schema_support import CRD_DIR


def test_write_then_check_round_trip(tmp_path: Path) -> None:
    resources = [widget()]
    (written,) = write_manifests(tmp_path / "crds", resources)
    assert written.name == "example.com_widgets.yaml"
    assert check_manifests(tmp_path / "crds", resources) == []
    text = written.read_text()
    assert yaml.safe_load(text) == crd_manifest(resources[0])
    assert "&id" not in text
    assert "*id" not in text


def test_check_reports_missing_changed_and_stale_files(tmp_path: Path) -> None:
    assert check_manifests(tmp_path, [widget()]) == [
        f"{tmp_path}/example.com_widgets.yaml: missing"
    ]
    write_manifests(tmp_path, [widget()])
    (tmp_path / "example.com_widgets.yaml").write_text("# edited\n")
    (tmp_path / "unrelated.yaml").write_text("kind: ConfigMap\n")
    stale = render_manifests([widget(plural="gadgets")])["example.com_gadgets.yaml"]
    (tmp_path / "example.com_gadgets.yaml").write_text(stale)
    assert check_manifests(tmp_path, [widget()]) == [
        f"{tmp_path}/example.com_widgets.yaml: differs from the generated CRD",
        f"{tmp_path}/example.com_gadgets.yaml: generated for a custom resource that no longer "
        "exists",
    ]


def test_duplicate_resources_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"two custom resources are named widgets\.example\.com"):
        render_manifests([widget(), widget()])


def test_builtin_resources_are_discovered_through_entry_points() -> None:
    names = [resource.name for resource in discover().custom_resources()]
    assert names == [
        "mpijobs.kubeflow.org",
        "pytorchjobs.kubeflow.org",
        "scaleins.kai.alibabacloud.com",
        "scaleouts.kai.alibabacloud.com",
        "tfjobs.kubeflow.org",
        "trainingjobs.kai.alibabacloud.com",
    ]
    assert discover("etctl.no-such-group").custom_resources() == []


def test_committed_manifests_match_the_generator() -> None:
    problems = check_manifests(CRD_DIR, discover().custom_resources())
    assert problems == [], "regenerate with: etctl crds manifests/base/crds"
