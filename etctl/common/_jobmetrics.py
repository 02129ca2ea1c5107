"""Job metrics of the generic JobController, on the runtime's registry (served at ``/metrics``).

kubeflow's ``training_operator_jobs_*_total{job_namespace, framework}`` counters, renamed under
etctl's prefix and labelled ``namespace`` and ``kind``, plus the reconcile latency per kind. The
counters move once per job lifecycle transition, when the status write that records it succeeds:

* ``etctl_jobs_created_total``: the Created condition was first written;
* ``etctl_jobs_successful_total`` / ``etctl_jobs_failed_total``: Succeeded / Failed was written;
* ``etctl_jobs_restarted_total``: restarts written to the status (one per pod the controller
  recreated after a failure; a whole-job restart counts one).

A write that conflicts and is retried never counts twice, and a reconcile that changes nothing
counts nothing.
"""

from __future__ import annotations

from prometheus_client.metrics import Counter, Histogram

from etctl.runtime import REGISTRY

__all__ = [
    "JOBS_CREATED",
    "JOBS_FAILED",
    "JOBS_RESTARTED",
    "JOBS_SUCCESSFUL",
    "JOB_RECONCILE_TIME",
]

JOBS_CREATED = Counter(
    "etctl_jobs_created_total",
    "Jobs the controller started handling (Created condition written), by namespace and kind",
    ["namespace", "kind"],
    registry=REGISTRY,
)
JOBS_SUCCESSFUL = Counter(
    "etctl_jobs_successful_total",
    "Jobs that succeeded (Succeeded condition written), by namespace and kind",
    ["namespace", "kind"],
    registry=REGISTRY,
)
JOBS_FAILED = Counter(
    "etctl_jobs_failed_total",
    "Jobs that failed (Failed condition written), by namespace and kind",
    ["namespace", "kind"],
    registry=REGISTRY,
)
JOBS_RESTARTED = Counter(
    "etctl_jobs_restarted_total",
    "Restarts of failed pods (or of whole jobs) the controller performed, by namespace and kind",
    ["namespace", "kind"],
    registry=REGISTRY,
)
JOB_RECONCILE_TIME = Histogram(
    "etctl_job_reconcile_duration_seconds",
    "Time one JobController reconcile takes, by job kind",
    ["kind"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    registry=REGISTRY,
)
