from datetime import timedelta

from etctl.common import JobConditionType, ReplicaStatus
from etctl.jobs.trainingjob._lifecycle import extra_status, launcher_gate, verdict, workers_ready
from tests.jobs.trainingjob.support import NOW, job_document, parse, pod, state

MEMBERS = {
    "targetWorkers": ["tj-worker-0", "tj-worker-1"],
    "currentWorkers": ["tj-worker-0", "tj-worker-1"],
    "startTime": "2026-01-01T11:59:00Z",
}
WORKERS = [pod("tj-worker-0"), pod("tj-worker-1")]


def test_launcher_waits_for_every_target_to_be_a_running_member() -> None:
    job = parse(job_document(status={**MEMBERS, "currentWorkers": ["tj-worker-0"]}))
    gate = launcher_gate(job, state(job, workers=WORKERS), timeout=600)
    assert not gate.open
    assert gate.reason == "WorkersNotReady"
    assert gate.message.startswith("2 of 2 workers of TrainingJob tj are running members")
    assert gate.fail_at == NOW - timedelta(minutes=1) + timedelta(seconds=600)
    pending = parse(job_document(status=MEMBERS))
    half = launcher_gate(pending, state(pending, workers=[WORKERS[0]]), timeout=600)
    assert not half.open
    assert half.message.startswith("1 of 2 workers")
    ready = parse(job_document(status=MEMBERS))
    assert launcher_gate(ready, state(ready, workers=WORKERS), timeout=600).open
    assert workers_ready(ready, state(ready, workers=WORKERS)) == (True, 2, 2)


def test_no_targets_yet_is_not_ready() -> None:
    job = parse(job_document())
    assert workers_ready(job, state(job)) == (False, 0, 0)


def test_a_vanished_launcher_fails_the_job_unless_always() -> None:
    recorded = {**MEMBERS, "replicaStatuses": {"Launcher": {"active": 1}}}
    job = parse(job_document(status=recorded))
    gate = launcher_gate(job, state(job, workers=WORKERS), timeout=600)
    assert not gate.open
    assert gate.fail_at == NOW
    assert "vanished" in gate.message
    # Gone with every worker: a restart whose record is missing; the job waits for its workers.
    gone = launcher_gate(job, state(job), timeout=600)
    assert gone.reason == "WorkersNotReady"
    document = job_document(status=recorded)
    document["spec"]["etReplicaSpecs"]["launcher"]["restartPolicy"] = "Always"
    always = parse(document)
    again = launcher_gate(always, state(always, workers=WORKERS), timeout=600)
    assert again.open
    assert again.vanished == (
        "launcher tj-launcher of TrainingJob tj vanished; created again: its restartPolicy is "
        "Always"
    )


def test_a_launcher_created_then_gone_before_it_ran_fails_the_job() -> None:
    # Pending pods are not counted, so only the LauncherCreated condition says it existed;
    # et-operator fails the job for a launcher gone after its creation, whatever its phase was.
    created = {
        **MEMBERS,
        "replicaStatuses": {"Launcher": {}},
        "conditions": [{"type": "LauncherCreated", "status": "True", "reason": "PodsCreated"}],
    }
    job = parse(job_document(status=created))
    gate = launcher_gate(job, state(job, workers=WORKERS), timeout=600)
    assert not gate.open
    assert gate.fail_at == NOW
    assert "vanished" in gate.message


def test_a_launcher_only_decided_on_is_created_not_judged_vanished() -> None:
    # Earlier versions wrote LauncherCreated (GateOpened) when the gate opened, before the create:
    # a create cut short by a stop left that record and no pod. It proves nothing.
    decided = {
        **MEMBERS,
        "replicaStatuses": {"Launcher": {}},
        "conditions": [{"type": "LauncherCreated", "status": "True", "reason": "GateOpened"}],
    }
    job = parse(job_document(status=decided))
    gate = launcher_gate(job, state(job, workers=WORKERS), timeout=600)
    assert gate.open
    assert not gate.vanished


