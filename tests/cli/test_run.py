"""``etctl run``: the operator as a process against the cluster under test, and its errors."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import socket
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import aiohttp
import prometheus_client
import pytest
import yaml

from etctl.cli import _run as run_command
from etctl.cli import main
from etctl.cli._registry import Registry, discover
from etctl.cli._run import freeze_startup_heap, serve
from etctl.cli._settings import OPTIONS, RunSettings
from etctl.common import crd_manifest
from etctl.errors import CacheSyncError
from etctl.jobs.mpijob import MPIJOB, MPIJobPlugin
from etctl.jobs.tfjob._api import TFJOB, TFJOBS
from etctl.jobs.trainingjob import TRAININGJOB, TRAININGJOBS
from etctl.runtime import CONFIGMAPS, LEASES, NAMESPACES, PODS, FakeClock
from etctl.testing import ApiServer, Fault, cluster_target, eventually
from etctl.testing._apiserver.server import kubeconfig_document
from tests.cli._process import etctl_process
from tests.jobs.tfjob._manifests import replica, tfjob
from tests.runtime._realtime import client_of
from tests.schema_support import EXAMPLES, load_yaml

# Flags that keep the process off the fixed ports and quick to give up.
_QUIET = ("--log-format=json", "--log-level=info")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def operator_process(*args: str) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """``etctl run`` as a child process; killed at the end if it is still running."""
    return etctl_process("run", *_QUIET, *args)


async def get(url: str) -> tuple[int, str]:
    timeout = aiohttp.ClientTimeout(total=2)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.get(url) as answer:
            return answer.status, await answer.text()
    except aiohttp.ClientError:
        return 0, ""


async def test_run_serves_probes_reconciles_and_drains_on_sigterm(tmp_path: Path) -> None:
    async with (
        cluster_target(tmp_path, crds=[crd_manifest(TFJOB)], namespace="team") as target,
        client_of(target) as client,
    ):
        team = target.namespace
        probes, metrics = free_port(), free_port()
        async with operator_process(
            f"--kubeconfig={target.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            "--metrics-secure=false",  # the test server authenticates no one
            f"--namespace={team}",
            "--jobs=tfjob",
            "--leader-elect",
            f"--leader-election-namespace={team}",
            "--leader-election-id=etctl-test",
        ) as process:
            ready = ""

            async def is_ready() -> bool:
                nonlocal ready
                status, ready = await get(f"http://127.0.0.1:{probes}/readyz?verbose")
                return status == 200

            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while not await is_ready():
                assert process.returncode is None, (await process.communicate())[1].decode()
                assert loop.time() < deadline, "the operator never became ready"
                await asyncio.sleep(0.05)
            assert "[+]cache-sync ok" in ready
            assert "[+]leader-election ok" in ready
            assert (await get(f"http://127.0.0.1:{probes}/healthz"))[0] == 200

            job = {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "metadata": {"name": "mnist", "namespace": team},
                "spec": {
                    "tfReplicaSpecs": {
                        "Worker": {
                            "replicas": 2,
                            "template": {
                                "spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}
                            },
                        }
                    }
                },
            }
            await client.create(TFJOBS, job)

            def pods() -> list[str]:
                listed = target.storage.list(PODS, namespace=team)
                return sorted(p["metadata"]["name"] for p in listed.items)

            await eventually(lambda: pods() == ["mnist-worker-0", "mnist-worker-1"], timeout=20)
            status, text = await get(f"http://127.0.0.1:{metrics}/metrics")
            assert status == 200
            assert 'controller_runtime_reconcile_total{controller="tfjob"' in text
            # controller-runtime exports no creation-time series; neither does the operator.
            samples = [
                line.split("{")[0].split()[0] for line in text.splitlines() if line[:1] != "#"
            ]
            assert [name for name in samples if name.endswith("_created")] == []

            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), timeout=20)
            assert process.returncode == 0, err.decode()
            assert b"operator stopped" in err
            assert b"Traceback" not in err
            # The Lease was released on the way out, for a successor to take at once.
            lease = target.storage.get(LEASES, "etctl-test", namespace=team)
            assert not lease["spec"].get("holderIdentity")


def loaded_at_exit(*names: str) -> str:
    """A prelude printing, as the process exits, which modules it loaded among ``names``.

    A name stands for its package and every module under it.
    """
    return (
        "import atexit, sys\n"
        f"names = {sorted(names)!r}\n"
        "atexit.register(lambda: print('LOADED', sorted(m for m in sys.modules"
        " if any(m == n or m.startswith(n + '.') for n in names)), file=sys.stderr))"
    )


_LOADED = loaded_at_exit("aiohttp", "yarl", "multidict")


async def test_the_operator_process_never_loads_aiohttp(tmp_path: Path) -> None:
    """Requests, watches, probes and metrics of a working operator: all on etctl's own HTTP."""
    async with (
        cluster_target(tmp_path, crds=[crd_manifest(TFJOB)], namespace="team") as target,
        client_of(target) as client,
    ):
        probes, metrics = free_port(), free_port()
        async with etctl_process(
            "run",
            *_QUIET,
            f"--kubeconfig={target.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            "--metrics-secure=false",  # the test server authenticates no one
            f"--namespace={target.namespace}",
            "--jobs=tfjob",
            prelude=_LOADED,
        ) as process:
            job = tfjob("plain", namespace=target.namespace, Worker=replica(1))
            await client.create(TFJOBS, job)
            await eventually(
                lambda: bool(target.storage.list(PODS, namespace=target.namespace).items),
                timeout=20,
            )
            assert (await get(f"http://127.0.0.1:{probes}/readyz"))[0] == 200
            assert (await get(f"http://127.0.0.1:{metrics}/metrics"))[0] == 200
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 0, err.decode()
    assert "LOADED []" in err.decode().splitlines()[-1]


