"""The ``etctl`` pytest plugin: API server fixtures and the real-cluster switch.

Fixtures:

* ``etctl_apiserver``: a fresh :class:`~etctl.testing.ApiServer` per test, on the test's own event
  loop, with every hook (storage, faults, request log). Tests using it are marked ``hooks``.
* ``etctl_shared_apiserver``: one :class:`~etctl.testing.BackgroundApiServer` for the whole
  session, on its own thread and loop, so tests of any loop scope can share it over HTTP (use a
  namespace of your own per test). Tests using it are marked ``hooks``.
* ``etctl_kubeconfig``: the path of a kubeconfig for the cluster under test: the shared embedded
  server, or the real cluster named by ``ETCTL_TEST_KUBECONFIG``.
* ``etctl_kubelet``: the simulated kubelet and scheduler attached to ``etctl_apiserver`` (pods
  run), configured by ``etctl_kubelet_config`` (override it for other nodes or timings). The
  shared server runs a kubelet configured by the session fixture
  ``etctl_shared_kubelet_config`` (three nodes; override it, or return None for none).

The switch: with ``ETCTL_TEST_KUBECONFIG`` set, tests marked ``hooks`` (explicitly or through the
fixtures above) are skipped and ``etctl_kubeconfig`` points at that cluster; without it, tests
marked ``real_cluster`` are skipped. Tests marked ``kubectl`` are skipped where no ``kubectl`` is
on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from etctl.testing._apiserver.background import BackgroundApiServer
from etctl.testing._apiserver.server import ApiServer
from etctl.testing._kubelet import Kubelet, KubeletConfig

__all__ = [
    "ENV_KUBECONFIG",
    "etctl_apiserver",
    "etctl_apiserver_options",
    "etctl_kubeconfig",
    "etctl_kubelet",
    "etctl_kubelet_config",
    "etctl_shared_apiserver",
    "etctl_shared_kubelet_config",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "real_cluster_kubeconfig",
]

ENV_KUBECONFIG = "ETCTL_TEST_KUBECONFIG"
"""Names a kubeconfig: run the suite against that cluster instead of the embedded server."""

_HOOK_FIXTURES = frozenset({"etctl_apiserver", "etctl_shared_apiserver", "etctl_kubelet"})


def real_cluster_kubeconfig() -> Path | None:
    """The kubeconfig of the real cluster under test, if one is configured."""
    value = os.environ.get(ENV_KUBECONFIG, "").strip()
    return Path(value) if value else None


def pytest_configure(config: pytest.Config) -> None:
    """Declare the plugin's markers (harmless if the project declares them too)."""
    config.addinivalue_line("markers", "kubectl: needs a kubectl binary on PATH")
    config.addinivalue_line("markers", "real_cluster: runs only against ETCTL_TEST_KUBECONFIG")
    config.addinivalue_line("markers", "hooks: needs the embedded API server's test hooks")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark hook users, then skip what the chosen cluster or the machine cannot run."""
    real = real_cluster_kubeconfig()
    kubectl = shutil.which("kubectl")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _HOOK_FIXTURES:
            item.add_marker(pytest.mark.hooks)
        if real is not None and item.get_closest_marker("hooks") is not None:
            item.add_marker(
                pytest.mark.skip(reason=f"needs the embedded API server ({ENV_KUBECONFIG} is set)")
            )
        if real is None and item.get_closest_marker("real_cluster") is not None:
            item.add_marker(
                pytest.mark.skip(reason=f"set {ENV_KUBECONFIG} to run against a real cluster")
            )
        if kubectl is None and item.get_closest_marker("kubectl") is not None:
            item.add_marker(pytest.mark.skip(reason="kubectl is not installed"))


@pytest.fixture
def etctl_apiserver_options() -> dict[str, Any]:
    """Keyword arguments for the ``etctl_apiserver`` fixture's server; override to configure it.

    For example, a ``conftest.py`` returning
    ``{"clock": FakeClock(), "history": History(watch_cache_max=10)}``.
    """
    return {}


@pytest_asyncio.fixture
async def etctl_apiserver(etctl_apiserver_options: dict[str, Any]) -> AsyncIterator[ApiServer]:
    """A fresh embedded API server for one test, on the test's event loop."""
    async with ApiServer(**etctl_apiserver_options) as server:
        yield server


@pytest.fixture
def etctl_kubelet_config() -> KubeletConfig:
    """The ``etctl_kubelet`` fixture's configuration; override to change nodes or timings."""
    return KubeletConfig()


@pytest_asyncio.fixture
async def etctl_kubelet(
    etctl_apiserver: ApiServer, etctl_kubelet_config: KubeletConfig
) -> AsyncIterator[Kubelet]:
    """The simulated kubelet and scheduler of ``etctl_apiserver`` (on the server's clock)."""
    if etctl_apiserver.kubelet is not None:
        yield etctl_apiserver.kubelet
        return
    kubelet = Kubelet(etctl_apiserver, etctl_kubelet_config)
    kubelet.start()
    etctl_apiserver.kubelet = kubelet
    try:
        yield kubelet
    finally:
        etctl_apiserver.kubelet = None
        kubelet.stop()


@pytest.fixture(scope="session")
def etctl_shared_kubelet_config() -> KubeletConfig | None:
    """The shared server's kubelet (three nodes); override it, or return None for none."""
    return KubeletConfig.uniform(3)


@pytest.fixture(scope="session")
def etctl_shared_apiserver(
    etctl_shared_kubelet_config: KubeletConfig | None,
) -> Iterator[BackgroundApiServer]:
    """One embedded API server for the session, on its own thread (share it over HTTP)."""
    with BackgroundApiServer(kubelet=etctl_shared_kubelet_config) as server:
        yield server


@pytest.fixture(scope="session")
def etctl_kubeconfig(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Path:
    """A kubeconfig for the cluster under test (``ETCTL_TEST_KUBECONFIG``'s when set)."""
    real = real_cluster_kubeconfig()
    if real is not None:
        return real
    shared: BackgroundApiServer = request.getfixturevalue("etctl_shared_apiserver")
    return shared.write_kubeconfig(tmp_path_factory.mktemp("etctl") / "kubeconfig")