def test_after_a_whole_job_restart_the_launcher_waits_again() -> None:
    restarting = {
        **MEMBERS,
        "currentWorkers": [],
        "replicaStatuses": {"Launcher": {"failed": 1}},
        "conditions": [
            {
                "type": "Restarting",
                "status": "True",
                "lastTransitionTime": "2026-01-01T11:59:30Z",
            }
        ],
    }
    job = parse(job_document(status=restarting))
    gate = launcher_gate(job, state(job), timeout=60)
    assert gate.reason == "WorkersNotReady"
    assert gate.fail_at == NOW - timedelta(seconds=30) + timedelta(seconds=60)


def test_a_launcher_deleted_by_a_suspension_did_not_vanish() -> None:
    # The round that resumes the job still reads Suspended True; its workers are being created.
    suspended = {
        **MEMBERS,
        "conditions": [
            {"type": "LauncherCreated", "status": "True", "reason": "PodsCreated"},
            {"type": "Suspended", "status": "True", "reason": "TrainingJobSuspended"},
        ],
    }
    job = parse(job_document(status=suspended))
    pending = [pod("tj-worker-0", "Pending"), pod("tj-worker-1", "Pending")]
    gate = launcher_gate(job, state(job, workers=pending), timeout=600)
    assert not gate.open
    assert gate.reason == "WorkersNotReady"
    assert "vanished" not in gate.message


def test_the_open_gate_is_recorded_even_if_the_wait_never_was() -> None:
    # Whether the round that saw the gate closed got its status written is timing: the open
    # gate asks for LauncherCreated either way, which is what tells a vanished launcher later.
    job = parse(job_document(status=MEMBERS))
    gate = launcher_gate(job, state(job, workers=WORKERS), timeout=600)
    assert gate.open
    assert gate.record


def test_verdict_follows_the_launcher() -> None:
    job = parse(job_document())
    assert verdict(job, state(job)) is None
    assert verdict(job, state(job, launchers=[pod("tj-launcher", "Pending")])) is None
    running = verdict(job, state(job, launchers=[pod("tj-launcher")]))
    assert running is not None
    assert (running.condition, running.reason) == (JobConditionType.RUNNING, "TrainingJobRunning")
    done = verdict(job, state(job, launchers=[pod("tj-launcher", "Succeeded")]))
    assert done is not None
    assert (done.condition, done.reason) == (JobConditionType.SUCCEEDED, "TrainingJobSucceeded")
    failed = verdict(job, state(job, launchers=[pod("tj-launcher", "Failed", exit_code=2)]))
    assert failed is not None
    assert (failed.condition, failed.reason) == (JobConditionType.FAILED, "TrainingJobFailed")
    assert "container main exited with 2" in failed.message
    evicted = verdict(job, state(job, launchers=[pod("tj-launcher", "Failed", reason="Evicted")]))
    assert evicted is not None
    assert evicted.reason == "TrainingJobEvicted"


def test_extra_status() -> None:
    status = {
        **MEMBERS,
        "conditions": [
            {"type": "Created", "status": "True"},
            {"type": "Running", "status": "True"},
            {"type": "Scaling", "status": "False"},
        ],
    }
    job = parse(job_document(status=status))
    selector = "training.kubeflow.org/job-name=tj"
    found = extra_status(job, state(job, statuses={"Worker": ReplicaStatus(selector=selector)}))
    assert found == {"phase": "Running", "replicas": 2, "workerSelector": selector}
    assert extra_status(parse(job_document()), state(parse(job_document()))) == {
        "phase": None,
        "replicas": 0,
        "workerSelector": None,
    }


def test_an_existing_launcher_is_recorded_whatever_the_status_says() -> None:
    # The round that created it may have lost its status write: the pod itself is the record.
    job = parse(job_document(status=MEMBERS))
    found = state(job, workers=WORKERS, launchers=[pod("tj-launcher", "Pending")])
    gate = launcher_gate(job, found, timeout=600)
    assert gate.open
    assert gate.record