async def test_the_operator_process_freezes_its_heap_once_started(tmp_path: Path) -> None:
    """What the started process holds is left out of the cycle collector's later walks."""
    prelude = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('FROZEN', gc.get_freeze_count(), file=sys.stderr))"
    )
    async with cluster_target(tmp_path, crds=[crd_manifest(TFJOB)], namespace="team") as target:
        probes = free_port()
        async with etctl_process(
            "run",
            *_QUIET,
            f"--kubeconfig={target.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            "--metrics-bind-address=0",
            f"--namespace={target.namespace}",
            "--jobs=tfjob",
            prelude=prelude,
        ) as process:

            async def ready() -> bool:
                return (await get(f"http://127.0.0.1:{probes}/readyz"))[0] == 200

            # Ready means started: the freeze was scheduled before the first probe could pass.
            await eventually(ready, timeout=20)
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 0, err.decode()
    lines = err.decode().splitlines()
    frozen = int(lines[-1].split()[1])
    assert frozen > 10_000  # the modules, models and plugins at least
    assert any('"startup heap frozen"' in line for line in lines)


async def test_the_library_leaves_the_collector_alone_and_the_freeze_is_whole() -> None:
    assert gc.get_freeze_count() == 0  # no Manager, serve() or test before froze anything
    try:
        await freeze_startup_heap()
        assert gc.get_freeze_count() > 10_000
        assert gc.isenabled()  # later objects are collected as before
    finally:
        gc.unfreeze()


_WEBHOOK_CODE = (
    "etctl._cert_rotation",
    "etctl.common._admission",
    "etctl.common._webhooks",
    "etctl.runtime._admission",
    "etctl.runtime._admission_handlers",
    "etctl.runtime._cert_rotator",
    "etctl.runtime._certwatcher",
    "etctl.runtime._conversion",
    "etctl.runtime._conversion_review",
    "etctl.runtime._endpoint_client",
    "etctl.runtime._field_errors",
    "etctl.runtime._jsonpatch",
    "etctl.runtime._webhook_builder",
    "etctl.runtime._webhook_config",
    "etctl.runtime._webhook_server",
)
# What the operator has no use for: prometheus-client's servers and push-gateway client with what
# they import, and urllib's HTTP client (the client reads proxy variables itself).
_UNUSED = (
    "prometheus_client.exposition",
    "http.server",
    "socketserver",
    "wsgiref",
    "urllib.request",
)


async def test_an_operator_without_webhooks_never_loads_their_code(tmp_path: Path) -> None:
    """No webhook server, admission, conversion or certificate code without ``--webhooks``.

    Nor prometheus-client's servers, nor urllib's HTTP client: the operator writes the
    exposition and reads the proxy variables itself, so a scrape loads them no more than the start.
    """
    async with (
        cluster_target(tmp_path, crds=[crd_manifest(TFJOB)], namespace="team") as target,
        client_of(target) as client,
    ):
        probes, metrics = free_port(), free_port()
        async with etctl_process(
            "run",
            *_QUIET,
            f"--kubeconfig={target.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            "--metrics-secure=false",  # the test server authenticates no one
            f"--namespace={target.namespace}",
            "--jobs=tfjob",
            prelude=loaded_at_exit(*_WEBHOOK_CODE, *_UNUSED),
        ) as process:
            await client.create(
                TFJOBS, tfjob("plain", namespace=target.namespace, Worker=replica(1))
            )
            await eventually(
                lambda: bool(target.storage.list(PODS, namespace=target.namespace).items),
                timeout=20,
            )
            assert (await get(f"http://127.0.0.1:{probes}/readyz"))[0] == 200
            status, text = await get(f"http://127.0.0.1:{metrics}/metrics")
            assert status == 200
            assert "# TYPE controller_runtime_reconcile_total counter" in text.splitlines()
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 0, err.decode()
    assert err.decode().splitlines()[-1] == "LOADED []"


