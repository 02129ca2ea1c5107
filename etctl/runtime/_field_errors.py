"""Field errors and the 422 ``Invalid`` error kube-apiserver builds from them.

A validating webhook that refuses an object for its fields answers as the API server itself
would (apimachinery's ``errors.NewInvalid``): ``422``, reason ``Invalid``, the message
``<Kind>.<group> "<name>" is invalid: <field>: <detail>`` (several errors in brackets, joined by
``", "``), and one ``details.causes`` entry per field, which clients read to point at the field.
kube-apiserver passes the webhook's ``Status`` on to the client unchanged (prefixed by
``admission webhook "<name>" denied the request: ``), so ``kubectl apply`` prints exactly that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from etctl.errors import Invalid

__all__ = ["FieldError", "invalid"]


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field.

    Attributes:
        field: the path as kube-apiserver prints it (``spec.replicaSpecs[Worker].replicas``).
        detail: what is wrong with it, and what to do.
        type: the cause's reason (apimachinery's ``FieldValueInvalid``, ``FieldValueRequired``,
            ``FieldValueForbidden``, ``FieldValueNotSupported``...).
    """

    field: str
    detail: str
    type: str = "FieldValueInvalid"

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}" if self.field else self.detail

    def as_cause(self) -> dict[str, str]:
        """This error as a ``Status.details.causes`` entry."""
        return {"reason": self.type, "message": self.detail, "field": self.field}


def invalid(kind: str, name: str, errors: Sequence[FieldError], *, group: str = "") -> Invalid:
    """The 422 ``Invalid`` error of an object of ``kind`` (in ``group``) named ``name``.

    Raise it from a validator (or return it from a check): the webhook answers with its status.
    Repeated errors are reported once, as apimachinery's aggregate does.
    """
    unique = list(dict.fromkeys(errors))
    texts = [str(error) for error in unique]
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    details: dict[str, object] = {
        "name": name,
        "kind": kind,
        "causes": [error.as_cause() for error in unique],
    }
    if group:
        details["group"] = group
    return Invalid(
        f'{qualified} "{name}" is invalid: {aggregate}',
        status=422,
        reason="Invalid",
        details=details,
    )
