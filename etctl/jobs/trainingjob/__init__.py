"""TrainingJob (``kai.alibabacloud.com/v1alpha1``): elastic Horovod with ScaleIn and ScaleOut.

The API is et-operator's, so its manifests apply unchanged: :mod:`etctl.jobs.trainingjob._api`
holds the TrainingJob; the ScaleIn and ScaleOut requests are shared by every elastic kind
(:mod:`etctl.common._scaling.api`) and re-exported here.
"""

from etctl.common import (
    SCALEIN,
    SCALEINS,
    SCALEOUT,
    SCALEOUTS,
    CustomResource,
    ScaleIn,
    ScaleOut,
    validate_scalein,
    validate_scaleout,
)
from etctl.jobs.trainingjob._api import (
    API_VERSION,
    GROUP,
    TRAININGJOB,
    TRAININGJOBS,
    VERSION,
    TrainingJob,
    TrainingJobSpec,
    TrainingJobStatus,
    validate_trainingjob,
)
from etctl.jobs.trainingjob._plugin import TrainingJobPlugin

__all__ = [
    "API_VERSION",
    "CUSTOM_RESOURCES",
    "GROUP",
    "SCALEIN",
    "SCALEINS",
    "SCALEOUT",
    "SCALEOUTS",
    "ScaleIn",
    "ScaleOut",
    "TRAININGJOB",
    "TRAININGJOBS",
    "TrainingJob",
    "TrainingJobPlugin",
    "TrainingJobSpec",
    "TrainingJobStatus",
    "VERSION",
    "validate_scalein",
    "validate_scaleout",
    "validate_trainingjob",
]

CUSTOM_RESOURCES: tuple[CustomResource, ...] = (TRAININGJOB, SCALEIN, SCALEOUT)
"""The CRDs of this job kind."""
