"""The admission webhooks of a job plugin: its kind, and the ScaleIn/ScaleOut kinds it brings.

:func:`setup_job_webhooks` registers, on a webhook server (``manager.webhook_server``, or one that
is never run, for rendering the webhook configurations), a defaulting and a validating webhook for
the plugin's job kind (its :class:`~etctl.common._admission.ModelAdmission` over the plugin's
model and its *validate and default* phase, :meth:`~etctl.common._phases.Phases.validate`: the one
implementation the job controller runs too, with :func:`~etctl.common.validate_job_update` on
updates, then the kind's own ``validate_update`` when it has one) and, when the
plugin brings the scaler kinds, for ScaleIn and ScaleOut (their ``validate_*`` functions, with
:func:`~etctl.common.validate_scaler_update`), once whatever number of plugins bring them.

The rules match every served version of a kind, so a request reaches the webhooks in the version
the client used and is judged with that version's model: an MPIJob created as ``v1`` gets
``v1``'s defaults, as the API server gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from etctl.common._admission import ModelAdmission
from etctl.common._crd import CustomResource
from etctl.common._phases import Phases
from etctl.common._plugin import JobPlugin, ValidatesUpdates, custom_resources
from etctl.common._scaling.api import (
    SCALEIN,
    SCALEOUT,
    validate_scalein,
    validate_scaleout,
    validate_scaler_update,
)
from etctl.common._validation import validate_job_update
from etctl.runtime import WebhookBuilder, WebhookServer, WebhookSpec

__all__ = ["setup_job_webhooks"]

_SCALERS: dict[str, ModelAdmission[Any]] = {
    SCALEIN.name: ModelAdmission(SCALEIN, validate_scalein, update_rules=validate_scaler_update),
    SCALEOUT.name: ModelAdmission(SCALEOUT, validate_scaleout, update_rules=validate_scaler_update),
}


def _register(
    server: WebhookServer, resource: CustomResource, admission: ModelAdmission[Any]
) -> list[WebhookSpec]:
    served = tuple(version.name for version in resource.versions if version.served)
    builder = WebhookBuilder(server, resource.resource(), versions=served)
    return list(builder.with_defaulter(admission).with_validator(admission).build())


def _update_rules(plugin: JobPlugin[Any]) -> Callable[[Any, Any], Sequence[str]]:
    """The generic update rules, then the kind's own (``validate_update``) when it has some."""
    if not isinstance(plugin, ValidatesUpdates):
        return validate_job_update
    own = plugin

    def rules(old: Any, new: Any) -> list[str]:
        return [*validate_job_update(old, new), *own.validate_update(old, new)]

    return rules


def setup_job_webhooks(server: WebhookServer, plugin: JobPlugin[Any]) -> list[WebhookSpec]:
    """Register the webhooks of ``plugin``'s kinds on ``server``; returns their specs.

    A kind whose webhooks are registered already (the scalers of a second elastic plugin) is
    skipped.
    """
    registered = {f"{spec.resource}.{spec.group}" for spec in server.specs}
    job = plugin.resource
    specs = _register(
        server,
        job,
        ModelAdmission(job, Phases(plugin).validate, update_rules=_update_rules(plugin)),
    )
    for resource in custom_resources(plugin):
        admission = _SCALERS.get(resource.name)
        if admission is not None and resource.name not in registered:
            specs += _register(server, resource, admission)
            registered.add(resource.name)
    return specs
