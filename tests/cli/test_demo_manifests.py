"""The demo's objects are et-operator manifests that the schemas and the controllers accept."""

from __future__ import annotations

from etctl.cli._demo_manifests import (
    JOB,
    MAX_WORKERS,
    MIN_WORKERS,
    SCALE_IN_BY,
    SCALE_OUT_BY,
    WORKERS,
    scalein_manifest,
    scaleout_manifest,
    trainingjob_manifest,
)
from etctl.common import SCALEIN, SCALEOUT, ScaleIn, ScaleOut, validate_scalein, validate_scaleout
from etctl.jobs.trainingjob._api import TRAININGJOB, TrainingJob, validate_trainingjob
from tests.schema_support import conformance_problems, crd_schema


def test_the_trainingjob_is_valid_and_elastic() -> None:
    document = trainingjob_manifest()
    assert conformance_problems(document, crd_schema(TRAININGJOB)) == []
    job = TrainingJob.model_validate(document)
    assert validate_trainingjob(job) == []
    worker = job.spec.et_replica_specs.worker
    assert worker is not None
    assert (worker.replicas, worker.min_replicas, worker.max_replicas) == (
        WORKERS,
        MIN_WORKERS,
        MAX_WORKERS,
    )
    # Evicted workers are replaced: the worker restart policy says so.
    assert worker.restart_policy == "OnFailure"
    # Every size the demo goes through stays within the bounds, or its scalers would be refused.
    assert WORKERS + SCALE_OUT_BY <= MAX_WORKERS
    assert WORKERS + SCALE_OUT_BY - SCALE_IN_BY >= MIN_WORKERS


def test_the_scalers_name_the_job_and_are_valid() -> None:
    out = scaleout_manifest(2)
    assert conformance_problems(out, crd_schema(SCALEOUT)) == []
    assert validate_scaleout(ScaleOut.model_validate(out)) == []
    assert out["spec"] == {"selector": {"name": JOB}, "toAdd": {"count": 2}}
    into = scalein_manifest(1)
    assert conformance_problems(into, crd_schema(SCALEIN)) == []
    assert validate_scalein(ScaleIn.model_validate(into)) == []
    assert into["spec"] == {"selector": {"name": JOB}, "toDelete": {"count": 1}}
