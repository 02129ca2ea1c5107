"""The labels that tie a job's children to it, as kubeflow's ``training.kubeflow.org/*`` keys.

Every child the JobController creates (pods, services, extra objects) carries the job's *selector
labels*: ``training.kubeflow.org/job-name`` and ``training.kubeflow.org/operator-name``. Pods and
services also carry ``replica-type`` (the replica type in lower case, as kubeflow writes it) and
``replica-index``; a plugin may add ``job-role`` (kubeflow's ``master`` marker).

Invariants:

* the selector labels are what claiming uses (orphans are found through the :data:`BY_JOB` cache
  index, :func:`by_job`): an owned child whose labels stop matching them is
  released, an orphan that matches them may be adopted (:mod:`etctl.common._claim`);
* reading a label never trusts it: a missing or malformed ``replica-index`` reads as ``None``
  (kubeflow indexed a slice with it and panicked on a negative value);
* selector strings are canonical (keys sorted), so equal label sets give equal strings and the
  status does not churn.
"""

from __future__ import annotations

from collections.abc import Mapping

from etctl.runtime import ObjectView, objects

__all__ = [
    "BY_JOB",
    "JOB_NAME",
    "JOB_ROLE",
    "OPERATOR_NAME",
    "REPLICA_INDEX",
    "REPLICA_TYPE",
    "by_job",
    "job_selector",
    "matches",
    "replica_index_of",
    "replica_labels",
    "replica_selector",
    "replica_type_of",
    "selector_string",
]

_PREFIX = "training.kubeflow.org/"
OPERATOR_NAME = _PREFIX + "operator-name"
"""The operator that manages the object (``JobSettings.operator_name``)."""
JOB_NAME = _PREFIX + "job-name"
"""The name of the job the object belongs to."""
REPLICA_TYPE = _PREFIX + "replica-type"
"""The replica type of a pod or service, in lower case (``worker``)."""
REPLICA_INDEX = _PREFIX + "replica-index"
"""The index of a pod or service within its replica type (``0``, ``1``...)."""
JOB_ROLE = _PREFIX + "job-role"
"""Set by plugins on the pod that leads the job (kubeflow's ``master``)."""
BY_JOB = "etctl.common/job-name"
"""The name of the cache index :func:`by_job` computes (reserved for it)."""


def job_selector(job_name: str, operator_name: str) -> dict[str, str]:
    """The labels every child of the job carries, and that claiming selects on."""
    return {OPERATOR_NAME: operator_name, JOB_NAME: job_name}


def replica_selector(job_name: str, operator_name: str, replica_type: str) -> dict[str, str]:
    """The labels of every pod of one replica type of the job."""
    return {**job_selector(job_name, operator_name), REPLICA_TYPE: replica_type.lower()}


def replica_labels(
    job_name: str, operator_name: str, replica_type: str, index: int
) -> dict[str, str]:
    """The labels of the pod (and service) of one slot."""
    return {
        **replica_selector(job_name, operator_name, replica_type),
        REPLICA_INDEX: str(index),
    }


def by_job(obj: ObjectView) -> tuple[str, ...]:
    """Index function: ``<namespace>/<job-name label>`` of objects that carry the label.

    Claiming looks orphans up by it instead of scanning a namespace with a label selector.
    """
    job = objects.labels(obj).get(JOB_NAME)
    return (f"{objects.namespace(obj)}/{job}",) if job else ()


def selector_string(labels: Mapping[str, str]) -> str:
    """``k1=v1,k2=v2`` with the keys sorted: the form status ``selector`` fields carry."""
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def matches(obj: ObjectView, selector: Mapping[str, str]) -> bool:
    """True when ``obj`` carries every label of ``selector`` with the same value."""
    have = objects.labels(obj)
    return all(have.get(key) == value for key, value in selector.items())


def replica_type_of(obj: ObjectView) -> str | None:
    """The (lower-case) replica type label of ``obj``, or None."""
    value = objects.labels(obj).get(REPLICA_TYPE)
    return value or None


def replica_index_of(obj: ObjectView) -> int | None:
    """The replica index label of ``obj`` as a non-negative integer, or None when unusable."""
    value = objects.labels(obj).get(REPLICA_INDEX)
    if not isinstance(value, str) or not (value.isascii() and value.isdigit()):
        return None
    return int(value)
