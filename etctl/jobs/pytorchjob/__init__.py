"""PyTorchJob (``kubeflow.org/v1``): distributed and elastic PyTorch, training-operator compatible.

:mod:`etctl.jobs.pytorchjob._api` holds the API models and the CRD, :mod:`._defaults`
training-operator's defaults, :mod:`._validation` its rules and torchrun's, :mod:`._env` the
environment torchrun reads, :mod:`._rendezvous` the rendezvous endpoint and its Service,
:mod:`._hpa` the HorizontalPodAutoscaler of ``elasticPolicy.metrics``, :mod:`._pods` what each pod
gets, :mod:`._children` its Services and HPA, :mod:`._world` its elastic members, bounds, restart
budget and status, :mod:`._verdict` its status rules, and :mod:`._plugin` the plugin the generic
JobController runs, registered under the ``etctl.jobs`` entry point as ``pytorchjob``.
``docs/jobs/pytorchjob.md`` is the user's guide.
"""

from etctl.jobs.pytorchjob._api import (
    API_VERSION,
    CUSTOM_RESOURCES,
    GROUP,
    KIND,
    PYTORCHJOB,
    PYTORCHJOBS,
    TRAINING_OPERATOR,
    VERSION,
    ElasticPolicy,
    PyTorchJob,
    PyTorchJobSpec,
    PyTorchJobStatus,
    PyTorchReplicaType,
    RDZVBackend,
    RDZVConf,
)
from etctl.jobs.pytorchjob._defaults import with_defaults
from etctl.jobs.pytorchjob._hpa import desired_hpa
from etctl.jobs.pytorchjob._metrics import MetricSpec
from etctl.jobs.pytorchjob._plugin import PyTorchJobPlugin
from etctl.jobs.pytorchjob._validation import validate_pytorchjob, validate_update

__all__ = [
    "API_VERSION",
    "CUSTOM_RESOURCES",
    "ElasticPolicy",
    "GROUP",
    "KIND",
    "MetricSpec",
    "PYTORCHJOB",
    "PYTORCHJOBS",
    "PyTorchJob",
    "PyTorchJobPlugin",
    "PyTorchJobSpec",
    "PyTorchJobStatus",
    "PyTorchReplicaType",
    "RDZVBackend",
    "RDZVConf",
    "TRAINING_OPERATOR",
    "VERSION",
    "desired_hpa",
    "validate_pytorchjob",
    "validate_update",
    "with_defaults",
]
