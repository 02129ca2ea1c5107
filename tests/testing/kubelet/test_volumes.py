"""Volumes materialised from ConfigMaps, Secrets and the downward API."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from etctl.runtime import ObjectView
from etctl.testing._kubelet.vfs import FileMeta
from etctl.testing._kubelet.volumes import (
    MountError,
    VolumeFiles,
    field_value,
    materialise,
    resource_value,
    sources,
)

POD: dict[str, Any] = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"b": "2", "a": 'say "hi"'},
        "annotations": {"note": "x"},
    },
    "spec": {
        "nodeName": "node-0",
        "serviceAccountName": "default",
        "containers": [
            {"name": "main", "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}}}
        ],
    },
    "status": {"podIP": "10.244.0.2", "hostIP": "172.18.0.2"},
}
OBJECTS: dict[tuple[str, str], ObjectView] = {
    ("configmap", "cfg"): {
        "data": {"hostfile": "w0\n", "run.sh": "echo\n"},
        "binaryData": {"bin": base64.b64encode(b"\x00\x01").decode()},
    },
    ("secret", "creds"): {"data": {"token": base64.b64encode(b"s3cret").decode()}},
}


def _lookup(kind: str, name: str) -> ObjectView | None:
    return OBJECTS.get((kind, name))


@pytest.fixture
def meta() -> FileMeta:
    return FileMeta(lambda: datetime(2026, 1, 1, tzinfo=UTC))


def _write(
    volume: dict[str, Any], target: Path, meta: FileMeta, record: VolumeFiles | None = None
) -> VolumeFiles:
    record = record or VolumeFiles()
    materialise(volume, target, meta, record, pod=POD, lookup=_lookup)
    return record


def test_a_config_map_becomes_one_file_per_key(tmp_path: Path, meta: FileMeta) -> None:
    _write({"name": "v", "configMap": {"name": "cfg"}}, tmp_path, meta)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "hostfile", "run.sh"]
    assert (tmp_path / "bin").read_bytes() == b"\x00\x01"
    assert meta.mode(tmp_path / "hostfile", is_dir=False) == 0o644


def test_items_modes_and_default_mode(tmp_path: Path, meta: FileMeta) -> None:
    volume = {
        "name": "v",
        "configMap": {
            "name": "cfg",
            "defaultMode": 0o444,
            "items": [
                {"key": "hostfile", "path": "conf/hostfile"},
                {"key": "run.sh", "path": "run.sh", "mode": 0o555},
            ],
        },
    }
    _write(volume, tmp_path, meta)
    assert (tmp_path / "conf" / "hostfile").read_text() == "w0\n"
    assert not (tmp_path / "bin").exists()
    assert meta.mode(tmp_path / "conf" / "hostfile", is_dir=False) == 0o444
    assert meta.mode(tmp_path / "run.sh", is_dir=False) == 0o555


def test_secrets_are_decoded(tmp_path: Path, meta: FileMeta) -> None:
    _write({"name": "v", "secret": {"secretName": "creds"}}, tmp_path, meta)
    assert (tmp_path / "token").read_bytes() == b"s3cret"


def test_missing_sources_and_keys_fail_unless_optional(tmp_path: Path, meta: FileMeta) -> None:
    with pytest.raises(MountError, match='configmap "gone" not found'):
        _write({"name": "v", "configMap": {"name": "gone"}}, tmp_path, meta)
    with pytest.raises(MountError, match='secret "gone" not found'):
        _write({"name": "v", "secret": {"secretName": "gone"}}, tmp_path, meta)
    with pytest.raises(MountError, match="configmap references non-existent config key: nope"):
        _write(
            {"name": "v", "configMap": {"name": "cfg", "items": [{"key": "nope", "path": "x"}]}},
            tmp_path,
            meta,
        )
    _write({"name": "v", "configMap": {"name": "gone", "optional": True}}, tmp_path / "opt", meta)
    assert list((tmp_path / "opt").iterdir()) == []


def test_item_paths_may_not_escape(tmp_path: Path, meta: FileMeta) -> None:
    volume = {
        "name": "v",
        "configMap": {"name": "cfg", "items": [{"key": "hostfile", "path": "../x"}]},
    }
    with pytest.raises(MountError, match=r"may not contain '\.\.'"):
        _write(volume, tmp_path / "v", meta)
    assert not (tmp_path / "x").exists()


def test_a_refresh_removes_keys_that_went_away(tmp_path: Path, meta: FileMeta) -> None:
    record = _write({"name": "v", "configMap": {"name": "cfg"}}, tmp_path, meta)
    (tmp_path / "scratch").write_text("kept: not ours")
    OBJECTS[("configmap", "cfg")] = {"data": {"hostfile": "w0\nw1\n"}}
    try:
        _write({"name": "v", "configMap": {"name": "cfg"}}, tmp_path, meta, record)
    finally:
        OBJECTS[("configmap", "cfg")] = {"data": {"hostfile": "w0\n", "run.sh": "echo\n"}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostfile", "scratch"]
    assert (tmp_path / "hostfile").read_text() == "w0\nw1\n"


def test_downward_api_and_projected_volumes(tmp_path: Path, meta: FileMeta) -> None:
    volume = {
        "name": "v",
        "projected": {
            "sources": [
                {"configMap": {"name": "cfg", "items": [{"key": "hostfile", "path": "hostfile"}]}},
                {"secret": {"name": "creds"}},
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                            {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                            {
                                "path": "cpu",
                                "resourceFieldRef": {
                                    "containerName": "main",
                                    "resource": "limits.cpu",
                                },
                            },
                        ]
                    }
                },
                {"serviceAccountToken": {"path": "token-sa"}},
            ]
        },
    }
    _write(volume, tmp_path, meta)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cpu",
        "hostfile",
        "labels",
        "name",
        "token",
    ]
    assert (tmp_path / "labels").read_text() == 'a="say \\"hi\\""\nb="2"'
    assert (tmp_path / "cpu").read_text() == "2"
    assert sources(volume) == {("configmap", "cfg"), ("secret", "creds")}


def test_field_and_resource_values() -> None:
    assert field_value(POD, "metadata.annotations['note']") == "x"
    assert field_value(POD, "status.podIP") == "10.244.0.2"
    assert field_value(POD, "spec.nodeName") == "node-0"
    assert field_value(POD, "metadata.generation") is None
    memory = {"containerName": "main", "resource": "limits.memory", "divisor": "1Mi"}
    assert resource_value(POD, memory) == "1024"
    assert resource_value(POD, {"resource": "requests.cpu", "divisor": "1m"}, "main") == "1500"