@pytest.mark.etctl_hooks("its own server with the MPIJob and TrainingJob CRDs")
async def test_run_runs_mpijobs_beside_trainingjobs(tmp_path: Path) -> None:
    """Two elastic kinds in one operator: each gets its controllers, scalers and pusher."""
    crds = [crd_manifest(r) for r in (*MPIJobPlugin().custom_resources, TRAININGJOB)]
    async with ApiServer(crds=crds) as server, client_of(server, tmp_path) as client:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        mpijob = load_yaml(EXAMPLES / "mpijob" / "tensorflow-mnist-elastic.yaml")
        mpijob["metadata"]["namespace"] = "default"
        await client.create(MPIJOB.resource("v1"), mpijob, namespace="default")
        trainingjob = load_yaml(EXAMPLES / "trainingjob" / "training-job.yaml")
        await client.create(TRAININGJOBS, trainingjob, namespace="default")
        async with operator_process(f"--kubeconfig={kubeconfig}", "--jobs=mpijob,trainingjob"):

            def pods() -> list[str]:
                listed = server.storage.list(PODS, namespace="default")
                return sorted(p["metadata"]["name"] for p in listed.items)

            expected = [
                "elastic-training-worker-0",
                "elastic-training-worker-1",
                "tensorflow-mnist-elastic-worker-0",
                "tensorflow-mnist-elastic-worker-1",
            ]
            await eventually(lambda: pods() == expected, timeout=20)
            config = server.storage.get(
                CONFIGMAPS, "tensorflow-mnist-elastic-config", namespace="default"
            )
            assert "discover_hosts.sh" in config["data"]


@pytest.mark.etctl_hooks("a cluster without the TFJob CRD")
async def test_run_without_the_crd_exits_1_with_the_reason(tmp_path: Path) -> None:
    async with ApiServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        async with operator_process(
            f"--kubeconfig={kubeconfig}",
            "--health-probe-bind-address=0",
            "--metrics-bind-address=0",
            "--cache-sync-timeout=1s",
            "--jobs=tfjob",
        ) as process:
            _, err = await asyncio.wait_for(process.communicate(), timeout=20)
        text = err.decode()
        assert process.returncode == 1, text
        # The last line says what went wrong and why, in the log format asked for.
        last = json.loads(text.strip().splitlines()[-1])
        assert last["level"] == "error"
        assert last["msg"].startswith("the cache did not sync")
        assert "tfjobs.kubeflow.org" in last["error"]
        assert "404" in last["error"]


@pytest.mark.etctl_hooks("fault injection: a 403 on list")
async def test_a_forbidden_list_fails_the_operator_with_the_reason(tmp_path: Path) -> None:
    clock = FakeClock()
    async with ApiServer(clock=clock, crds=[crd_manifest(TFJOB)]) as server:
        forbidden = server.inject(Fault(verb="list", resource="pods", status=403, times=None))
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        settings = RunSettings(
            kubeconfig=str(kubeconfig),
            metrics_bind_address="0",
            health_probe_bind_address="0",
            cache_sync_timeout=30,
        )
        entries = discover().plugins(["tfjob"])
        task = asyncio.create_task(serve(settings, entries, clock=clock), name="test:serve")
        await eventually(lambda: forbidden.fired > 0)  # the cache is listing, and waiting
        await clock.advance(31)
        with pytest.raises(CacheSyncError) as failed:
            await asyncio.wait_for(task, timeout=10)
        assert "pods" in str(failed.value)
        assert "403" in str(failed.value) or "orbidden" in str(failed.value)


