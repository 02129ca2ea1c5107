"""The model of a simple job kind: replica specs and a run policy, with generic checks.

A kind whose spec is replica specs by type plus kubeflow's ``runPolicy`` (a SimpleJob, a
PyTorchJob) subclasses :class:`JobModel` and declares its replica types; everything else follows:

* ``spec.replicaSpecs`` (:class:`JobSpec`; a subclass of it may give the field another JSON name
  with ``alias``) and ``spec.runPolicy``, and the shared :class:`~etctl.common.JobStatus`;
* replica types are matched case-insensitively and spelled as declared (kubeflow accepts
  ``worker`` for ``Worker``); :meth:`JobModel.replica_specs` lists them in the declared order,
  which is the order pods are created in;
* :meth:`JobModel.problems`, the generic half of the *validate and default* phase: the name leaves
  room for the longest pod name, every type is known, the required ones are there, a single type
  has one pod, each spec and the run policy are valid
  (:mod:`etctl.common._validation`). The controller and the admission webhook both run it before
  the kind's own ``validate``.

:func:`job_resource` makes the kind's CRD from the model: group, version and kind from its
``apiVersion`` and ``kind`` defaults, the State and Age columns.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from etctl.common._api import JobStatus, ReplicaSpec, RunPolicy, spelled_as
from etctl.common._crd import CRDVersion, CustomResource, PrinterColumn
from etctl.common._meta import KubeObjectModel, ValueModel
from etctl.common._validation import validate_name, validate_replica_spec, validate_run_policy
from etctl.errors import ConfigError

__all__ = ["JOB_COLUMNS", "JobModel", "JobSpec", "job_resource"]


class JobSpec(ValueModel):
    """The spec of a simple job kind: replica specs by type, and the run policy."""

    replica_specs: dict[str, ReplicaSpec] = Field(default_factory=dict)
    """Replica specs by replica type."""
    run_policy: RunPolicy = Field(default_factory=RunPolicy)
    """Cleanup, time limits, retries, gang scheduling and suspension."""


def _specs_alias(spec: type[BaseModel]) -> str:
    info = spec.model_fields["replica_specs"]
    return info.validation_alias if isinstance(info.validation_alias, str) else info.alias or ""


class JobModel(KubeObjectModel):
    """A simple job kind's model (see the module docstring).

    Class attributes:
        replica_types: the replica types, in the order their pods are created.
        required_types: the types every job must have.
        single_types: the types of one pod at most.
    """

    replica_types: ClassVar[tuple[str, ...]] = ()
    required_types: ClassVar[tuple[str, ...]] = ()
    single_types: ClassVar[tuple[str, ...]] = ()

    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)

    @model_validator(mode="before")
    @classmethod
    def _canonical_types(cls, data: Any) -> Any:
        """Spell replica types as declared, whatever their case (two spellings of one: an error)."""
        spec = data.get("spec") if isinstance(data, dict) else None
        spec_model = cls.model_fields["spec"].annotation
        if not isinstance(spec, dict) or not isinstance(spec_model, type):
            return data
        alias = _specs_alias(spec_model)
        key = alias if alias in spec else "replica_specs"
        specs = spec.get(key)
        if not isinstance(specs, dict):
            return data
        return {**data, "spec": {**spec, key: spelled_as(specs, cls.replica_types)}}

    def replica_specs(self) -> dict[str, ReplicaSpec]:
        """The declared replica types the job has, in creation order."""
        specs = self.spec.replica_specs
        return {rtype: specs[rtype] for rtype in self.replica_types if rtype in specs}

    def run_policy(self) -> RunPolicy:
        """The run policy as written."""
        return self.spec.run_policy

    def problems(self) -> list[str]:
        """What makes the job impossible to run, generic to every simple kind."""
        specs = self.spec.replica_specs
        path = f"spec.{_specs_alias(type(self.spec)) or 'replicaSpecs'}"
        suffixes = [
            f"-{rtype.lower()}-{max(spec.replicas - 1, 0)}" for rtype, spec in specs.items()
        ]
        problems = validate_name(
            self.metadata.name, longest_suffix=max(suffixes, key=len, default="")
        )
        kind = self.kind
        for rtype in self.required_types:
            if rtype not in specs:
                problems.append(f"{path}.{rtype}: missing; a {kind} needs {rtype.lower()}s")
        known = ", ".join(self.replica_types)
        for rtype, spec in specs.items():
            where = f"{path}.{rtype}"
            if rtype not in self.replica_types:
                problems.append(f"{where}: unknown replica type; use {known}")
                continue
            maximum = 1 if rtype in self.single_types else None
            problems.extend(validate_replica_spec(spec, path=where, maximum=maximum))
        problems.extend(validate_run_policy(self.spec.run_policy))
        return problems


JOB_COLUMNS = (
    PrinterColumn(
        name="State",
        json_path=".status.conditions[-1:].type",
        description="The latest condition of the job.",
    ),
    PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date"),
)
"""The printer columns of a job kind by default: its latest condition and its age."""


def _default(model: type[BaseModel], field: str) -> str:
    info = model.model_fields.get(field)
    value = info.default if info is not None else None
    if not isinstance(value, str) or not value:
        msg = f"{model.__name__}: {field} needs a default (its Literal value)"
        raise ConfigError(msg)
    return value


def job_resource(
    model: type[JobModel],
    *,
    plural: str,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    printer_columns: tuple[PrinterColumn, ...] = JOB_COLUMNS,
) -> CustomResource:
    """The CRD of a one-version kind whose model is ``model`` (see the module docstring).

    Raises:
        ConfigError: the model has no ``apiVersion`` or ``kind`` default, or a name is invalid.
    """
    group, _, version = _default(model, "api_version").rpartition("/")
    return CustomResource(
        group=group,
        kind=_default(model, "kind"),
        plural=plural,
        short_names=short_names,
        categories=categories,
        versions=(CRDVersion(name=version, model=model, printer_columns=printer_columns),),
    )
