"""``etctl status`` and ``etctl watch``: real jobs of every kind, with the operator running.

In-process tests run the sandbox (embedded API server, simulated kubelet, operator) and read the
jobs through an ordinary client, as the commands do; the process tests run ``etctl sandbox`` and
the commands as separate processes, as a user would, and check their output and exit statuses.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.cli import Sandbox, run_sandbox
from etctl.cli._describe import describe_job
from etctl.cli._jobkinds import job_kinds, resolve
from etctl.cli._registry import discover
from etctl.cli._sandbox_options import SandboxOptions
from etctl.cli._status import EXIT_TIMED_OUT, read_job, watch_job
from etctl.errors import ConfigError
from etctl.jobs.pytorchjob import PYTORCHJOBS
from etctl.jobs.tfjob import TFJOBS
from etctl.jobs.trainingjob import SCALEOUTS, TRAININGJOBS
from etctl.runtime import NAMESPACES, Client, ClientOptions
from etctl.testing import Fault, eventually
from tests.cli._process import etctl_process, sandbox_process
from tests.schema_support import EXAMPLES

pytestmark = pytest.mark.etctl_hooks(
    "the sandbox runs its own embedded server and simulated kubelet"
)

QUICK = SandboxOptions(pod_start_delay=0)
KINDS = job_kinds(discover())
TFJOB = resolve(KINDS, "tfjob")
TRAININGJOB = resolve(KINDS, "trainingjob")
SIM = "sim.etctl.io/"


def tfjob(name: str, *, workers: int = 2, **sim: str) -> dict[str, Any]:
    """A TFJob whose simulated containers do what ``sim`` says (``run-seconds``, ``exit-code``)."""
    template = {
        "metadata": {"annotations": {SIM + key.replace("_", "-"): v for key, v in sim.items()}},
        "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.15.0"}]},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"replicas": workers, "restartPolicy": "Never", "template": template}
            }
        },
    }


def trainingjob(name: str, *, workers: int = 2) -> dict[str, Any]:
    def replica(replicas: int) -> dict[str, Any]:
        container = {"name": "main", "image": "horovod/horovod:0.28.1"}
        return {"replicas": replicas, "template": {"spec": {"containers": [container]}}}

    return {
        "apiVersion": "kai.alibabacloud.com/v1alpha1",
        "kind": "TrainingJob",
        "metadata": {"name": name},
        "spec": {
            "etReplicaSpecs": {
                "launcher": replica(1),
                "worker": {**replica(workers), "minReplicas": 1, "maxReplicas": 4},
            }
        },
    }


def client_for(sandbox: Sandbox) -> Any:
    return Client.from_kubeconfig(sandbox.kubeconfig, options=ClientOptions(request_timeout=10))


# --- in process -----------------------------------------------------------------------------------


async def test_watch_follows_a_tfjob_until_it_succeeds() -> None:
    out = io.StringIO()

    async def main(sandbox: Sandbox) -> int:
        async with await client_for(sandbox) as client:
            await client.create(TFJOBS, tfjob("mnist", run_seconds="1"), namespace="default")
            return await watch_job(client, TFJOB, "default", "mnist", out, timeout=30)

    assert await run_sandbox(QUICK, main) == 0
    text = out.getvalue()
    assert text.startswith("Name:         mnist\nNamespace:    default\n")
    assert "Kind:         TFJob (kubeflow.org/v1)" in text
    # Narrated after the first state: the pods run, then complete, then the job succeeds.
    assert re.search(r"pod/mnist-worker-0\s+.*Running -> Completed", text)
    assert re.search(r"tfjob/mnist\s+phase Running -> Succeeded", text)
    assert re.search(r"tfjob/mnist\s+Normal TFJobRunning", text)
    assert re.search(r"ok tfjob/mnist Succeeded \(TFJobSucceeded\), after [\d.]+s", text)


async def test_watch_ends_with_1_and_the_reason_when_the_job_fails() -> None:
    out = io.StringIO()

    async def main(sandbox: Sandbox) -> int:
        async with await client_for(sandbox) as client:
            failing = tfjob("broken", workers=1, run_seconds="0.5", exit_code="3")
            await client.create(TFJOBS, failing, namespace="default")
            return await watch_job(client, TFJOB, "default", "broken", out, timeout=30)

    assert await run_sandbox(QUICK, main) == 1
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("  FAILED: tfjob/broken Failed: ")
    assert last.endswith("failed: 1 Worker replica failed."), last


async def test_watch_stops_at_its_timeout_with_its_own_status_and_the_state_it_saw() -> None:
    out = io.StringIO()

    async def main(sandbox: Sandbox) -> int:
        async with await client_for(sandbox) as client:
            await client.create(TFJOBS, tfjob("forever", workers=1), namespace="default")
            await eventually(
                lambda: _phase(client, "forever", "Running"), what="running", timeout=20
            )
            return await watch_job(client, TFJOB, "default", "forever", out, timeout=2)

    # Out of time is no failure of the job: its own exit status, and the state it was in.
    assert await run_sandbox(QUICK, main) == EXIT_TIMED_OUT == 124
    last = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(
        r"  STOPPED: tfjob/forever had not finished when --timeout ran out, [0-9.]+s into "
        r"watching: job phase Running; 1 pod\(s\), all Running",
        last,
    ), last
    assert "FAILED:" not in out.getvalue()


# A 1.24 API server on kine (SQLite) refuses a custom-resource list by field selector when it
# is paged, as kubectl and etctl page a first list.
KINE = Fault(
    verb="list",
    resource="tfjobs.kubeflow.org",
    query_contains={"fieldSelector": "metadata.name=", "limit": "500"},
    times=None,
    status=500,
    message="invalid combination of rangeEnd and limit",
)


async def test_watch_lists_unpaged_what_a_backend_refuses_paged() -> None:
    out = io.StringIO()

    async def main(sandbox: Sandbox) -> int:
        refused = sandbox.server.inject(KINE)
        async with await client_for(sandbox) as client:
            await client.create(TFJOBS, tfjob("mnist", run_seconds="1"), namespace="default")
            status = await watch_job(client, TFJOB, "default", "mnist", out, timeout=30)
        assert refused.fired >= 1
        return status

    assert await run_sandbox(QUICK, main) == 0
    assert "ok tfjob/mnist Succeeded (TFJobSucceeded)" in out.getvalue()


async def test_a_list_that_keeps_failing_is_told_and_ends_the_watch_within_its_timeout() -> None:
    out = io.StringIO()
    broken = dataclasses.replace(KINE, query_contains=None, message="etcdserver: leader changed")

    async def main(sandbox: Sandbox) -> float:
        sandbox.server.inject(broken)
        async with await client_for(sandbox) as client:
            await client.create(TFJOBS, tfjob("mnist"), namespace="default")
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(ConfigError) as failed:
                await watch_job(client, TFJOB, "default", "mnist", out, timeout=8)
            took = loop.time() - started
        assert str(failed.value).startswith("could not read tfjob/mnist within 8s: tfjobs: ")
        assert "etcdserver: leader changed" in str(failed.value)
        return took

    took = await run_sandbox(QUICK, main)
    assert took is not None
    assert 8 <= took < 12  # the bound holds for the whole command, the first lists included
    told = out.getvalue().splitlines()
    assert told, "the error never reached the user while it persisted"
    assert told[0].startswith("  WARNING: cannot read tfjobs: "), told
    assert "etcdserver: leader changed; trying again" in told[0]


async def _phase(client: Client, name: str, phase: str) -> bool:
    seen = await read_job(client, TFJOB, "default", name)
    return seen.job is not None and seen.job.phase == phase


async def test_status_shows_an_elastic_job_its_membership_and_hostfile() -> None:
    async def main(sandbox: Sandbox) -> list[str]:
        async with await client_for(sandbox) as client:
            await client.create(TRAININGJOBS, trainingjob("hvd"), namespace="default")

            async def hostfile_written() -> Any:
                seen = await read_job(client, TRAININGJOB, "default", "hvd")
                hostfile = seen.file("hostfile")
                written = seen.job is not None and seen.job.phase == "Running"
                return seen if written and hostfile and hostfile.content else None

            seen = await eventually(hostfile_written, what="the hostfile", timeout=20)
            return describe_job(seen, namespace="default", api_version="kai.alibabacloud.com/v1")

    lines = await run_sandbox(QUICK, main)
    assert lines is not None
    text = "\n".join(lines)
    assert "Phase:        Running" in text
    assert re.search(r"^  Worker\s+2\s+2\s+0\s+0$", text, flags=re.MULTILINE)
    assert re.search(r"^  Launcher\s+1\s+1\s+0\s+0$", text, flags=re.MULTILINE)
    assert "  Targets:      hvd-worker-0, hvd-worker-1" in text
    assert "  Hostfile:     hvd-worker-0, hvd-worker-1" in text
    assert re.search(r"^  hvd-launcher\s+launcher\s+1/1\s+Running\s+0 ", text, flags=re.MULTILINE)
    assert "File hostfile (configmap/hvd-config, read by hvd-launcher:/etc/edl/hostfile):" in text
    assert "  hvd-worker-0:1\n  hvd-worker-1:1" in text
    assert re.search(r"Normal\s+TrainingJobRunning\s+trainingjob/hvd", text)


async def test_watch_narrates_a_scale_out_and_ends_when_the_job_is_deleted() -> None:
    out = io.StringIO()

    async def main(sandbox: Sandbox) -> int:
        async with await client_for(sandbox) as client:
            await client.create(TRAININGJOBS, trainingjob("hvd"), namespace="default")
            await eventually(lambda: _running(client), what="running", timeout=20)
            watching = asyncio.create_task(
                watch_job(client, TRAININGJOB, "default", "hvd", out, timeout=30)
            )
            await eventually(lambda: _printed(out, "Pods:"), what="the first state", timeout=20)
            scale_out = {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "more"},
                "spec": {"selector": {"name": "hvd"}, "toAdd": {"count": 1}},
            }
            await client.create(SCALEOUTS, scale_out, namespace="default")
            await eventually(
                lambda: _printed(out, "ScaleSucceeded"), what="the scale-out", timeout=20
            )
            await client.delete(TRAININGJOBS, "hvd", namespace="default")
            return await watching

    assert await run_sandbox(QUICK, main) == 1
    text = out.getvalue()
    assert re.search(r"scaleout/more\s+adds hvd-worker-2", text)
    assert re.search(r"pod/hvd-worker-2\s+created", text)
    assert re.search(r"trainingjob/hvd\s+hostfile \+hvd-worker-2", text)
    assert re.search(r"configmap/hvd-config\s+hostfile \+hvd-worker-2:1", text)
    assert re.search(r"trainingjob/hvd\s+Worker replicas 2 -> 3", text)
    assert text.strip().splitlines()[-1] == "  FAILED: trainingjob/hvd was deleted"


async def _running(client: Client) -> bool:
    seen = await read_job(client, TRAININGJOB, "default", "hvd")
    return seen.job is not None and seen.job.phase == "Running" and len(seen.job.members) == 2


async def _printed(out: io.StringIO, text: str) -> bool:
    return text in out.getvalue()


async def test_a_missing_job_is_none_and_watch_says_so() -> None:
    async def main(sandbox: Sandbox) -> tuple[bool, str]:
        async with await client_for(sandbox) as client:
            seen = await read_job(client, TFJOB, "default", "nope")
            try:
                await watch_job(client, TFJOB, "default", "nope", io.StringIO())
            except Exception as exc:
                return seen.job is None, str(exc)
            return seen.job is None, ""

    assert await run_sandbox(QUICK, main) == (
        True,
        'tfjob "nope" not found in namespace "default"',
    )


# --- as processes ---------------------------------------------------------------------------------


async def etctl(*args: str, timeout: float = 60.0) -> tuple[int, str, str]:
    async with etctl_process(*args) as process:
        out, err = await asyncio.wait_for(process.communicate(), timeout=timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_the_commands_against_a_sandbox_process(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with sandbox_process(
        "--kubeconfig", str(kubeconfig), "--pod-start-delay=0", "--log-level=warning"
    ) as sandbox:
        await sandbox.read_until("Press Ctrl-C to stop")
        options = ClientOptions(request_timeout=10)
        async with await Client.from_kubeconfig(kubeconfig, options=options) as client:
            await client.create(NAMESPACES, {"metadata": {"name": "team-a"}})
            job = tfjob("mnist", workers=1, run_seconds="2")
            await client.create(TFJOBS, job, namespace="team-a")
        base = ("--kubeconfig", str(kubeconfig))

        # watch, then status once it is over: the job's own namespace with -n.
        status, out, err = await etctl("watch", "tfjobs/mnist", *base, "-n", "team-a")
        assert status == 0, out + err
        assert "ok tfjob/mnist Succeeded (TFJobSucceeded)" in out
        status, out, err = await etctl("status", "TFJob", "mnist", *base, "--namespace=team-a")
        assert (status, err) == (0, ""), out + err
        assert "Phase:        Succeeded" in out
        assert re.search(r"^  Worker\s+1\s+0\s+1\s+0$", out, flags=re.MULTILINE), out

        # The context's namespace is the default, as kubectl has it.
        config = yaml.safe_load(kubeconfig.read_text())
        config["contexts"][0]["context"]["namespace"] = "team-a"
        in_team = tmp_path / "team-a.kubeconfig"
        in_team.write_text(yaml.safe_dump(config))
        status, out, err = await etctl("status", "tfjob/mnist", "--kubeconfig", str(in_team))
        assert (status, err) == (0, ""), out + err
        assert "Namespace:    team-a" in out

        # Not found, and usage errors.
        status, out, err = await etctl("status", "tfjob/mnist", *base)
        assert (status, out) == (1, "")
        assert err == 'etctl status: error: tfjob "mnist" not found in namespace "default"\n'
        status, out, err = await etctl("watch", "tfjob/mnist", *base)
        assert (status, out) == (1, "")
        assert err == 'etctl watch: error: tfjob "mnist" not found in namespace "default"\n'
        status, _, err = await etctl("status", "xgboostjob/mnist", *base)
        assert status == 2
        assert (
            "'xgboostjob' is not a registered job kind (registered: MPIJob, PyTorchJob, TFJob, "
            "TrainingJob)" in err
        )
        status, _, err = await etctl("status", "tfjob", *base)
        assert status == 2
        assert "expected KIND/NAME or KIND NAME" in err

    # The cluster has gone: a one-line error, exit 1, never a traceback.
    status, out, err = await etctl("status", "tfjob/mnist", *base, "--request-timeout=2")
    assert status == 1
    assert err.startswith("etctl status: error: ")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


async def test_watch_stops_on_ctrl_c_with_130(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with sandbox_process(
        "--kubeconfig", str(kubeconfig), "--pod-start-delay=0", "--log-level=warning"
    ) as sandbox:
        await sandbox.read_until("Press Ctrl-C to stop")
        options = ClientOptions(request_timeout=10)
        async with await Client.from_kubeconfig(kubeconfig, options=options) as client:
            await client.create(TFJOBS, tfjob("forever", workers=1), namespace="default")
        async with etctl_process("watch", "tfjob/forever", "--kubeconfig", str(kubeconfig)) as w:
            assert w.stdout is not None
            async with asyncio.timeout(90):  # bounds that only turn a hang into a failure
                while b"Pods:" not in await w.stdout.readline():
                    pass
            w.send_signal(signal.SIGINT)  # as Ctrl-C sends
            assert await asyncio.wait_for(w.wait(), timeout=90) == 130
            assert w.stderr is not None
            assert b"Traceback" not in await w.stderr.read()


async def test_status_and_watch_follow_an_elastic_pytorchjob_scaled_out() -> None:
    out = io.StringIO()
    document = yaml.safe_load((EXAMPLES / "pytorchjob" / "elastic-echo.yaml").read_text())
    document["spec"]["elasticPolicy"]["maxReplicas"] = 3
    pytorchjob = resolve(KINDS, "pytorchjob")
    job = document["metadata"]["name"]

    async def main(sandbox: Sandbox) -> tuple[list[str], int]:
        async with await client_for(sandbox) as client:
            await client.create(PYTORCHJOBS, document, namespace="default")

            async def running() -> Any:
                seen = await read_job(client, pytorchjob, "default", job)
                found = seen.job
                ok = found is not None and found.phase == "Running" and len(found.members) == 2
                return seen if ok else None

            seen = await eventually(running, what="running", timeout=20)
            lines = describe_job(seen, namespace="default", api_version="kubeflow.org/v1")
            watching = asyncio.create_task(
                watch_job(client, pytorchjob, "default", job, out, timeout=30)
            )
            await eventually(lambda: _printed(out, "Pods:"), what="the first state", timeout=20)
            scale = {"spec": {"replicas": 3}}
            await client.patch(PYTORCHJOBS, job, scale, namespace="default", subresource="scale")
            await eventually(lambda: _printed(out, "ScaleSucceeded"), what="scaled", timeout=20)
            await client.delete(PYTORCHJOBS, job, namespace="default")
            return lines, await watching

    result = await run_sandbox(QUICK, main)
    assert result is not None
    lines, code = result
    text = "\n".join(lines)
    assert "Kind:         PyTorchJob (kubeflow.org/v1)" in text
    assert "Phase:        Running" in text
    assert f"  Targets:      {job}-worker-0, {job}-worker-1" in text
    assert code == 1
    watched = out.getvalue()
    assert re.search(rf"pod/{job}-worker-2\s+created", watched)
    assert re.search(rf"pytorchjob/{job}\s+Worker replicas 2 -> 3", watched)
    assert "SuccessfulUpdateService" not in watched  # its Services are written once
