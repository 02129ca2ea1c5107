"""The ``etctl`` pytest plugin: API server fixtures, targets and the real-cluster switch.

The plugin is opt-in: installing etctl changes no other project's test run. Load it with
``pytest -p etctl.testing.pytest_plugin``, or in the top-level ``conftest.py``::

    pytest_plugins = ["etctl.testing.pytest_plugin"]

Everything it adds is namespaced ``etctl_``.

Fixtures:

* ``etctl_apiserver``: a fresh :class:`~etctl.testing.ApiServer` per test, on the test's own event
  loop, with every hook (storage, faults, request log). Tests using it are marked ``etctl_hooks``.
* ``etctl_shared_apiserver``: one :class:`~etctl.testing.BackgroundApiServer` for the whole
  session, on its own thread and loop, so tests of any loop scope can share it over HTTP (use a
  namespace of your own per test). Tests using it are marked ``etctl_hooks``.
* ``etctl_kubeconfig``: the path of a kubeconfig for the cluster under test: the shared embedded
  server, or the real cluster named by ``ETCTL_TEST_KUBECONFIG``.
* ``etctl_target``: a :class:`~etctl.testing.ClusterTarget` for one test: a fresh embedded
  server with a namespace, or a namespace of its own on the real cluster (deleted afterwards).
  Tests written on it run in both modes. ``etctl_target_crds`` (override it) names the CRDs
  it serves.
* ``etctl_real_cluster``: the :class:`~etctl.testing.RealCluster` under test, or None.
* ``etctl_kubelet``: the simulated kubelet and scheduler attached to ``etctl_apiserver`` (pods
  run), configured by ``etctl_kubelet_config`` (override it for other nodes or timings). The
  shared server runs a kubelet configured by the session fixture
  ``etctl_shared_kubelet_config`` (three nodes; override it, or return None for none).

Markers:

* ``etctl_hooks(reason)``: needs the embedded server's hooks (fault injection, virtual time on the
  server, the request log, the simulated kubelet's behaviours...); skipped on a real cluster, with
  the reason.
* ``etctl_kubelet(requirement)``: needs pods to run, as ``requirement`` says a kubelet must run
  them; skipped on a real cluster without a ``Ready`` node.
* ``etctl_real_cluster``: runs only on a real cluster.
* ``etctl_kubectl``: needs ``kubectl`` on ``PATH`` (skipped where there is none).

On a real-cluster run, a test that is not marked ``etctl_hooks`` and starts an embedded server
anyway fails (:class:`~etctl.testing.HooksUnavailable`): it would pass without the cluster.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from etctl.testing._apiserver.background import BackgroundApiServer
from etctl.testing._apiserver.server import ApiServer, CRDSource
from etctl.testing._kubelet import Kubelet, KubeletConfig
from etctl.testing._realcluster import RealCluster
from etctl.testing._target import (
    ENV_KUBECONFIG,
    ClusterTarget,
    HooksUnavailable,
    close_real_cluster,
    cluster_target,
    real_cluster,
    real_cluster_kubeconfig,
    started_real_clusters,
)

__all__ = [
    "ENV_KUBECONFIG",
    "etctl_apiserver",
    "etctl_apiserver_options",
    "etctl_kubeconfig",
    "etctl_kubelet",
    "etctl_kubelet_config",
    "etctl_real_cluster",
    "etctl_shared_apiserver",
    "etctl_shared_kubelet_config",
    "etctl_target",
    "etctl_target_crds",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_report_header",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "real_cluster_kubeconfig",
]

_HOOK_FIXTURES = frozenset({"etctl_apiserver", "etctl_shared_apiserver", "etctl_kubelet"})
_STARTED_BEFORE = pytest.StashKey[frozenset[Path]]()


def pytest_configure(config: pytest.Config) -> None:
    """Declare the plugin's markers."""
    config.stash[_STARTED_BEFORE] = frozenset(started_real_clusters())
    config.addinivalue_line(
        "markers",
        "etctl_hooks(reason): needs the embedded API server's hooks (skipped on a real cluster)",
    )
    config.addinivalue_line(
        "markers",
        "etctl_kubelet(requirement): needs a kubelet to run pods as the requirement says "
        "(skipped on a real cluster without a Ready node)",
    )
    config.addinivalue_line(
        "markers", f"etctl_real_cluster: runs only against {ENV_KUBECONFIG}'s cluster"
    )
    config.addinivalue_line("markers", "etctl_kubectl: needs a kubectl binary on PATH")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Delete what the run left on the real cluster, and disconnect (from what this run used)."""
    before = config.stash.get(_STARTED_BEFORE, frozenset())
    for kubeconfig in started_real_clusters():
        if kubeconfig not in before:
            close_real_cluster(kubeconfig)


def pytest_report_header(config: pytest.Config) -> str:
    """Say which cluster the run uses."""
    real = real_cluster_kubeconfig()
    if real is None:
        return f"etctl: embedded API server (set {ENV_KUBECONFIG} for a real cluster)"
    return f"etctl: real cluster of {real} ({ENV_KUBECONFIG})"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """On a real cluster, say how many tests ran there, in how many namespaces."""
    for kubeconfig, cluster in started_real_clusters().items():
        tests = len(config.stash.get(_ON_THE_CLUSTER, []))
        terminalreporter.write_line(
            f"etctl: {tests} test(s) ran on the cluster of {kubeconfig}, in "
            f"{cluster.namespaces_created} namespace(s) of their own "
            f"({len(cluster.namespaces())} still held, deleted at exit)"
        )


def _reason(marker: pytest.Mark, default: str) -> str:
    return str(marker.args[0]) if marker.args else str(marker.kwargs.get("reason", default))


@pytest.hookimpl(trylast=True)  # after conftests have added their markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark hook users, then skip what the chosen cluster or the machine cannot run."""
    real = real_cluster_kubeconfig()
    kubectl = shutil.which("kubectl")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        used = sorted(fixtures & _HOOK_FIXTURES)
        if used:
            item.add_marker(pytest.mark.etctl_hooks(f"uses the {used[0]} fixture"))
        hooks = item.get_closest_marker("etctl_hooks")
        if real is not None and hooks is not None:
            reason = _reason(hooks, "its hooks")
            item.add_marker(pytest.mark.skip(reason=f"needs the embedded API server: {reason}"))
            continue
        kubelet = item.get_closest_marker("etctl_kubelet")
        if real is not None and kubelet is not None and not _has_nodes():
            requirement = _reason(kubelet, "runs pods")
            item.add_marker(
                pytest.mark.skip(
                    reason=f"needs a kubelet that {requirement}: the cluster has no Ready node"
                )
            )
        if real is None and item.get_closest_marker("etctl_real_cluster") is not None:
            item.add_marker(
                pytest.mark.skip(reason=f"set {ENV_KUBECONFIG} to run against a real cluster")
            )
        if kubectl is None and item.get_closest_marker("etctl_kubectl") is not None:
            item.add_marker(pytest.mark.skip(reason="kubectl is not installed"))


