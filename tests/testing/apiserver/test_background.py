"""The shareable background server: its own thread and loop, reachable from any loop."""

from __future__ import annotations

import json
import urllib.request

import pytest

from etctl.runtime import CONFIGMAPS
from etctl.testing import BackgroundApiServer


def test_serves_from_its_own_thread_and_runs_calls_on_its_loop() -> None:
    with BackgroundApiServer(seed=3) as background:
        with urllib.request.urlopen(background.url + "/api/v1/namespaces", timeout=5) as response:
            names = [n["metadata"]["name"] for n in json.load(response)["items"]]
        assert "default" in names
        created = background.call(
            lambda s: s.storage.create(CONFIGMAPS, {"metadata": {"name": "c"}}, namespace="default")
        )
        assert created["metadata"]["name"] == "c"
        listed = background.call(lambda s: s.storage.list(CONFIGMAPS, namespace="default"))
        assert sorted(o["metadata"]["name"] for o in listed.items) == ["c", "kube-root-ca.crt"]
    with pytest.raises(RuntimeError, match="not running"):
        _ = background.server
