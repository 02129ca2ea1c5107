"""The pod lifecycle on the simulated kubelet, driven over HTTP on a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from etctl.runtime import FakeClock, ObjectView
from etctl.testing import ApiServer
from etctl.testing._kubelet import Behaviour, Kubelet, PodPolicy
from tests.testing.apiserver._client import Api
from tests.testing.kubelet._helpers import (
    PODS,
    condition,
    container_state,
    phase_is,
    pod,
    pod_events,
    sim,
    wait_for,
    wait_gone,
    watch_object,
)


def _state(obj: dict[str, Any], name: str = "main") -> dict[str, Any]:
    state: dict[str, Any] = container_state(obj, name).get("state", {})
    return state


def _restarted(count: int) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: container_state(obj).get("restartCount") == count


def _running(obj: dict[str, Any]) -> bool:
    statuses = (obj.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all(s.get("ready") for s in statuses)


async def test_a_pod_runs_with_the_status_the_kubelet_writes(api: Api, kubelet: Kubelet) -> None:
    await api.create(PODS, pod("web"))
    running = await wait_for(api, PODS, "web", _running)
    status = running["status"]
    assert status["phase"] == "Running"
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("PodReadyToStartContainers", "True"),
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    node = kubelet.nodes[running["spec"]["nodeName"]]
    assert status["hostIP"] == node.ip
    assert status["hostIPs"] == [{"ip": node.ip}]
    assert status["podIP"].startswith("10.244.")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["startTime"] == "2026-01-01T00:00:00Z"
    assert status["qosClass"] == "BestEffort"
    entry = container_state(running)
    assert entry["state"] == {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    assert entry["ready"] is True
    assert entry["started"] is True
    assert entry["restartCount"] == 0
    assert entry["lastState"] == {}
    assert entry["image"] == "docker.io/library/busybox:1.36"
    assert entry["imageID"].startswith("docker.io/library/busybox@sha256:")
    assert entry["containerID"].startswith("containerd://")
    reasons = [reason for reason, _ in await pod_events(api, "web")]
    assert reasons == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]


async def test_the_start_delay_keeps_the_pod_pending_on_the_clock(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("slow", annotations=sim(start_delay=30)))
    pending = await wait_for(api, PODS, "slow", lambda o: bool(container_state(o)))
    assert pending["status"]["phase"] == "Pending"
    assert _state(pending) == {"waiting": {"reason": "ContainerCreating"}}
    assert condition(pending, "Ready")["message"] == "containers with unready status: [main]"
    await clock.advance(29)
    assert (await api.get(f"{PODS}/slow")).body["status"]["phase"] == "Pending"
    await clock.advance(1)
    running = await wait_for(api, PODS, "slow", phase_is("Running"))
    assert _state(running) == {"running": {"startedAt": "2026-01-01T00:00:30Z"}}
    pulled = dict(await pod_events(api, "slow"))["Pulled"]
    assert pulled.startswith('Successfully pulled image "busybox:1.36" in 30s')


async def test_a_container_that_exits_with_an_error_fails_a_never_pod(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    knobs = sim(run_seconds=5, exit_code=3, exit_message="disk full")
    await api.create(PODS, pod("job", restart="Never", annotations=knobs))
    await wait_for(api, PODS, "job", phase_is("Running"))
    await clock.advance(5)
    failed = await wait_for(api, PODS, "job", phase_is("Failed"))
    terminated = _state(failed)["terminated"]
    assert terminated["exitCode"] == 3
    assert terminated["reason"] == "Error"
    assert terminated["message"] == "disk full"
    assert terminated["startedAt"] == "2026-01-01T00:00:00Z"
    assert terminated["finishedAt"] == "2026-01-01T00:00:05Z"
    assert terminated["containerID"] == container_state(failed)["containerID"]
    assert condition(failed, "Ready")["reason"] == "PodCompleted"
    assert condition(failed, "ContainersReady")["reason"] == "PodCompleted"
    assert condition(failed, "PodReadyToStartContainers")["status"] == "False"
    assert container_state(failed)["restartCount"] == 0


async def test_a_container_that_completes_succeeds_an_on_failure_pod(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("job", restart="OnFailure", annotations=sim(run_seconds=2)))
    await wait_for(api, PODS, "job", phase_is("Running"))
    await clock.advance(2)
    done = await wait_for(api, PODS, "job", phase_is("Succeeded"))
    assert _state(done)["terminated"]["reason"] == "Completed"
    assert _state(done)["terminated"]["exitCode"] == 0


async def test_crash_loop_back_off_doubles_from_ten_seconds_to_five_minutes(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("crash", annotations=sim(run_seconds=0, exit_code=1)))
    first = await wait_for(
        api, PODS, "crash", lambda o: container_state(o).get("restartCount") == 1
    )
    assert first["status"]["phase"] == "Running"
    state = _state(first)["waiting"]
    assert state["reason"] == "CrashLoopBackOff"
    assert state["message"].startswith(
        "back-off 10s restarting failed container=main pod=crash_default("
    )
    assert container_state(first)["lastState"]["terminated"]["exitCode"] == 1
    waits: list[str] = []
    for count, step in enumerate((10, 20, 40, 80, 160, 300, 300), start=2):
        await clock.advance(step - 1)
        before = container_state((await api.get(f"{PODS}/crash")).body)
        assert before["restartCount"] == count - 1
        await clock.advance(1)
        seen = await wait_for(api, PODS, "crash", _restarted(count))
        waits.append(_state(seen)["waiting"]["message"].split(" ")[1])
    assert waits == ["20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s", "5m0s"]
    events = dict(await pod_events(api, "crash"))
    assert events["BackOff"].startswith(
        "Back-off restarting failed container main in pod crash_default("
    )


async def test_always_restarts_a_completed_container(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("loop", annotations=sim(run_seconds=60)))
    await wait_for(api, PODS, "loop", phase_is("Running"))
    await clock.advance(60)
    again = await wait_for(api, PODS, "loop", lambda o: container_state(o)["restartCount"] == 1)
    assert "running" in _state(again)
    assert container_state(again)["lastState"]["terminated"]["reason"] == "Completed"


async def test_an_oom_kill_is_exit_code_137_with_reason_oomkilled(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("hog", restart="Never", annotations=sim(oom_after=7)))
    await wait_for(api, PODS, "hog", phase_is("Running"))
    await clock.advance(7)
    failed = await wait_for(api, PODS, "hog", phase_is("Failed"))
    assert _state(failed)["terminated"]["exitCode"] == 137
    assert _state(failed)["terminated"]["reason"] == "OOMKilled"


async def test_an_image_that_cannot_be_pulled_backs_off(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("bad", annotations=sim(fail_start="ImagePullBackOff")))
    pulling = await wait_for(
        api, PODS, "bad", lambda o: _state(o).get("waiting", {}).get("reason") == "ErrImagePull"
    )
    assert pulling["status"]["phase"] == "Pending"
    await clock.advance(1)
    backoff = await wait_for(
        api, PODS, "bad", lambda o: _state(o)["waiting"]["reason"] == "ImagePullBackOff"
    )
    assert _state(backoff)["waiting"]["message"].startswith('Back-off pulling image "busybox:1.36"')
    assert container_state(backoff)["imageID"] == ""
    assert "containerID" not in container_state(backoff)
    events = await pod_events(api, "bad")
    assert ("Failed", "Error: ErrImagePull") in events
    assert ("BackOff", 'Back-off pulling image "busybox:1.36"') in events
    assert ("Failed", "Error: ImagePullBackOff") in events


async def test_an_image_that_is_not_a_reference_is_never_pulled(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    image = "example.org/open mpi:cpu"
    await api.create(PODS, pod("bad", containers=[{"name": "main", "image": image}]))
    stuck = await wait_for(
        api, PODS, "bad", lambda o: _state(o).get("waiting", {}).get("reason") == "InvalidImageName"
    )
    detail = (
        f'Failed to apply default image tag "{image}": couldn\'t parse image name "{image}": '
        "invalid reference format"
    )
    assert _state(stuck)["waiting"]["message"] == detail
    assert container_state(stuck)["image"] == image
    assert container_state(stuck)["imageID"] == ""
    await clock.advance(600)
    later = (await api.get(f"{PODS}/bad")).body
    assert later["status"]["phase"] == "Pending"
    assert _state(later)["waiting"]["reason"] == "InvalidImageName"
    events = await pod_events(api, "bad")
    assert ("InspectFailed", detail) in events
    assert ("Failed", "Error: InvalidImageName") in events
    assert not [e for e in events if e[0] in ("Pulling", "Pulled", "Started")]


async def test_pull_policy_never_runs_only_an_image_the_node_holds(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    never = {"name": "main", "image": "busybox:1.36", "imagePullPolicy": "Never"}
    await api.create(PODS, pod("never", containers=[never], nodeName="node-0"))
    stuck = await wait_for(
        api,
        PODS,
        "never",
        lambda o: _state(o).get("waiting", {}).get("reason") == "ErrImageNeverPull",
    )
    detail = 'Container image "busybox:1.36" is not present with pull policy of Never'
    assert _state(stuck)["waiting"]["message"] == detail
    assert ("ErrImageNeverPull", detail) in await pod_events(api, "never")
    # Another pod pulls the image onto the node; the next try finds it there.
    await api.create(PODS, pod("puller", nodeName="node-0"))
    await wait_for(api, PODS, "puller", phase_is("Running"))
    await clock.advance(10)
    await wait_for(api, PODS, "never", phase_is("Running"))
    events = await pod_events(api, "never")
    assert ("Pulled", 'Container image "busybox:1.36" already present on machine') in events


async def test_a_container_that_cannot_be_created_waits_with_the_reason(
    api: Api, kubelet: Kubelet
) -> None:
    body = pod(
        "bad", annotations=sim(fail_start="CreateContainerError", fail_message="no such file")
    )
    await api.create(PODS, body)
    stuck = await wait_for(
        api,
        PODS,
        "bad",
        lambda o: _state(o).get("waiting", {}).get("reason") == "CreateContainerError",
    )
    assert _state(stuck)["waiting"]["message"] == "no such file"
    assert ("Failed", "Error: no such file") in await pod_events(api, "bad")


async def test_stay_pending_never_starts(api: Api, kubelet: Kubelet, clock: FakeClock) -> None:
    await api.create(PODS, pod("idle", annotations=sim(stay_pending="true")))
    await wait_for(api, PODS, "idle", lambda o: bool(container_state(o)))
    await clock.advance(3600)
    idle = (await api.get(f"{PODS}/idle")).body
    assert idle["status"]["phase"] == "Pending"
    assert _state(idle) == {"waiting": {"reason": "ContainerCreating"}}


async def test_init_containers_run_in_order_before_the_main_containers(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    body = pod(
        "init",
        annotations=sim(**{"run_seconds.first": 5, "run_seconds.second": 3}),
        init=[
            {"name": "first", "image": "busybox:1.36"},
            {"name": "second", "image": "busybox:1.36"},
        ],
    )
    await api.create(PODS, body)
    started = await wait_for(api, PODS, "init", lambda o: "running" in _state(o, "first"))
    assert started["status"]["phase"] == "Pending"
    assert _state(started, "second") == {"waiting": {"reason": "PodInitializing"}}
    assert _state(started, "main") == {"waiting": {"reason": "PodInitializing"}}
    assert condition(started, "Initialized") == {
        "type": "Initialized",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "ContainersNotInitialized",
        "message": "containers with incomplete status: [first second]",
    }
    await clock.advance(5)
    await wait_for(api, PODS, "init", lambda o: "running" in _state(o, "second"))
    await clock.advance(3)
    running = await wait_for(api, PODS, "init", phase_is("Running"))
    assert _state(running, "first")["terminated"]["reason"] == "Completed"
    assert _state(running, "second")["terminated"]["finishedAt"] == "2026-01-01T00:00:08Z"
    assert condition(running, "Initialized")["status"] == "True"
    assert _state(running, "main") == {"running": {"startedAt": "2026-01-01T00:00:08Z"}}


async def test_a_failed_init_container_fails_a_never_pod(api: Api, kubelet: Kubelet) -> None:
    body = pod(
        "init",
        restart="Never",
        annotations=sim(**{"exit_code.setup": 2}),
        init=[{"name": "setup", "image": "busybox:1.36"}],
    )
    await api.create(PODS, body)
    failed = await wait_for(api, PODS, "init", phase_is("Failed"))
    assert _state(failed, "setup")["terminated"]["exitCode"] == 2
    assert _state(failed, "main") == {"waiting": {"reason": "PodInitializing"}}
    assert condition(failed, "Initialized")["status"] == "False"


async def test_a_failed_init_container_crash_loops_under_always(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    body = pod(
        "init",
        annotations=sim(**{"exit_code.setup": 1}),
        init=[{"name": "setup", "image": "busybox:1.36"}],
    )
    await api.create(PODS, body)
    looping = await wait_for(
        api,
        PODS,
        "init",
        lambda o: _state(o, "setup").get("waiting", {}).get("reason") == "CrashLoopBackOff",
    )
    assert looping["status"]["phase"] == "Pending"
    assert container_state(looping, "setup")["restartCount"] == 1


async def test_graceful_deletion_stops_the_containers_then_removes_the_pod(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("web", annotations=sim(stop_seconds=5)))
    await wait_for(api, PODS, "web", phase_is("Running"))
    reply = await api.delete(f"{PODS}/web")
    assert reply.body["metadata"]["deletionGracePeriodSeconds"] == 30
    stopping = await wait_for(
        api, PODS, "web", lambda o: condition(o, "Ready").get("status") == "False"
    )
    assert "running" in _state(stopping)
    await clock.advance(4)
    assert (await api.get(f"{PODS}/web")).status == 200
    async with watch_object(api, PODS, "web") as stream:
        await stream.next()
        await clock.advance(1)
        states = await stream.until_deleted()
    final = states[-1]
    assert _state(final)["terminated"]["exitCode"] == 143
    assert _state(final)["terminated"]["finishedAt"] == "2026-01-01T00:00:05Z"
    assert final["status"]["phase"] == "Failed"
    assert ("Killing", "Stopping container main") in await pod_events(api, "web")


async def test_a_container_slower_than_the_grace_period_is_killed(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("slow", annotations=sim(stop_seconds=100)))
    await wait_for(api, PODS, "slow", phase_is("Running"))
    await api.delete(f"{PODS}/slow", {"gracePeriodSeconds": 10})
    async with watch_object(api, PODS, "slow") as stream:
        await stream.next()
        await clock.advance(9)
        assert (await api.get(f"{PODS}/slow")).status == 200
        await clock.advance(1)
        killed = (await stream.until_deleted())[-1]
    assert _state(killed)["terminated"]["exitCode"] == 137
    assert _state(killed)["terminated"]["finishedAt"] == "2026-01-01T00:00:10Z"


async def test_a_pod_that_never_started_is_removed_at_once_on_deletion(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, pod("idle", annotations=sim(stay_pending="true")))
    await wait_for(api, PODS, "idle", lambda o: bool(o["spec"].get("nodeName")))
    await api.delete(f"{PODS}/idle")
    await wait_gone(api, PODS, "idle")


async def test_eviction_after_a_delay_fails_the_pod_as_evicted(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    await api.create(PODS, pod("victim", annotations=sim(evict_after=30)))
    await wait_for(api, PODS, "victim", phase_is("Running"))
    await clock.advance(30)
    evicted = await wait_for(api, PODS, "victim", phase_is("Failed"))
    status = evicted["status"]
    assert status["reason"] == "Evicted"
    assert status["message"].startswith("The node was low on resource: memory. ")
    assert "Container main was using 512Mi, request is 0" in status["message"]
    assert condition(evicted, "DisruptionTarget")["reason"] == "TerminationByKubelet"
    assert _state(evicted)["terminated"]["exitCode"] == 137
    assert ("Evicted", status["message"]) in await pod_events(api, "victim")
    assert (await api.get(f"{PODS}/victim")).status == 200


async def test_active_deadline_fails_the_pod(api: Api, kubelet: Kubelet, clock: FakeClock) -> None:
    await api.create(PODS, pod("bounded", activeDeadlineSeconds=60))
    await wait_for(api, PODS, "bounded", phase_is("Running"))
    await clock.advance(60)
    failed = await wait_for(api, PODS, "bounded", phase_is("Failed"))
    assert failed["status"]["reason"] == "DeadlineExceeded"
    assert failed["status"]["message"] == (
        "Pod was active on the node longer than the specified deadline"
    )


async def test_readiness_can_be_delayed_or_withheld(
    api: Api, kubelet: Kubelet, clock: FakeClock
) -> None:
    containers = [
        {"name": "late", "image": "busybox:1.36"},
        {"name": "never", "image": "busybox:1.36"},
    ]
    annotations = sim(**{"ready_delay.late": 15, "ready.never": "false"})
    await api.create(PODS, pod("ready", containers=containers, annotations=annotations))
    running = await wait_for(api, PODS, "ready", phase_is("Running"))
    assert condition(running, "Ready")["message"] == "containers with unready status: [late never]"
    await clock.advance(15)
    later = await wait_for(
        api, PODS, "ready", lambda o: container_state(o, "late").get("ready") is True
    )
    assert condition(later, "Ready")["message"] == "containers with unready status: [never]"


async def test_readiness_gates_hold_ready_until_their_condition_is_true(
    api: Api, kubelet: Kubelet
) -> None:
    await api.create(PODS, pod("gated", readinessGates=[{"conditionType": "example.com/ok"}]))
    running = await wait_for(
        api, PODS, "gated", lambda o: condition(o, "ContainersReady").get("status") == "True"
    )
    ready = condition(running, "Ready")
    assert ready["status"] == "False"
    assert ready["reason"] == "ReadinessGatesNotReady"
    assert ready["message"] == (
        'corresponding condition of pod readiness gate "example.com/ok" does not exist.'
    )


async def test_a_policy_decides_each_run(api: Api, kubelet: Kubelet, clock: FakeClock) -> None:
    def flaky(pod: ObjectView, container: str, restarts: int) -> Behaviour:
        if restarts < 2:
            return Behaviour(run_seconds=1, exit_code=1)
        return Behaviour()

    kubelet.add_policy(PodPolicy(name="worker-*", does=flaky))
    await api.create(PODS, pod("worker-0"))
    await api.create(PODS, pod("other"))
    await wait_for(api, PODS, "worker-0", phase_is("Running"))
    await clock.advance(1)
    await wait_for(api, PODS, "worker-0", lambda o: container_state(o)["restartCount"] == 1)
    await clock.advance(1)
    await wait_for(api, PODS, "worker-0", lambda o: "waiting" in _state(o))
    await clock.advance(10)
    settled = await wait_for(
        api, PODS, "worker-0", lambda o: container_state(o)["restartCount"] == 2
    )
    await clock.advance(600)
    assert "running" in _state((await api.get(f"{PODS}/worker-0")).body)
    assert container_state(settled)["restartCount"] == 2
    other = (await api.get(f"{PODS}/other")).body
    assert container_state(other)["restartCount"] == 0


async def test_exit_and_evict_act_at_once(api: Api, kubelet: Kubelet, server: ApiServer) -> None:
    await api.create(PODS, pod("a", restart="Never"))
    await api.create(PODS, pod("b"))
    await wait_for(api, PODS, "a", phase_is("Running"))
    await wait_for(api, PODS, "b", phase_is("Running"))
    kubelet.exit("default", "a", 4, reason="Killed", message="stopped by the test")
    failed = (await api.get(f"{PODS}/a")).body
    assert failed["status"]["phase"] == "Failed"
    assert _state(failed)["terminated"]["exitCode"] == 4
    assert _state(failed)["terminated"]["reason"] == "Killed"
    assert _state(failed)["terminated"]["message"] == "stopped by the test"
    kubelet.evict("default", "b", message="The node had condition: [DiskPressure]. ")
    evicted = (await api.get(f"{PODS}/b")).body
    assert evicted["status"]["reason"] == "Evicted"
    assert evicted["status"]["message"] == "The node had condition: [DiskPressure]. "
