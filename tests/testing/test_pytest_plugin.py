"""The pytest plugin: its fixtures, markers and the real-cluster switch, run in a nested pytest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import aiohttp
import pytest

from etctl.testing import ApiServer, BackgroundApiServer


async def test_function_server(etctl_apiserver):
    assert isinstance(etctl_apiserver, ApiServer)
    async with aiohttp.ClientSession() as session:
        async with session.get(etctl_apiserver.url + "/version") as response:
            assert response.status == 200


def test_shared_server(etctl_shared_apiserver):
    assert isinstance(etctl_shared_apiserver, BackgroundApiServer)
    names = etctl_shared_apiserver.call(lambda s: sorted(s.store.items(("", "namespaces"))))
    assert names[0][0] == "default"


def test_kubeconfig(etctl_kubeconfig):
    assert etctl_kubeconfig.read_text().startswith("apiVersion: v1")


@pytest.mark.etctl_hooks
def test_marked_hooks():
    pass


@pytest.mark.etctl_real_cluster
def test_only_on_a_real_cluster(etctl_kubeconfig):
    assert str(etctl_kubeconfig).endswith("real-kubeconfig")


@pytest.mark.etctl_kubectl
def test_needs_kubectl():
    pass
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_suite=SUITE)
    return pytester.runpytest_inprocess("-p", "no:randomly", "-rs", *args)


def _opted_in(pytester: pytest.Pytester) -> pytest.RunResult:
    return _run(pytester, "-p", "etctl.testing.pytest_plugin")


def test_installing_etctl_changes_no_other_test_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ETCTL_TEST_KUBECONFIG", raising=False)
    pytester.makepyfile(
        test_other="""
        import pytest

        @pytest.mark.hooks
        def test_their_own_hooks_marker():
            pass

        def test_no_etctl_fixture(request):
            assert "etctl_apiserver" not in request.fixturenames
            with pytest.raises(pytest.FixtureLookupError):
                request.getfixturevalue("etctl_kubeconfig")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-W", "ignore")
    result.assert_outcomes(passed=2)
    plugins = next(line for line in result.outlines if line.startswith("plugins:"))
    assert "etctl" not in plugins
    assert "etctl:" not in result.stdout.str()  # no report header: the plugin is not loaded


def test_the_plugin_loads_from_a_conftest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ETCTL_TEST_KUBECONFIG", raising=False)
    pytester.makeconftest('pytest_plugins = ["etctl.testing.pytest_plugin"]')
    result = _run(pytester, "--strict-markers")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["etctl: embedded API server*"])


def test_embedded_mode_runs_hook_tests_and_skips_real_cluster_ones(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ETCTL_TEST_KUBECONFIG", raising=False)
    result = _opted_in(pytester)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0, result.stdout.str()
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["*set ETCTL_TEST_KUBECONFIG to run against a real cluster*"])


def test_real_cluster_mode_skips_hook_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = Path(pytester.path) / "real-kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("ETCTL_TEST_KUBECONFIG", str(kubeconfig))
    result = _opted_in(pytester)
    result.assert_outcomes(passed=3, skipped=3)
    result.stdout.fnmatch_lines(
        ["*needs the embedded API server: uses the etctl_apiserver fixture"]
    )


def test_kubectl_marker_skips_without_kubectl(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ETCTL_TEST_KUBECONFIG", raising=False)
    monkeypatch.setenv("PATH", str(pytester.path))
    result = _opted_in(pytester)
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(["*kubectl is not installed*"])


REAL_SUITE = """
import pytest

from etctl.runtime import CONFIGMAPS
from etctl.testing import ApiServer


async def test_on_the_target(etctl_target):
    assert not etctl_target.embedded
    body = {"metadata": {"name": "proof"}, "data": {"k": "v"}}
    etctl_target.storage.create(CONFIGMAPS, body, namespace=etctl_target.namespace)
    listed = etctl_target.storage.list(CONFIGMAPS, namespace=etctl_target.namespace)
    assert "proof" in [item["metadata"]["name"] for item in listed.items]


@pytest.mark.etctl_hooks("fault injection")
def test_needs_hooks():
    pass


@pytest.mark.etctl_kubelet("runs busybox")
def test_needs_a_kubelet(etctl_real_cluster):
    assert etctl_real_cluster.has_nodes()


async def test_an_embedded_server_in_disguise():
    async with ApiServer():
        pass
"""


@contextmanager
def serving(tmp_path: Path, *args: str) -> Iterator[tuple[Path, Path]]:
    """``python -m etctl.testing`` in its own process: its kubeconfig and its request log."""
    kubeconfig, log = tmp_path / "cluster.kubeconfig", tmp_path / "requests.jsonl"
    command = [sys.executable, "-m", "etctl.testing", "--kubeconfig", str(kubeconfig)]
    with subprocess.Popen(
        [*command, "--request-log", str(log), *args], stdout=subprocess.PIPE
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().startswith(b"http://127.0.0.1:")
            yield kubeconfig, log
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(15)


def requests_in(log: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("nodes", [0, 1])
def test_a_real_cluster_run_reaches_that_cluster_only(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, nodes: int
) -> None:
    kubelet = ["--nodes", "1"] if nodes else ["--no-kubelet"]
    with serving(tmp_path, *kubelet) as (kubeconfig, log):
        monkeypatch.setenv("ETCTL_TEST_KUBECONFIG", str(kubeconfig))
        pytester.makeini(
            "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
        )
        pytester.makepyfile(test_suite=REAL_SUITE)
        result = pytester.runpytest_inprocess("-p", "etctl.testing.pytest_plugin", "-rs")
        seen = requests_in(log)
    result.stdout.fnmatch_lines([f"etctl: real cluster of {kubeconfig}*"])
    result.assert_outcomes(passed=1 + nodes, skipped=2 - nodes, failed=1)
    result.stdout.fnmatch_lines(["etctl: 1 test(s) ran on the cluster of *, in 1 namespace(s) of*"])
    result.stdout.fnmatch_lines(["*needs the embedded API server: fault injection*"])
    result.stdout.fnmatch_lines(["*test_an_embedded_server_in_disguise started an embedded*"])
    if not nodes:
        result.stdout.fnmatch_lines(["*needs a kubelet that runs busybox: *no Ready node*"])
    # The server's side: the test's namespace came and went, and the ConfigMap went into it.
    (created,) = [r for r in seen if r["method"] == "POST" and r["path"] == "/api/v1/namespaces"]
    namespaces = [r["path"] for r in seen if r["method"] == "DELETE"]
    (namespace,) = [path.rsplit("/", 1)[1] for path in namespaces]
    assert namespace.startswith("etctl-test-")
    assert {"method": "POST", "path": f"/api/v1/namespaces/{namespace}/configmaps"} in [
        {"method": r["method"], "path": r["path"]} for r in seen
    ]
    assert {r["user_agent"] for r in seen} == {"etctl-tests"}
    assert created
