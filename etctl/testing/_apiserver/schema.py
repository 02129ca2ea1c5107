"""CRD structural schemas: validating, defaulting and pruning custom resources.

A custom resource is checked against its version's ``openAPIV3Schema`` the way apiextensions does
it: the server first drops unknown fields (:func:`prune`), then applies defaults
(:func:`apply_defaults`), then validates (:func:`validate`). :func:`structural_errors` says why a
schema would make kube-apiserver reject the CRD itself.

Fidelity: :func:`validate` follows ``k8s.io/kube-openapi/pkg/validation/validate`` and
apiextensions' conversion of its results into field errors, so paths (``spec.list[2].name``), cause
types and messages (``Invalid value: -1: spec.replicas in body should be greater than or equal to
0``) are the real server's (Kubernetes 1.31 wording), followed by the checks of embedded resources
(``x-kubernetes-embedded-resource``) and of ``x-kubernetes-list-type`` set/map uniqueness. On
update, validation ratchets as with ``CRDValidationRatcheting`` (on by default since Kubernetes
1.30): errors in values unchanged from the stored object are not reported, and list-type errors are
reported only if the stored object has none. Known gaps, kept deliberately:
``x-kubernetes-validations`` (CEL) rules are not evaluated here (:mod:`.celrules` does); the
``anyOf``/``oneOf`` failure details come from the alternative with the fewest errors (kube-openapi
picks by an internal match count); embedded ``metadata`` is checked for name/generateName only;
patterns use Python's ``re``, which accepts a superset of Go's RE2.

Invariants: inputs are never mutated; :func:`prune` and :func:`apply_defaults` return new
containers only where something changed and share the rest. The root object's ``apiVersion``,
``kind`` and ``metadata`` are the server's business: they survive pruning, and only
``metadata.name``/``generateName`` are validated, against what the schema says of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl._apimachinery.defaulting import apply_defaults, prune
from etctl._apimachinery.fielderror import FieldError
from etctl._apimachinery.structural import structural_errors, structural_field_errors
from etctl._apimachinery.validator import validate_object

__all__ = [
    "FieldError",
    "apply_defaults",
    "prune",
    "structural_errors",
    "structural_field_errors",
    "validate",
]


def validate(
    obj: Mapping[str, Any],
    schema: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
) -> list[FieldError]:
    """Validate a custom resource against its version's ``openAPIV3Schema``.

    Args:
        obj: the custom resource (already pruned and defaulted).
        schema: the structural ``openAPIV3Schema``.
        old: on update, the stored object at the same version, for ratcheting.

    Returns:
        The field errors, in the order kube-apiserver reports them (schema errors, then embedded
        resources, then list-type uniqueness); empty when the object is valid.
    """
    return validate_object(obj, schema, old=old)
