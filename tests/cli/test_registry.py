"""The job plugin registry: entry points, plugins and their factories, CRD-only kinds."""

from __future__ import annotations

import pytest

from etctl.cli._registry import Registry, discover
from etctl.errors import ConfigError
from etctl.jobs.trainingjob import CUSTOM_RESOURCES as TRAININGJOB_CRDS
from tests.common.simplejob import SIMPLEJOB, SimpleJobPlugin


def test_a_plugin_class_is_built_and_its_capabilities_resolved() -> None:
    registry = Registry()
    entry = registry.register("simplejob", SimpleJobPlugin)
    assert isinstance(entry.plugin, SimpleJobPlugin)
    assert entry.resources == (SIMPLEJOB,)
    caps = entry.capabilities
    assert caps.services is entry.plugin
    assert caps.extra_objects is entry.plugin
    assert caps.planner is entry.plugin
    assert caps.judge is None
    assert caps.restart is None
    assert registry.plugins() == [entry]
    assert registry.get("simplejob") is entry
    assert "simplejob" in registry


def test_crd_only_entries_publish_crds_without_a_controller() -> None:
    registry = Registry()
    registry.register("simplejob", SimpleJobPlugin())
    registry.register("trainingjob", TRAININGJOB_CRDS)
    assert [r.kind for r in registry.custom_resources()] == [
        "ScaleIn",
        "ScaleOut",
        "SimpleJob",
        "TrainingJob",
    ]
    assert [e.name for e in registry.plugins()] == ["simplejob"]
    with pytest.raises(ConfigError, match="publishes CRDs only"):
        registry.plugins(["trainingjob"])
    with pytest.raises(ConfigError, match=r"registered: simplejob, trainingjob"):
        registry.get("tfjob")


def test_bad_registrations_fail_loudly() -> None:
    registry = Registry()
    registry.register("simplejob", SimpleJobPlugin)
    with pytest.raises(ConfigError, match="registered twice"):
        registry.register("simplejob", SimpleJobPlugin)
    with pytest.raises(ConfigError, match="expected a JobPlugin"):
        registry.register("junk", object())
    with pytest.raises(ConfigError, match="expected a JobPlugin"):
        registry.register("nothing", [])

    class NeedsArguments(SimpleJobPlugin):
        def __init__(self, flavour: str) -> None:
            self.flavour = flavour

    with pytest.raises(ConfigError, match="cannot be built without arguments"):
        registry.register("args", NeedsArguments)

    class WrongOrder(SimpleJobPlugin):
        @property
        def custom_resources(self) -> tuple[()]:
            return ()

    with pytest.raises(ConfigError, match="own CRD first"):
        registry.register("order", WrongOrder)


def test_discovery_through_the_installed_entry_points() -> None:
    registry = discover()
    names = {resource.name for resource in registry.custom_resources()}
    assert {"tfjobs.kubeflow.org", "trainingjobs.kai.alibabacloud.com"} <= names
    assert len(discover("etctl.no-such-group")) == 0