def test_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option in OPTIONS:
        assert option.flag in text
        assert option.env in text
    assert "Exit status" in text


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--bogus"], {}, "etctl run: error: unrecognized arguments: --bogus"),
        (["--max-concurrent-reconciles=many"], {}, "argument --max-concurrent-reconciles"),
        ([], {"ETCTL_METRICS_BIND_ADDRESS": "everywhere"}, "ETCTL_METRICS_BIND_ADDRESS"),
        (["--kubeconfig=/nonexistent/kubeconfig"], {}, "/nonexistent/kubeconfig"),
        (["--jobs=xgboostjob"], {}, "no job kind 'xgboostjob' is registered"),
        (["--jobs=apionly"], {}, "publishes CRDs only"),
        (
            ["--leader-elect", "--kubeconfig={kubeconfig}"],
            {},
            "--leader-elect outside a pod needs --leader-election-namespace",
        ),
    ],
)
def test_bad_usage_exits_2(
    tmp_path: Path,
    argv: list[str],
    env: dict[str, str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The command configures process-wide logging and metrics exposition; a test must not.
    monkeypatch.setattr(run_command, "configure", lambda **_: None)
    monkeypatch.setattr(prometheus_client, "disable_created_metrics", lambda: None)
    monkeypatch.setattr(run_command, "discover", with_api_only_kind)
    for key in list(os.environ):
        if key.startswith("ETCTL_"):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # A kubeconfig that loads; nothing may get as far as connecting to its server.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(kubeconfig_document("http://127.0.0.1:9")))
    try:
        status = main(["run", *(arg.format(kubeconfig=kubeconfig) for arg in argv)])
    except SystemExit as exited:
        status = int(exited.code or 0)
    assert status == 2
    assert message in capsys.readouterr().err


def with_api_only_kind() -> Registry:
    """The installed kinds, plus one that publishes its CRD but has no controller yet."""
    registry = discover()
    registry.register("apionly", TFJOB)
    return registry


async def test_bad_usage_in_a_process_is_one_line_not_a_traceback() -> None:
    async with operator_process("--leader-elect-lease-duration=soon") as process:
        _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 2
    assert err.decode().strip().splitlines()[-1] == (
        "etctl run: error: argument --leader-elect-lease-duration: 'soon' is not a duration; "
        "use for example 15s, 1m30s or 500ms"
    )
    assert b"Traceback" not in err


@pytest.mark.etctl_hooks("a port held by another process on this machine")
async def test_a_metrics_port_in_use_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    async with ApiServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = holder.getsockname()[1]
            async with operator_process(
                f"--kubeconfig={kubeconfig}",
                "--health-probe-bind-address=0",
                f"--metrics-bind-address=127.0.0.1:{port}",
            ) as process:
                _, err = await asyncio.wait_for(process.communicate(), timeout=20)
    text = err.decode()
    assert process.returncode == 1, text
    last = json.loads(text.strip().splitlines()[-1])
    assert last["msg"] == "cannot serve"
    assert last["error"].startswith("metrics: ")
    assert f"('127.0.0.1', {port}): address already in use" in last["error"]
    assert "Traceback" not in text


async def test_the_library_keeps_prometheus_created_series() -> None:
    # The switch is process-wide: only the operator binary may turn it off, never an import.
    probe = (
        "import etctl.cli._run, etctl.runtime._manager, etctl.testing, prometheus_client as p\n"
        "registry = p.CollectorRegistry()\n"
        "p.Counter('probe', 'a counter', registry=registry).inc()\n"
        "print(p.generate_latest(registry).decode())\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", probe, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 0
    assert b"probe_created " in out


@pytest.mark.etctl_hooks("pausing the server")
async def test_a_shutdown_whose_grace_period_runs_out_exits_1(tmp_path: Path) -> None:
    async with ApiServer(crds=[crd_manifest(TFJOB)]) as server:
        server.storage.create(NAMESPACES, {"metadata": {"name": "team"}})
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        probes = free_port()
        async with operator_process(
            f"--kubeconfig={kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{probes}",
            "--metrics-bind-address=0",
            "--namespace=team",
            "--jobs=tfjob",
            "--graceful-shutdown-timeout=1s",
        ) as process:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while (await get(f"http://127.0.0.1:{probes}/readyz"))[0] != 200:
                assert process.returncode is None, (await process.communicate())[1].decode()
                assert loop.time() < deadline, "the operator never became ready"
                await asyncio.sleep(0.05)

            def invalid_job(name: str) -> dict[str, object]:
                # No container named "tensorflow": the reconcile's first write is the Failed status.
                template = {"spec": {"containers": [{"name": "tf", "image": "tf"}]}}
                return {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "TFJob",
                    "metadata": {"name": name, "namespace": "team"},
                    "spec": {"tfReplicaSpecs": {"Worker": {"template": template}}},
                }

            # Ready means the caches listed; the TFJob watch may still be on its way to the server,
            # and a pause would hold it there, so no event would ever come. A job reconciled
            # through the watch proves the watch is served.
            server.storage.create(TFJOBS, invalid_job("first"), namespace="team")
            written = lambda: bool(  # noqa: E731
                server.requests.find(name="first", subresource="status", code=200)
            )
            await eventually(written, timeout=60)
            # Every request now hangs: the reconcile of a new job waits on its first write.
            server.pause()
            server.storage.create(TFJOBS, invalid_job("stuck"), namespace="team")
            # Bounds only turn a hang into a failure: a loaded machine may take a while.
            found = lambda: bool(server.requests.find(name="stuck", code=0))  # noqa: E731
            await eventually(found, timeout=60)
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), timeout=60)
            server.resume()
        text = err.decode()
        assert process.returncode == 1, text
        last = json.loads(text.strip().splitlines()[-1])
        assert last["level"] == "error"
        assert last["msg"].startswith("the graceful shutdown ran out of time")
        assert "reconcile(s) cancelled past the grace period" in last["error"]
        assert "Traceback" not in text
