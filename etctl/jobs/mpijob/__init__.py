"""MPIJob (``kubeflow.org`` v2beta1 and v1): elastic MPI and Horovod jobs, mpi-operator compatible.

:mod:`etctl.jobs.mpijob._api` holds the API models and the CRD (both versions, one schema),
:mod:`etctl.jobs.mpijob._validation` mpi-operator's rules, and
:mod:`etctl.jobs.mpijob._plugin` the plugin the generic JobController runs, registered under the
``etctl.jobs`` entry point as ``mpijob``. ``docs/jobs/mpijob.md`` is the user's guide.
"""

from etctl.jobs.mpijob._api import (
    MPIJOB,
    MPIJOBS,
    MPIJob,
    MPIJobSpec,
    MPIJobV1,
    MPIReplicaType,
)
from etctl.jobs.mpijob._plugin import MPIJobPlugin
from etctl.jobs.mpijob._validation import validate_mpijob

__all__ = [
    "MPIJOB",
    "MPIJOBS",
    "MPIJob",
    "MPIJobPlugin",
    "MPIJobSpec",
    "MPIJobV1",
    "MPIReplicaType",
    "validate_mpijob",
]
