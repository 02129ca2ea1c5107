"""The plugin's kubelet fixtures, run in a nested pytest."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest

from etctl.runtime._resources import PODS
from etctl.testing import ApiServer, Kubelet, KubeletConfig


@pytest.fixture
def etctl_kubelet_config():
    return KubeletConfig.uniform(2, cpu="2")


async def test_kubelet_fixture(etctl_apiserver, etctl_kubelet):
    assert isinstance(etctl_kubelet, Kubelet)
    assert etctl_apiserver.kubelet is etctl_kubelet
    assert sorted(etctl_kubelet.nodes) == ["node-0", "node-1"]
    assert etctl_kubelet.nodes["node-0"].config.cpu == "2"


def test_shared_server_runs_a_kubelet(etctl_shared_apiserver):
    nodes = etctl_shared_apiserver.call(lambda s: sorted(s.kubelet.nodes))
    assert nodes == ["node-0", "node-1", "node-2"]
"""


def test_the_kubelet_fixtures(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ETCTL_TEST_KUBECONFIG", raising=False)
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-p", "etctl.testing.pytest_plugin", "-q"
    )
    result.assert_outcomes(passed=2)
