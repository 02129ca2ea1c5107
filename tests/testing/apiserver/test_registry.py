"""The registry of served resources."""

from __future__ import annotations

from etctl.testing._apiserver.registry import Registry, ResourceInfo, VersionInfo, version_priority
from etctl.testing._apiserver.strategy import Strategy


def test_version_priority_orders_like_kubernetes() -> None:
    versions = ["v1alpha1", "foo", "v2", "v1beta2", "v1", "v10", "v1beta1", "v11alpha2"]
    assert sorted(versions, key=version_priority) == [
        "v10", "v2", "v1", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo"
    ]  # fmt: skip


def _info(*versions: VersionInfo) -> ResourceInfo:
    return ResourceInfo(
        group="g.io",
        plural="things",
        singular="thing",
        kind="Thing",
        namespaced=True,
        versions=versions,
        strategy=Strategy(),
    )


def test_resolution_sees_served_versions_only_and_notifies_changes() -> None:
    registry = Registry()
    changes: list[int] = []
    registry.on_change(lambda: changes.append(registry.revision))
    info = _info(VersionInfo("v1", storage=True), VersionInfo("v2", served=False, storage=False))
    registry.register(info)
    assert registry.resolve("g.io", "v1", "things") is info
    assert registry.resolve("g.io", "v2", "things") is None
    assert registry.groups() == {"g.io": ["v1"]}
    assert registry.by_kind("g.io", "Thing") is info
    assert info.list_kind == "ThingList"
    assert info.storage_version.name == "v1"
    assert registry.unregister("g.io", "things") is info
    assert registry.unregister("g.io", "things") is None
    assert changes == [1, 2]
