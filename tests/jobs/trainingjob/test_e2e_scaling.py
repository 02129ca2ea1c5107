"""Scaling a running TrainingJob end to end: et-operator's scalers, /scale, bounds, timeouts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from etctl.common import SCALEINS, SCALEOUTS
from etctl.jobs.trainingjob import TrainingJobPlugin
from etctl.jobs.trainingjob._api import TRAININGJOBS
from etctl.runtime import ROLES, objects
from etctl.testing import Behaviour, Fault, PodPolicy, eventually, wait_idle
from tests._cluster import Cluster, cluster, sandboxed_nodes
from tests._kubectl import kubectl
from tests._logs import captured_logs
from tests.jobs.trainingjob._manifests import (
    JOB,
    LAUNCHER,
    NS,
    example,
    hostfile,
    hosts,
    scale_out_script,
    w,
)
from tests.schema_support import EXAMPLES

pytestmark = pytest.mark.etctl_hooks(
    "the simulated kubelet runs the launcher's init container and execs, in virtual time"
)


def kubexec_job(**worker: Any) -> dict[str, Any]:
    document = example()
    document["spec"]["launcherAttachMode"] = "kubexec"
    document["spec"]["etReplicaSpecs"]["worker"].update(worker)
    return document


async def started(env: Cluster, document: dict[str, Any] | None = None) -> None:
    env.apply(document or example("training-job.yaml"))
    await eventually(lambda: env.pods_running(LAUNCHER))
    await eventually(lambda: env.status(JOB).get("phase") == "Running")


async def finished(env: Cluster, res: Any, name: str) -> dict[str, Any]:
    await eventually(lambda: env.scaler_done(res, name))
    await eventually(lambda: env.status(JOB).get("currentScaler") is None)
    return env.scaler(res, name)


def outcome(status: dict[str, Any]) -> tuple[str, str, str]:
    last = status["conditions"][-1]
    return last["type"], last.get("reason", ""), last.get("message", "")


def role_workers(env: Cluster) -> list[str]:
    role = env.get(ROLES, LAUNCHER)
    assert role is not None
    for rule in role["rules"]:
        if rule["resources"] == ["pods/exec"]:
            return list(rule["resourceNames"])
    return []


async def test_et_operator_scalers_out_and_in(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        env.apply(example("scale-out.yaml"))
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout")
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingOutSucceeded")
        assert done["addPods"] == [w(2)]
        assert env.pods_running(w(2))
        assert await hostfile(env) == hosts(0, 1, 2)
        assert env.stored(JOB)["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 3
        # By count: the highest index goes.
        env.apply(example("scale-in-count.yaml"))
        done = await finished(env, SCALEINS, "scalein-sample")
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingInSucceeded")
        assert done["toDeletePods"] == [w(2)]
        await eventually(lambda: w(2) not in env.phases())
        assert await hostfile(env) == hosts(0, 1)
        # By name.
        created = env.apply(example("scale-in-pod-names.yaml"))
        name = objects.name(created)
        done = await finished(env, SCALEINS, name)
        assert done["toDeletePods"] == [w(1)]
        await eventually(lambda: w(1) not in env.phases())
        assert await hostfile(env) == hosts(0)
        status = env.status(JOB)
        assert status["targetWorkers"] == status["currentWorkers"] == [w(0)]
        assert status["lastWorkerIndex"] == 2
        assert env.condition(JOB, "Scaling") == ("False", "ScalingInSucceeded")
        assert env.status(JOB)["phase"] == "Running"


async def test_a_scale_out_script_runs_once_with_the_new_hosts(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        script = 'echo "$SCALE_REASON $1" >> /scripts/runs\n'
        setup = await env.client.exec(
            NS,
            LAUNCHER,
            ["sh", "-c", "mkdir -p /scripts && cat > /scripts/on-scale.sh"],
            stdin=script.encode(),
            timeout=10,
        )
        assert setup.exit_code == 0, setup.stderr
        env.apply(scale_out_script())
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout-script")
        assert done["addPods"] == [w(2), w(3)]
        executed = next(c for c in done["conditions"] if c["type"] == "ScriptExecuted")
        assert (executed["status"], executed["reason"]) == ("True", "ScriptSucceeded")
        runs = await env.client.exec(NS, LAUNCHER, ["cat", "/scripts/runs"], timeout=10)
        expected = f"more-data {w(0)}:1,{w(1)}:1,{w(2)}:1,{w(3)}:1\n"
        assert runs.stdout.decode() == expected


async def test_the_launcher_role_lists_exactly_the_workers(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, kubexec_job())
        assert role_workers(env) == [w(0), w(1)]
        env.apply(example("scale-out.yaml"))
        await eventually(lambda: env.status(JOB).get("targetWorkers") == [w(0), w(1), w(2)])
        # The Role follows the targets before the new pod even runs.
        await eventually(lambda: role_workers(env) == [w(0), w(1), w(2)])
        await finished(env, SCALEOUTS, "elastic-training-scaleout")
        env.apply(example("scale-in-count.yaml"))
        await finished(env, SCALEINS, "scalein-sample")
        await eventually(lambda: role_workers(env) == [w(0), w(1)])


async def test_bounds_are_enforced_with_a_message_naming_them(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, kubexec_job(minReplicas=2, maxReplicas=3))
        big = {
            **example("scale-out.yaml"),
            "spec": {"selector": {"name": JOB}, "toAdd": {"count": 2}},
        }
        env.apply(big)
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout")
        assert outcome(done) == (
            "ScaleFailed",
            "MaxReplicasExceeded",
            "adding 2 workers to the 2 of TrainingJob elastic-training would make 4, above its "
            "maxReplicas 3",
        )
        env.apply(example("scale-in-count.yaml"))
        done = await finished(env, SCALEINS, "scalein-sample")
        assert outcome(done)[1] == "MinReplicasExceeded"
        assert "below its minReplicas 2" in outcome(done)[2]
        assert env.phases().keys() >= {w(0), w(1)}
        # The job controller renders Scaling from the scalers: the latest that ran says how.
        await eventually(lambda: env.condition(JOB, "Scaling") == ("False", "ScalingInFailed"))


async def test_a_scale_out_that_times_out_is_rolled_back(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        await started(env)
        env.kubelet.add_policy(PodPolicy(name=w(2), does=Behaviour(stay_pending=True)))
        env.apply(example("scale-out.yaml"))  # timeout: 300
        await eventually(lambda: env.phases().get(w(2)) == "Pending")
        await env.advance_idle(299, manager)
        assert env.scaler(SCALEOUTS, "elastic-training-scaleout")["step"] == "Creating"
        await env.clock.advance(1)
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout")
        assert outcome(done)[:2] == ("ScaleFailed", "ScaleOutTimeout")
        await eventually(lambda: w(2) not in env.phases())
        assert env.status(JOB)["targetWorkers"] == [w(0), w(1)]
        assert await hostfile(env) == hosts(0, 1)
        assert env.stored(JOB)["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 2


async def test_two_scalers_run_one_after_the_other_oldest_first(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        env.apply(example("training-job.yaml"))
        # Both wait for the job to run; the older one (the ScaleIn) goes first.
        env.apply(example("scale-in-count.yaml"))
        await wait_idle(env.server, manager)
        await env.clock.advance(1)
        env.apply(example("scale-out.yaml"))
        await eventually(lambda: env.pods_running(LAUNCHER))
        first = await finished(env, SCALEINS, "scalein-sample")
        second = await finished(env, SCALEOUTS, "elastic-training-scaleout")
        assert first["toDeletePods"] == [w(1)]
        assert second["addPods"] == [w(2)]
        started_in = first["conditions"][1]["lastTransitionTime"]
        started_out = second["conditions"][1]["lastTransitionTime"]
        assert started_in <= started_out
        assert env.status(JOB)["targetWorkers"] == [w(0), w(2)]
        assert await hostfile(env) == hosts(0, 2)


async def test_a_scale_in_naming_another_jobs_pod_is_rejected(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        other = kubexec_job()
        other["metadata"]["name"] = "other"
        await started(env)
        env.apply(other)
        await eventually(lambda: env.pods_running("other-worker-0"))
        scaler = example("scale-in-pod-names.yaml")
        scaler["metadata"] = {"name": "steal"}
        scaler["spec"]["toDelete"]["podNames"] = [w(1), "other-worker-0"]
        env.apply(scaler)
        done = await finished(env, SCALEINS, "steal")
        assert outcome(done)[:2] == ("ScaleFailed", "UnknownWorkers")
        assert "other-worker-0 is not a worker of TrainingJob elastic-training" in outcome(done)[2]
        assert env.pods_running(w(1), "other-worker-0")


async def test_kubectl_scale_drives_a_scale(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env, kubexec_job(maxReplicas=4))
        await env.client.patch(
            TRAININGJOBS, JOB, {"spec": {"replicas": 3}}, namespace=NS, subresource="scale"
        )
        generation = objects.generation(env.stored(JOB))
        await eventually(lambda: env.get(SCALEOUTS, f"{JOB}-replicas-{generation}") is not None)
        done = await finished(env, SCALEOUTS, f"{JOB}-replicas-{generation}")
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingOutSucceeded")
        scale = await env.client.get_subresource(TRAININGJOBS, JOB, "scale", namespace=NS)
        assert scale["spec"]["replicas"] == scale["status"]["replicas"] == 3
        assert "replica-type=worker" in scale["status"]["selector"]
        assert await hostfile(env) == hosts(0, 1, 2)
        # Beyond the bound: clamped with a warning, then scaled to the bound.
        await env.client.patch(
            TRAININGJOBS, JOB, {"spec": {"replicas": 10}}, namespace=NS, subresource="scale"
        )
        await eventually(lambda: bool(env.events("ReplicasClamped")))
        await eventually(lambda: env.status(JOB).get("targetWorkers") == [w(0), w(1), w(2), w(3)])
        await eventually(lambda: env.pods_running(w(3)))
        await eventually(lambda: env.status(JOB).get("currentScaler") is None)
        assert env.stored(JOB)["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 4


async def test_kubectl_scale_during_a_scale_out_is_applied_after_it(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating() as manager,
    ):
        await started(env, kubexec_job(maxReplicas=6))
        env.kubelet.add_policy(PodPolicy(name=w(2), does=Behaviour(start_delay=10)))
        env.apply(example("scale-out.yaml"))  # +1
        await eventually(lambda: env.phases().get(w(2)) == "Pending")
        await wait_idle(env.server, manager)
        assert env.scaler(SCALEOUTS, "elastic-training-scaleout")["step"] == "Creating"
        # The user asks for 5 workers while the scale-out (to 3) is still creating its worker.
        await env.client.patch(
            TRAININGJOBS, JOB, {"spec": {"replicas": 5}}, namespace=NS, subresource="scale"
        )
        await wait_idle(env.server, manager)
        await env.clock.advance(10)
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout")
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingOutSucceeded")
        # The scale-out reached 3; then the user's 5 is applied, not overwritten by that 3.
        await eventually(lambda: len(env.status(JOB).get("targetWorkers", [])) == 5)
        await eventually(lambda: env.status(JOB).get("currentScaler") is None)
        assert env.stored(JOB)["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 5


async def test_a_long_named_job_grows_as_far_as_its_worker_names_fit(tmp_path: Path) -> None:
    # 54 characters: <job>-worker-9 is 63 long, <job>-worker-10 would be 64 (each worker has a
    # Service of its name, a DNS label). /scale past ten workers grows the job to ten and says
    # so; an explicit scale-out past them fails the scaler, never the job.
    name = "a" * 54
    document = kubexec_job(replicas=8)
    del document["spec"]["etReplicaSpecs"]["worker"]["maxReplicas"]  # no bound to check it against
    document["metadata"]["name"] = name
    workers = [f"{name}-worker-{i}" for i in range(10)]
    rule = "each worker has a Service of its name, and a Service name is a DNS label"
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        env.apply(document)
        await eventually(lambda: env.pods_running(f"{name}-launcher"))
        await env.client.patch(
            TRAININGJOBS, name, {"spec": {"replicas": 11}}, namespace=NS, subresource="scale"
        )
        await eventually(lambda: env.events("ReplicasClamped"))
        (event,) = env.events("ReplicasClamped")
        assert event["message"] == (
            f"replicas 11 of TrainingJob {name} is more than its worker names allow: workers "
            f"past {name}-worker-9 would have names over 63 characters ({rule}; a shorter job "
            "name leaves room for more); set to 10"
        )
        generation = objects.generation(env.get(TRAININGJOBS, name) or {})
        grown = f"{name}-replicas-{generation}"
        await eventually(lambda: env.scaler_done(SCALEOUTS, grown))
        assert outcome(env.scaler(SCALEOUTS, grown))[:2] == (
            "ScaleSucceeded",
            "ScalingOutSucceeded",
        )
        assert env.stored(name)["spec"]["etReplicaSpecs"]["worker"]["replicas"] == 10
        await eventually(lambda: env.pods_running(f"{name}-launcher", *workers))
        env.apply(
            {
                "apiVersion": "kai.alibabacloud.com/v1alpha1",
                "kind": "ScaleOut",
                "metadata": {"name": "one-more"},
                "spec": {"selector": {"name": name}, "toAdd": {"count": 1}},
            }
        )
        await eventually(lambda: env.scaler_done(SCALEOUTS, "one-more"))
        refused = env.scaler(SCALEOUTS, "one-more")
        assert outcome(refused) == (
            "ScaleFailed",
            "NameTooLong",
            f"TrainingJob {name} cannot get worker {name}-worker-10: the name would exceed 63 "
            f"characters ({rule}); a shorter job name leaves room for more workers",
        )

        def phase() -> str:
            return str(((env.get(TRAININGJOBS, name) or {}).get("status") or {}).get("phase"))

        await eventually(lambda: phase() == "Running")
        job = env.get(TRAININGJOBS, name)
        assert job is not None
        assert job["status"]["targetWorkers"] == workers


async def run_kubectl(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    done = await kubectl(kubeconfig, *args)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.etctl_kubectl
async def test_kubectl_applies_the_examples_and_scales(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        kubeconfig = env.server.write_kubeconfig(tmp_path / "kubectl-config")
        job = str(EXAMPLES / "trainingjob" / "training-job.yaml")
        code, out, err = await run_kubectl(kubeconfig, "apply", "-f", job)
        assert code == 0, err
        assert "trainingjob.kai.alibabacloud.com/elastic-training created" in out
        await eventually(lambda: env.status(JOB).get("phase") == "Running")
        code, out, err = await run_kubectl(kubeconfig, "scale", "tj", JOB, "--replicas=3")
        assert code == 0, err
        assert "scaled" in out
        await eventually(lambda: env.status(JOB).get("targetWorkers") == [w(0), w(1), w(2)])
        await eventually(lambda: env.pods_running(w(2)))
        await eventually(lambda: env.status(JOB).get("currentScaler") is None)
        await eventually(lambda: len(env.status(JOB).get("currentWorkers", [])) == 3)
        code, out, err = await run_kubectl(kubeconfig, "get", "tj", JOB)
        assert code == 0, err
        header, row = out.splitlines()
        assert header.split()[:4] == ["NAME", "PHASE", "WORKERS", "DESIRED"]
        assert row.split()[:4] == [JOB, "Running", "3", "3"]
        scaler = str(EXAMPLES / "trainingjob" / "scale-in-count.yaml")
        code, out, err = await run_kubectl(kubeconfig, "apply", "-f", scaler)
        assert code == 0, err
        await eventually(lambda: env.scaler_done(SCALEINS, "scalein-sample"))
        code, out, err = await run_kubectl(
            kubeconfig, "get", "scalein", "scalein-sample", "-o", "jsonpath={.status.phase}"
        )
        assert (code, out) == (0, "ScaleSucceeded"), err


_SCRIPT = {"command": "/scripts/on-scale.sh"}
"""Matches the execs that run the example's script (not the hostfile pusher's)."""


async def install_script(env: Cluster) -> None:
    script = 'echo "$SCALE_REASON $1" >> /scripts/runs\n'
    setup = await env.client.exec(
        NS,
        LAUNCHER,
        ["sh", "-c", "mkdir -p /scripts && cat > /scripts/on-scale.sh"],
        stdin=script.encode(),
        timeout=10,
    )
    assert setup.exit_code == 0, setup.stderr


async def script_runs(env: Cluster) -> int:
    """How many times the installed script ran on the launcher."""
    runs = await env.client.exec(NS, LAUNCHER, ["cat", "/scripts/runs"], timeout=10)
    return runs.stdout.decode().count("\n")


@pytest.mark.parametrize("status", [429, 503, 500])
async def test_a_script_exec_refused_before_it_started_is_retried_and_runs_once(
    tmp_path: Path, status: int
) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        await install_script(env)
        # Refused as many times as the client tries one exec (5): the scaler backs off on its
        # clock and tries again. The upgrade was refused each time, so the script never started.
        refused = env.server.inject(
            Fault(subresource="exec", query_contains=_SCRIPT, status=status, times=5)
        )
        env.apply(scale_out_script())
        await eventually(lambda: refused.fired == 5)
        await asyncio.sleep(0.05)  # the scaler's reconcile reaches its backoff sleep
        await env.clock.advance(1.0)
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout-script")
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingOutSucceeded")
        executed = next(c for c in done["conditions"] if c["type"] == "ScriptExecuted")
        assert (executed["status"], executed["reason"]) == ("True", "ScriptSucceeded")
        assert await script_runs(env) == 1  # exactly once


async def test_a_script_exec_refused_for_good_fails_the_scaler_as_never_started(
    tmp_path: Path,
) -> None:
    with captured_logs() as logs:
        await _refused_for_good(tmp_path)
    name = "elastic-training-scaleout-script"
    lines = [
        (e["log_level"], e["event"], e.get("step"), e.get("reason"))
        for e in logs
        if e.get("kind") == "ScaleOut" and e.get("name") == name
    ]
    # Each written change of the scaler, once, failures at warning, with its context.
    assert lines == [
        ("info", "scaler adopted", None, "Adopted"),
        ("info", "scaler step changed", "Creating", "ScalingStart"),
        ("info", "scaler step changed", "Joining", "ScalingStart"),
        ("info", "scaler step changed", "Script", "ScriptPending"),
        ("info", "scaler script being sent", "Script", "ScriptSending"),
        ("warning", "scaler step changed", "RollingBack", "ScriptNotStarted"),
        ("warning", "scaler failed", "Done", "ScriptNotStarted"),
    ], "\n".join(map(str, lines))
    ended = [
        (e["log_level"], e.get("reason"))
        for e in logs
        if e["event"] == "job scaling ended" and e.get("kind") == "TrainingJob"
    ]
    assert ended == [("warning", "ScalingOutFailed")]


async def _refused_for_good(tmp_path: Path) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        await install_script(env)
        env.server.inject(Fault(subresource="exec", query_contains=_SCRIPT, status=403))
        env.apply(scale_out_script())
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout-script")
        executed = next(c for c in done["conditions"] if c["type"] == "ScriptExecuted")
        assert (executed["status"], executed["reason"]) == ("False", "ScriptNotStarted")
        assert "never started" in executed["message"]
        assert "it did not run" in executed["message"]
        assert outcome(done)[:2] == ("ScaleFailed", "ScriptNotStarted")
        runs = await env.client.exec(NS, LAUNCHER, ["cat", "/scripts/runs"], timeout=10)
        assert runs.exit_code != 0  # the script never ran: no file


@pytest.mark.parametrize(
    "dropped",
    [
        pytest.param('"step":"Script"', id="the-step"),
        pytest.param("ScriptSending", id="the-attempt-marker"),
    ],
)
async def test_a_script_step_whose_answer_was_lost_still_runs_the_script_once(
    tmp_path: Path, dropped: str
) -> None:
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        await install_script(env)
        # The server commits the write that records the step (its decision, or the attempt
        # marker before the exec) and drops the answer: the client's retry meets a Conflict.
        lost = env.server.inject(
            Fault(
                verb="patch",
                resource="scaleouts",
                subresource="status",
                body_contains=dropped,
                drop_answer=True,
            )
        )
        env.apply(scale_out_script())
        done = await finished(env, SCALEOUTS, "elastic-training-scaleout-script")
        assert lost.fired == 1
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingOutSucceeded")
        executed = next(c for c in done["conditions"] if c["type"] == "ScriptExecuted")
        assert (executed["status"], executed["reason"]) == ("True", "ScriptSucceeded")
        assert await script_runs(env) == 1  # exactly once
        assert set(done["addPods"]) <= set(env.status(JOB)["targetWorkers"])  # not rolled back


async def test_the_operator_that_withheld_an_exec_sends_it_when_its_marker_turns_up(
    tmp_path: Path,
) -> None:
    name = "elastic-training-scaleout-script"
    async with (
        cluster(tmp_path, TrainingJobPlugin(), kubelet=sandboxed_nodes(tmp_path)) as env,
        env.operating(),
    ):
        await started(env)
        await install_script(env)
        unreadable = Fault(verb="get", resource="scaleouts", name=name, status=500, times=5)
        injected: list[Fault] = []

        def marked(event: Any) -> None:
            # The attempt marker is committed: its answer will be dropped, and reading the scaler
            # back fails as long as the client retries. The operator cannot know the marker is
            # stored, so it does not send the exec; it only knows it did not.
            marker = event.resource[1] == "scaleouts" and "ScriptSending" in str(event.object)
            if marker and not injected:
                injected.append(env.server.inject(unreadable))

        unsubscribe = env.server.subscribe(marked)
        lost = env.server.inject(
            Fault(
                verb="patch",
                resource="scaleouts",
                subresource="status",
                body_contains="ScriptSending",
                drop_answer=True,
            )
        )
        env.apply(scale_out_script())
        await eventually(lambda: unreadable.fired == 5)
        await env.advance_idle(1.0)  # the reconcile that met the Conflict comes back in 1 s
        done = await finished(env, SCALEOUTS, name)
        unsubscribe()
        assert lost.fired == 1
        assert outcome(done)[:2] == ("ScaleSucceeded", "ScalingOutSucceeded")
        assert await script_runs(env) == 1
