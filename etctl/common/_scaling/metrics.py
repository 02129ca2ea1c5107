"""Metrics of elastic scaling, on the runtime registry the manager serves at ``/metrics``.

* ``etctl_scale_operations_total{kind, direction, result}``: scalers finished, by job kind,
  direction (``out`` / ``in``) and result (``succeeded`` / ``failed``); counted once, when the
  finished status is written.
* ``etctl_scale_exec_duration_seconds{kind, purpose}``: time of the execs the machinery runs in
  a job's pods: ``script`` (a scaler's script) and ``hostfile`` (the membership pusher), whatever
  their outcome.
* ``etctl_worker_replacements_total{kind}``: workers replaced under a new name.
"""

from __future__ import annotations

from prometheus_client.metrics import Counter, Histogram

from etctl.runtime import REGISTRY

__all__ = ["EXEC_DURATION", "SCALE_OPERATIONS", "WORKER_REPLACEMENTS"]

SCALE_OPERATIONS = Counter(
    "etctl_scale_operations_total",
    "Scale operations finished, by job kind, direction and result",
    ["kind", "direction", "result"],
    registry=REGISTRY,
)
EXEC_DURATION = Histogram(
    "etctl_scale_exec_duration_seconds",
    "Duration of execs in job pods run by the scaling machinery",
    ["kind", "purpose"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0),
    registry=REGISTRY,
)
WORKER_REPLACEMENTS = Counter(
    "etctl_worker_replacements_total",
    "Workers replaced under a new name after they failed or vanished",
    ["kind"],
    registry=REGISTRY,
)
