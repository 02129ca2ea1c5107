"""The admission webhooks of a job plugin: its kind, and the ScaleIn/ScaleOut kinds it brings.

:func:`setup_job_webhooks` registers, on a webhook server (``manager.webhook_server``, or one that
is never run, for rendering the webhook configurations), a defaulting and a validating webhook for
the plugin's job kind (its :class:`~etctl.common._admission.ModelAdmission` over the plugin's
model and its *validate and default* phase, :meth:`~etctl.common._phases.Phases.validate`: the one
implementation the job controller runs too, with :func:`~etctl.common.validate_job_update` on
updates, then the kind's own ``validate_update`` when it has one) and, when the
plugin brings the scaler kinds, for ScaleIn and ScaleOut (their ``validate_*`` functions, with
:func:`~etctl.common.validate_scaler_update`), once whatever number of plugins bring them.

Given the operator's cache (:class:`ScaledJobs`), the scalers' validation also looks up the job a
scaler names: a job whose members are fixed (a kind's static job, ``MemberPolicy.fixed``) refuses
it at the door, on ``spec.selector.name``. A job the cache does not hold (not created yet, or
outside the namespaces watched) is no reason to refuse: the scaling controller judges the scaler
once it runs, with the same ``fixed`` (reason ``JobNotElastic``).

The rules match every served version of a kind, so a request reaches the webhooks in the version
the client used and is judged with that version's model: an MPIJob created as ``v1`` gets
``v1``'s defaults, as the API server gave it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from etctl.common._admission import ModelAdmission
from etctl.common._crd import CustomResource
from etctl.common._phases import Phases
from etctl.common._plugin import (
    JobPlugin,
    ScalesElastically,
    ValidatesUpdates,
    custom_resources,
)
from etctl.common._scaling.api import (
    SCALEIN,
    SCALEOUT,
    ScaleIn,
    ScaleOut,
    validate_scalein,
    validate_scaleout,
    validate_scaler_update,
)
from etctl.common._validation import validate_job_update
from etctl.runtime import CacheReader, WebhookBuilder, WebhookServer, WebhookSpec, objects

__all__ = ["ScaledJobs", "setup_job_webhooks"]


class ScaledJobs:
    """The jobs scalers name, as the operator's cache holds them, of every elastic kind served.

    One per webhook server: every :func:`setup_job_webhooks` call on that server gets the same
    one, and adds its plugin when it is elastic.

    Args:
        cache: the operator's informer cache (it holds every served kind's jobs).
    """

    def __init__(self, cache: CacheReader) -> None:
        self._cache = cache
        self._kinds: list[tuple[JobPlugin[Any], ScalesElastically[Any]]] = []

    def add(self, plugin: JobPlugin[Any]) -> None:
        """Look up the jobs of ``plugin``'s kind too (a kind that is not elastic is skipped)."""
        if isinstance(plugin, ScalesElastically):
            self._kinds.append((plugin, plugin))

    def problems(self, scaler: ScaleIn | ScaleOut) -> list[str]:
        """Why ``scaler`` can never resize the job it names, as known now (none: unknown)."""
        selector = scaler.spec.selector
        for plugin, elastic in self._kinds:
            jobs = plugin.resource.resource()
            if not selector.names(jobs):
                continue
            try:
                raw = self._cache.get(jobs, selector.name, namespace=scaler.metadata.namespace)
                job = plugin.model.model_validate(raw) if raw is not None else None
            except (LookupError, ValueError, ValidationError):
                return []  # not watched, or not a job the controller could run: it judges
            if job is None or objects.is_terminating(raw or {}):
                return []
            fixed = elastic.member_policy(job).fixed
            if fixed is None:
                return []
            return [
                f"spec.selector.name: {jobs.kind} {selector.name} {fixed}; no scaler resizes it"
            ]
        return []


def _scalers(jobs: ScaledJobs | None) -> dict[str, ModelAdmission[Any]]:
    """The scalers' admissions: their own checks, then the job they name (given ``jobs``)."""

    def checked(own: Callable[[Any], list[str]]) -> Callable[[Any], list[str]]:
        if jobs is None:
            return own
        lookup = jobs

        def check(scaler: Any) -> list[str]:
            return own(scaler) or lookup.problems(scaler)

        return check

    rules = validate_scaler_update
    return {
        SCALEIN.name: ModelAdmission(SCALEIN, checked(validate_scalein), update_rules=rules),
        SCALEOUT.name: ModelAdmission(SCALEOUT, checked(validate_scaleout), update_rules=rules),
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


def setup_job_webhooks(
    server: WebhookServer, plugin: JobPlugin[Any], *, jobs: ScaledJobs | None = None
) -> list[WebhookSpec]:
    """Register the webhooks of ``plugin``'s kinds on ``server``; returns their specs.

    A kind whose webhooks are registered already (the scalers of a second elastic plugin) is
    skipped. ``jobs`` (the same for every plugin on ``server``) lets the scalers' validation look
    up the job a scaler names; without it, a scaler is judged on its own.
    """
    if jobs is not None:
        jobs.add(plugin)
    scalers = _scalers(jobs)
    registered = {f"{spec.resource}.{spec.group}" for spec in server.specs}
    job = plugin.resource
    specs = _register(
        server,
        job,
        ModelAdmission(job, Phases(plugin).validate, update_rules=_update_rules(plugin)),
    )
    for resource in custom_resources(plugin):
        admission = scalers.get(resource.name)
        if admission is not None and resource.name not in registered:
            specs += _register(server, resource, admission)
            registered.add(resource.name)
    return specs
