"""TrainingJob as the scaling machinery reads it, through its elastic protocol."""

from typing import Any

from etctl.common import Capabilities, ExecTarget, JobState
from etctl.common._scaling import elastic
from etctl.jobs.launcher import PUSHED_ANNOTATION, digest, hostfile
from etctl.jobs.trainingjob import TRAININGJOB, TrainingJob, TrainingJobPlugin
from etctl.jobs.trainingjob._scaling import job_slots
from tests.jobs.trainingjob.support import job_document, parse, pod, state

CAPABILITIES = Capabilities.of(TrainingJobPlugin())


def read_elasticity(job: TrainingJob, seen: JobState[Any]) -> elastic.Elasticity:
    return elastic.read_elasticity(CAPABILITIES, TRAININGJOB, job, seen)


MEMBERS = {"targetWorkers": ["tj-worker-0", "tj-worker-1"], "currentWorkers": ["tj-worker-0"]}


def test_bounds_names_and_desired_count() -> None:
    job = parse(job_document(replicas=3, worker={"minReplicas": 2, "maxReplicas": 6}))
    view = read_elasticity(job, state(job))
    assert (view.replicas, view.min_replicas, view.max_replicas) == (3, 2, 6)
    assert view.member_prefix == "tj-worker-"
    assert view.replicas_path == ("spec", "etReplicaSpecs", "worker", "replicas")
    assert view.replica_type == "Worker"


def test_not_ready_and_delivered_without_a_launcher() -> None:
    job = parse(job_document(status=MEMBERS))
    view = read_elasticity(job, state(job))
    assert not view.ready
    assert view.executor is None
    assert view.membership_delivered


def test_a_starting_launcher_has_not_received_the_membership() -> None:
    job = parse(job_document(status=MEMBERS))
    view = read_elasticity(job, state(job, launchers=[pod("tj-launcher", "Pending")]))
    assert not view.ready
    assert not view.membership_delivered


def test_delivery_is_the_pushed_digest_of_the_recorded_members() -> None:
    job = parse(job_document(status=MEMBERS, slotsPerWorker=2))
    assert job_slots(job) == 2
    pushed = {PUSHED_ANNOTATION: digest(hostfile(["tj-worker-0"], 2))}
    view = read_elasticity(job, state(job, launchers=[pod("tj-launcher", annotations=pushed)]))
    assert view.ready
    assert view.executor == ExecTarget("tj-launcher", "main")
    assert view.membership_delivered
    stale = {PUSHED_ANNOTATION: digest(hostfile(["tj-worker-0", "tj-worker-1"], 2))}
    view = read_elasticity(job, state(job, launchers=[pod("tj-launcher", annotations=stale)]))
    assert not view.membership_delivered


def test_failed_workers_are_named_for_replacement() -> None:
    job = parse(job_document(status=MEMBERS, worker={"restartPolicy": "OnFailure"}))
    workers = [pod("tj-worker-0", "Failed"), pod("tj-worker-1")]
    assert read_elasticity(job, state(job, workers=workers)).replace == {"tj-worker-0"}


def test_a_suspended_or_finished_job_does_not_scale() -> None:
    launcher = [pod("tj-launcher")]
    suspended = parse(
        job_document(
            status=MEMBERS, annotations={"job-supervisor.kube-ai.io/job-suspended": "true"}
        )
    )
    assert not read_elasticity(suspended, state(suspended, launchers=launcher)).ready
    done = parse(
        job_document(status={**MEMBERS, "conditions": [{"type": "Succeeded", "status": "True"}]})
    )
    assert not read_elasticity(done, state(done, launchers=launcher)).ready


def test_a_suspended_job_replaces_nobody_and_keeps_its_members() -> None:
    # The suspension deletes the workers before the launcher: none of them vanished.
    annotations = {"job-supervisor.kube-ai.io/job-suspended": "true"}
    members = {**MEMBERS, "currentWorkers": ["tj-worker-0", "tj-worker-1"]}
    job = parse(job_document(status=members, annotations=annotations))
    view = read_elasticity(job, state(job, launchers=[pod("tj-launcher")]))
    assert view.replace == frozenset()
    assert not view.membership_in_use
    running = parse(job_document(status=members))
    gone = read_elasticity(running, state(running, launchers=[pod("tj-launcher")]))
    assert gone.replace == {"tj-worker-0", "tj-worker-1"}
