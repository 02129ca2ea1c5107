"""MPIJob (``kubeflow.org`` v2beta1 and v1): elastic MPI and Horovod jobs, mpi-operator compatible.

:mod:`etctl.jobs.mpijob._api` holds the API models and the CRD (both versions, one schema),
:mod:`etctl.jobs.mpijob._validation` mpi-operator's rules, and
:mod:`etctl.jobs.mpijob._plugin` the plugin the generic JobController runs, registered under the
``etctl.jobs`` entry point as ``mpijob``. ``docs/jobs/mpijob.md`` is the user's guide.
"""

from etctl.common import CustomResource
from etctl.jobs.mpijob._api import (
    API_VERSION,
    API_VERSION_V1,
    GROUP,
    KIND,
    MPI_OPERATOR,
    MPIJOB,
    MPIJOBS,
    MULTIKUEUE,
    V1,
    V2BETA1,
    ElasticPolicy,
    LauncherAttachMode,
    LauncherCreationPolicy,
    MPIImplementation,
    MPIJob,
    MPIJobSpec,
    MPIJobStatus,
    MPIJobV1,
    MPIReplicaType,
    parse_mpijob,
)
from etctl.jobs.mpijob._plugin import MPIJobPlugin
from etctl.jobs.mpijob._validation import validate_mpijob

__all__ = [
    "API_VERSION",
    "API_VERSION_V1",
    "CUSTOM_RESOURCES",
    "ElasticPolicy",
    "GROUP",
    "KIND",
    "LauncherAttachMode",
    "LauncherCreationPolicy",
    "MPIImplementation",
    "MPIJOB",
    "MPIJOBS",
    "MPIJob",
    "MPIJobPlugin",
    "MPIJobSpec",
    "MPIJobStatus",
    "MPIJobV1",
    "MPIReplicaType",
    "MPI_OPERATOR",
    "MULTIKUEUE",
    "V1",
    "V2BETA1",
    "parse_mpijob",
    "validate_mpijob",
]

CUSTOM_RESOURCES: tuple[CustomResource, ...] = (MPIJOB,)
"""The CRD of the MPIJob kind (ScaleIn and ScaleOut come with every elastic kind)."""
