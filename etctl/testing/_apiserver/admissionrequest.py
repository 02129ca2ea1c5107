"""What a write tells admission: :class:`AdmissionAttributes`, and the :class:`Admission` it calls.

kube-apiserver's write path calls mutating admission after the body is decoded and defaulted (and
before the kind's strategy prepares and validates it), and validating admission once the object is
validated, right before it is stored. The write functions of this package do the same through an
:class:`Admission` carried in the request's options; only requests that arrive over HTTP carry
one (the internal API's callers, in-process controllers and tests, are not sent to webhooks).

The write functions are coroutines so that admission may wait on a webhook. A caller with no
admission never waits, so :func:`run_sync` runs such a write to its end in one step; a write that
would wait there is a bug, and says so.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from etctl.runtime import KubeObject
from etctl.testing._apiserver.registry import ResourceInfo

__all__ = [
    "CONNECT",
    "CREATE",
    "DELETE",
    "UPDATE",
    "Admission",
    "AdmissionAttributes",
    "run_sync",
]

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"
CONNECT = "CONNECT"

_T = TypeVar("_T")


@dataclass(slots=True)
class AdmissionAttributes:
    """One request as admission sees it (kube-apiserver's ``admission.Attributes``).

    Attributes:
        operation: ``CREATE``, ``UPDATE``, ``DELETE`` or ``CONNECT``.
        info: the resource written.
        version: the version the request was made at (the object's ``apiVersion``).
        subresource: ``""``, ``status``, ``scale``...
        name: the object's name (the generated one, once generated; ``""`` for the items of a
            deletecollection, as the real server leaves it).
        namespace: the request's namespace (``""`` for cluster-scoped resources).
        object: the new object (None for a delete).
        old_object: the stored object an update or delete starts from (None for a create).
        dry_run: nothing will be stored.
        options: the request's ``CreateOptions``, ``UpdateOptions``, ``PatchOptions`` or
            ``DeleteOptions``, as the AdmissionReview carries them.
        kind: the kind of ``object`` (``autoscaling/v1`` ``Scale`` for ``/scale``), as
            ``(group, version, kind)``; the resource's own by default.
    """

    operation: str
    info: ResourceInfo
    version: str
    subresource: str
    name: str
    namespace: str
    object: KubeObject | None
    old_object: KubeObject | None
    dry_run: bool
    options: Mapping[str, Any] = field(default_factory=dict)
    kind: tuple[str, str, str] | None = None

    def gvk(self) -> tuple[str, str, str]:
        """The ``(group, version, kind)`` of the object admitted."""
        return self.kind or (self.info.group, self.version, self.info.kind)


class Admission(Protocol):
    """What the write path calls: mutation before validation, validation before storing."""

    async def mutate(self, attributes: AdmissionAttributes) -> KubeObject | None:
        """The object as mutating admission leaves it (None: unchanged).

        Raises:
            etctl.errors.ApiError: admission refused the request.
        """

    async def validate(self, attributes: AdmissionAttributes) -> None:
        """Return when validating admission allows the request.

        Raises:
            etctl.errors.ApiError: admission refused the request.
        """


def run_sync(write: Coroutine[Any, Any, _T]) -> _T:
    """Run a write coroutine that never waits (no admission) to its end, synchronously.

    Raises:
        RuntimeError: the write waited, which only admission may do.
    """
    try:
        write.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    write.close()
    msg = "a write of the internal API waited; only HTTP requests are sent to webhooks"
    raise RuntimeError(msg)
