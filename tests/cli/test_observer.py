"""The demo's observer: narrated waits with limits, and the hostfile read through exec."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from etctl.cli._demo_manifests import trainingjob_manifest
from etctl.cli._feed import Feed
from etctl.cli._jobview import Snapshot, snapshot
from etctl.cli._observer import Observer, StepFailed, describe, hosts_of
from etctl.cli._timeline import Timeline
from etctl.common import JOB_NAME
from etctl.errors import NotFound, TransportError
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import PODS
from etctl.testing import ClusterTarget, KubeletConfig, cluster_target
from tests.cli.test_feed import CRDS, KIND, create, pod
from tests.runtime._realtime import client_of


@dataclass
class Watching:
    target: ClusterTarget
    observer: Observer
    out: io.StringIO


@asynccontextmanager
async def watching(tmp_path: Path, *, kubelet: bool = False) -> AsyncIterator[Watching]:
    config = KubeletConfig.uniform(1, root=tmp_path / "pods") if kubelet else None
    async with (
        cluster_target(tmp_path, crds=CRDS, kubelet=config) as target,
        client_of(target) as client,
        asyncio.TaskGroup() as group,
    ):
        feed = Feed(client, KIND, namespace=target.namespace, job="elastic-mnist")
        out = io.StringIO()
        observer = Observer(feed, Timeline(out, steps=1, environ={}), poll_interval=0.01)
        task = group.create_task(feed.run(), name="test:feed")
        try:
            await asyncio.wait_for(feed.wait_synced(), timeout=5)
            yield Watching(target, observer, out)
        finally:
            task.cancel()


def test_describe_says_where_a_wait_was_stuck() -> None:
    assert describe(Snapshot(job=None, pods={}, scalers={}), "trainingjob/tj") == (
        "trainingjob/tj does not exist; no pods"
    )
    job = {"metadata": {"name": "tj"}, "status": {"phase": "Created", "currentWorkers": ["a"]}}
    pods = [
        {"metadata": {"name": "a"}, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}},
        {"metadata": {"name": "b"}, "spec": {}, "status": {"phase": "Pending"}},
    ]
    assert describe(snapshot(KIND, "tj", job, pods, [])) == (
        "job phase Created; 1 worker(s) in the hostfile; pods not running: b Pending"
    )
    assert describe(snapshot(KIND, "tj", job, pods[:1], [])).endswith("1 pod(s), all Running")
    # A kind without an elastic membership says nothing of a hostfile.
    tfjob = {"metadata": {"name": "tf"}, "status": {"conditions": []}}
    assert describe(snapshot(KIND, "tf", tfjob, [], [])) == "job phase (none yet); no pods"


def test_hosts_of_a_hostfile() -> None:
    assert hosts_of("w-0:1\nw-1:2\n\n") == ["w-0", "w-1"]
    assert hosts_of("") == []
    # OpenMPI's and DeepSpeed's form, FQDNs, comments.
    assert hosts_of("# hosts\nj-worker-0.j.ns.svc slots=2\nj-worker-1 slots=2 # late\n") == [
        "j-worker-0",
        "j-worker-1",
    ]


async def test_until_narrates_each_change_and_returns_the_state_that_held(tmp_path: Path) -> None:
    async with watching(tmp_path) as env:
        create(env.target, TRAININGJOBS, trainingjob_manifest())
        create(env.target, PODS, pod("elastic-mnist-worker-0"))
        # The job and pod watches are independent streams: wait for both objects, not for
        # whichever of the two events happens to arrive first.
        seen = await env.observer.until(
            "the job and its worker",
            lambda s: s.job is not None and "elastic-mnist-worker-0" in s.pods,
            timeout=5,
        )
        assert seen.job is not None
        text = env.out.getvalue()
        assert "trainingjob/elastic-mnist" in text
        assert "created" in text
        assert "pod/elastic-mnist-worker-0" in text
        assert env.observer.last == seen


async def test_until_gives_up_with_what_it_awaited_and_the_state(tmp_path: Path) -> None:
    async with watching(tmp_path) as env:
        with pytest.raises(StepFailed) as failed:
            await env.observer.until("the job to run", lambda s: False, timeout=0.2)
        assert str(failed.value) == (
            "the job to run: not done after 0.2s "
            "(trainingjob/elastic-mnist does not exist; no pods)"
        )


async def test_a_condition_may_fail_at_once(tmp_path: Path) -> None:
    def broken(_seen: Snapshot) -> bool:
        raise StepFailed("scaler failed")

    async with watching(tmp_path) as env:
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(StepFailed, match="scaler failed"):
            await env.observer.until("x", broken, timeout=30)
        assert loop.time() - started < 5


async def test_poll_retries_failed_requests_until_a_result(tmp_path: Path) -> None:
    attempts: list[int] = []

    async def flaky() -> tuple[str | None, str]:
        attempts.append(1)
        if len(attempts) < 3:
            raise TransportError("connection reset")
        return "done", ""

    async def never() -> tuple[str | None, str]:
        raise TransportError("connection refused")

    async with watching(tmp_path) as env:
        assert await env.observer.poll("flaky", flaky, timeout=5) == "done"
        assert len(attempts) == 3
        with pytest.raises(StepFailed) as failed:
            await env.observer.poll("the thing", never, timeout=0.1)
        assert str(failed.value) == (
            "the thing: not done after 0.1s (a request failed: connection refused)"
        )


@pytest.mark.etctl_hooks("the simulated kubelet's shell runs the exec'd commands")
async def test_the_hostfile_is_read_through_exec_until_it_matches(tmp_path: Path) -> None:
    async with watching(tmp_path, kubelet=True) as env:
        launcher = pod("elastic-mnist-launcher")
        launcher["metadata"]["labels"] = {JOB_NAME: "elastic-mnist"}
        del launcher["spec"]["schedulerName"]  # the simulated kubelet runs it
        create(env.target, PODS, launcher)
        ns = env.target.namespace
        await env.observer.until(
            "the launcher", lambda s: s.running("elastic-mnist-launcher"), timeout=5
        )
        client = env.observer.client
        written = await client.exec(
            ns,
            "elastic-mnist-launcher",
            ["sh", "-c", "mkdir -p /etc/edl && printf 'w-0:1\\nw-1:1\\n' > /etc/edl/hostfile"],
            timeout=5,
        )
        assert written.exit_code == 0, written.stderr
        path = "/etc/edl/hostfile"
        launcher_name = "elastic-mnist-launcher"
        content = await env.observer.hostfile(launcher_name, path, ["w-1", "w-0"], timeout=5)
        assert content == "w-0:1\nw-1:1\n"
        with pytest.raises(StepFailed) as failed:
            await env.observer.hostfile(launcher_name, path, ["w-0"], timeout=0.1)
        assert "to list 1 worker: not done after 0.1s (it lists w-0, w-1)" in str(failed.value)
        removed = await client.exec(
            ns, "elastic-mnist-launcher", ["rm", "/etc/edl/hostfile"], timeout=5
        )
        assert removed.exit_code == 0, removed.stderr
        with pytest.raises(StepFailed) as unreadable:
            await env.observer.read_file(launcher_name, path)
        assert "exited 1: cat: can't open '/etc/edl/hostfile'" in str(unreadable.value)
        with pytest.raises(NotFound):
            await env.observer.read_file("elastic-mnist-launcher-2", path)
