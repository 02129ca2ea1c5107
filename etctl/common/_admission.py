"""A kind's validation and defaults at the API server's door: a thin adapter over its own code.

:class:`ModelAdmission` is a :class:`~etctl.runtime.Validator` and
:class:`~etctl.runtime.Defaulter` for one custom resource, built from what the kind already has,
so nothing is written twice:

* **defaults** are the model's: the object is parsed with the model of the version it arrives in
  (the API server already applied the schema's defaults at that version) and its ``spec`` is
  written back as the model reads it, so what the defaults the schema cannot express (a
  lower-case replica type renamed to its canonical spelling, say) and the ones it can agree.
  Fields the model does not know are kept; nothing else is touched.
* **validation** is the kind's own: a manifest that does not parse is refused with the parse
  problems, then with ``validate`` (a plugin's *validate and default* phase,
  :meth:`~etctl.common._phases.Phases.validate`, or the scalers' functions): the very checks the
  controller runs, whose problems read ``<field path>: <what is wrong>; <what to do>``. They are
  answered as kube-apiserver answers: 422 ``Invalid``, one ``details.causes`` entry per field
  (the path as the CRD's schema names it, which is also how the API server's schema errors name
  it).
* **updates** are judged by the same checks, ratcheted: a problem the old object had already is
  not held against the update (a job created before a rule existed can still be labelled, or
  have its finalizers removed), and an object being deleted is never refused. On top come the
  kind's update rules (``update_rules``): what may not change once set, or while the object
  runs.

The controllers keep validating, since a webhook may be absent or run with ``failurePolicy:
Ignore``: nothing depends on the webhook for safety.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import BaseModel, ValidationError

from etctl.common._crd import CustomResource
from etctl.common._validation import parse_problems
from etctl.runtime import FieldError, KubeObject, invalid, objects

if TYPE_CHECKING:
    from etctl.runtime import AdmissionRequest

__all__ = ["ModelAdmission", "field_error"]

ModelT = TypeVar("ModelT", bound=BaseModel)

_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*(\[[^\]]*\])*(\.[A-Za-z0-9_\-]+(\[[^\]]*\])*)*")


def field_error(problem: str, *, type_: str = "") -> FieldError:
    """A problem line (``<field path>: <what is wrong>``) as a field error.

    A problem that names no path is reported on no field. ``missing`` problems are
    ``FieldValueRequired``, others ``FieldValueInvalid`` unless ``type_`` says otherwise.
    """
    path, sep, detail = problem.partition(": ")
    if not sep or not _PATH.fullmatch(path):
        return FieldError("", problem, type_ or "FieldValueInvalid")
    kind = type_ or ("FieldValueRequired" if detail.startswith("missing") else "FieldValueInvalid")
    return FieldError(path, detail, kind)


def _overlay(sent: Any, model: Any) -> Any:
    """``model``'s reading of ``sent``, keeping what the model does not know.

    Keys the model dropped are kept unless another spelling of them survived (a replica type the
    model renamed to its canonical case).
    """
    if not isinstance(sent, dict) or not isinstance(model, dict):
        return model
    out = {key: _overlay(sent.get(key), value) for key, value in model.items()}
    folded = {str(key).casefold() for key in model}
    for key, value in sent.items():
        if key not in out and str(key).casefold() not in folded:
            out[key] = value
    return out


class ModelAdmission(Generic[ModelT]):
    """Defaults and validation of one custom resource, from its models and checks.

    Args:
        resource: the custom resource (its versions' models parse the objects).
        validate: the kind's checks of a parsed object, as problem lines.
        update_rules: the kind's rules on an update (old, new), as problem lines.
        name_of: how an object is named in the 422's message (its ``metadata.name``).
    """

    def __init__(
        self,
        resource: CustomResource,
        validate: Callable[[ModelT], Sequence[str]],
        *,
        update_rules: Callable[[ModelT, ModelT], Sequence[str]] | None = None,
    ) -> None:
        self.resource = resource
        self._validate = validate
        self._update_rules = update_rules
        self._models = {version.name: version.model for version in resource.versions}

    def _model(self, request: AdmissionRequest) -> type[BaseModel]:
        model = self._models.get(request.kind.version)
        return model if model is not None else self.resource.storage_version.model

    def _parse(self, obj: KubeObject, request: AdmissionRequest) -> ModelT | list[str]:
        try:
            return cast("ModelT", self._model(request).model_validate(obj))
        except ValidationError as error:
            return parse_problems(error)

    def _problems(
        self, obj: KubeObject, request: AdmissionRequest
    ) -> tuple[ModelT | None, list[str]]:
        parsed = self._parse(obj, request)
        if isinstance(parsed, list):
            return None, parsed
        return parsed, list(self._validate(parsed))

    def _refuse(self, obj: KubeObject, errors: Sequence[FieldError]) -> None:
        if errors:
            raise invalid(
                self.resource.kind, objects.name(obj), list(errors), group=self.resource.group
            )

    # -- Defaulter

    async def default(self, obj: KubeObject, request: AdmissionRequest) -> KubeObject:
        """``obj`` with its ``spec`` as the model of its version reads it (see the module docs)."""
        parsed = self._parse(obj, request)
        if isinstance(parsed, list) or not isinstance(obj.get("spec"), dict):
            return obj  # the validator (or the schema) refuses it, with the reason
        # The spec alone: the rest is never written back (metadata and its managedFields cost
        # as much to dump again as the spec, on every review). A model whose spec field has
        # another name (read through an alias) is dumped whole.
        dumped = parsed.model_dump(by_alias=True, exclude_none=True, mode="json", include={"spec"})
        if "spec" not in dumped:
            dumped = parsed.model_dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(dumped.get("spec"), dict):
            obj["spec"] = _overlay(obj["spec"], dumped["spec"])
        return obj

    # -- Validator

    async def validate_create(self, obj: KubeObject, request: AdmissionRequest) -> Sequence[str]:
        """Refuse a new object with the kind's problems (422)."""
        _, problems = self._problems(obj, request)
        self._refuse(obj, [field_error(problem) for problem in problems])
        return []

    async def validate_update(
        self, old: KubeObject, new: KubeObject, request: AdmissionRequest
    ) -> Sequence[str]:
        """Refuse an update with problems the old object did not have, or that breaks a rule."""
        if objects.is_terminating(new):
            return []  # finalizers are being removed: never stand in the way of a deletion
        parsed_new, problems = self._problems(new, request)
        parsed_old, before = self._problems(old, request)
        errors = [field_error(problem) for problem in problems if problem not in before]
        if self._update_rules is not None and parsed_new is not None and parsed_old is not None:
            errors += [
                field_error(problem, type_="FieldValueForbidden")
                for problem in self._update_rules(parsed_old, parsed_new)
            ]
        self._refuse(new, errors)
        return []

    async def validate_delete(self, obj: KubeObject, request: AdmissionRequest) -> Sequence[str]:
        """Deletions are never refused."""
        return []


def changed_paths(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[str]:
    """The dotted paths under which ``old`` and ``new`` differ (maps compared key by key)."""
    paths: list[str] = []
    for key in sorted(set(old) | set(new), key=str):
        path = f"{prefix}.{key}" if prefix else str(key)
        before, after = old.get(key), new.get(key)
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            paths.extend(changed_paths(before, after, path))
        elif before != after:
            paths.append(path)
    return paths
