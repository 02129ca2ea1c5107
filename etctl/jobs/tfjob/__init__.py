"""TFJob (``kubeflow.org/v1``): distributed TensorFlow with PS, Worker, Chief, Master, Evaluator.

:mod:`etctl.jobs.tfjob._api` holds the API models, CRD description and validation;
:mod:`etctl.jobs.tfjob._tfconfig` the ``TF_CONFIG`` document every pod gets;
:mod:`etctl.jobs.tfjob._plugin` the plugin the generic JobController runs, registered under the
``etctl.jobs`` entry point as ``tfjob``.
"""

from etctl.jobs.tfjob._api import TFJOB, TFJOBS, TFJob, TFJobSpec, TFReplicaType, validate_tfjob
from etctl.jobs.tfjob._plugin import TFJobPlugin

__all__ = [
    "TFJOB",
    "TFJOBS",
    "TFJob",
    "TFJobPlugin",
    "TFJobSpec",
    "TFReplicaType",
    "validate_tfjob",
]