def _has_nodes() -> bool:
    cluster = real_cluster()
    return cluster is not None and cluster.has_nodes()


_ON_THE_CLUSTER = pytest.StashKey[list[str]]()


@pytest.fixture(autouse=True)
def _etctl_only_the_real_cluster(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """On a real-cluster run, a test not marked ``etctl_hooks`` cannot start an embedded server.

    Such a test would pass without a request reaching the cluster under test: it fails instead,
    saying to mark it (or to run it on :func:`~etctl.testing.cluster_target`). The tests that
    made a namespace on the cluster are counted for the summary.
    """
    if real_cluster_kubeconfig() is None or request.node.get_closest_marker("etctl_hooks"):
        yield
        return

    async def refuse(server: ApiServer) -> None:
        msg = (
            f"{request.node.nodeid} started an embedded API server while {ENV_KUBECONFIG} names "
            "the cluster under test: run it on cluster_target(), or mark it "
            "etctl_hooks(reason) so that real-cluster runs skip it"
        )
        raise HooksUnavailable(msg)

    monkeypatch.setattr(ApiServer, "start", refuse)
    before = _namespaces_created()
    yield
    if _namespaces_created() > before:
        request.config.stash.setdefault(_ON_THE_CLUSTER, []).append(request.node.nodeid)


def _namespaces_created() -> int:
    return sum(cluster.namespaces_created for cluster in started_real_clusters().values())


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
def etctl_real_cluster() -> RealCluster | None:
    """The real cluster under test (``ETCTL_TEST_KUBECONFIG``), or None on the embedded server."""
    return real_cluster()


@pytest.fixture
def etctl_target_crds() -> list[CRDSource]:
    """The CRDs ``etctl_target`` serves (files, directories or mappings); override it."""
    return []


@pytest_asyncio.fixture
async def etctl_target(
    tmp_path: Path, etctl_target_crds: list[CRDSource], etctl_apiserver_options: dict[str, Any]
) -> AsyncIterator[ClusterTarget]:
    """A fresh embedded server with a namespace, or a namespace of the real cluster under test.

    ``etctl_apiserver_options`` configure the embedded server (they do not apply to a real one).
    """
    async with cluster_target(
        tmp_path, crds=etctl_target_crds, **etctl_apiserver_options
    ) as target:
        yield target


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
