"""Kind-specific behaviour of writes and selectors: the server's ``RESTStrategy``.

The storage layer does what every resource shares (metadata, resourceVersion, generation, status
separation, finalizers, deletion); a :class:`Strategy` adds what one kind does on top: defaults,
validation, the status a new object starts with, which fields a field selector may use, and
whether deletion is graceful. The base class is the behaviour of a kind with no special rules.

Strategies mutate only the fresh object they are given (never a committed one) and report
problems as :class:`~etctl.testing._apiserver.status.Cause` lists; the storage layer turns those
into a 422 with the kind's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.status import Cause

__all__ = ["Strategy", "WriteContext", "field_path", "mapping", "spec_equal"]


@dataclass(frozen=True, slots=True)
class WriteContext:
    """What a strategy may know about the write in progress.

    Attributes:
        now: the server clock's time, RFC 3339 with seconds (``2026-01-01T00:00:00Z``).
        version: the version the request was made at.
        dry_run: True when nothing will be committed.
        subresource: ``""`` for the main resource, ``status`` for a status write.
    """

    now: str
    version: str
    dry_run: bool = False
    subresource: str = ""


def field_path(*parts: str | int) -> str:
    """Join path parts the way field errors print them: ``spec.containers[0].name``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += "." + part
        else:
            out = part
    return out


def spec_equal(new: ObjectView, old: ObjectView, *, ignore_status: bool) -> bool:
    """True when ``new`` and ``old`` differ at most in ``metadata`` (and ``status`` if asked)."""
    skip = {"metadata", "status"} if ignore_status else {"metadata"}
    keys = (set(new) | set(old)) - skip
    return all(new.get(k) == old.get(k) for k in keys)


class Strategy:
    """The behaviour of a kind with no special rules; subclasses override what differs.

    Attributes:
        field_labels: the field-selector labels the kind accepts.
        default_field_error: True when an unsupported label gets the generic message
            (``"x" is not a known field selector: ...``) rather than ``field label not
            supported: x``.
    """

    field_labels: frozenset[str] = frozenset({"metadata.name", "metadata.namespace"})
    default_field_error: bool = True

    def field_label_error(self, label: str) -> str | None:
        """The 400 message for an unsupported field-selector label, or None if it is supported."""
        if label in self.field_labels:
            return None
        if self.default_field_error:
            return (
                f'"{label}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"'
            )
        return f"field label not supported: {label}"

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """The values of the selectable fields of ``obj``."""
        meta = obj.get("metadata") or {}
        return {
            "metadata.name": str(meta.get("name") or ""),
            "metadata.namespace": str(meta.get("namespace") or ""),
        }

    def decode_error(self, obj: ObjectView) -> str | None:
        """What decoding the body into the kind's Go type would refuse (a 400), or None."""
        return None

    def defaults(self, obj: KubeObject) -> None:
        """Fill defaulted fields; applied to every object written (create, update, patch)."""

    def prepare_create(self, obj: KubeObject, ctx: WriteContext) -> None:
        """Set server-owned fields of a new object (after defaults)."""

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """Set the status a new object starts with, when the kind has a status subresource."""
        obj.pop("status", None)

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Problems with a new object, beyond metadata."""
        return []

    def prepare_update(self, new: KubeObject, old: ObjectView, ctx: WriteContext) -> None:
        """Carry server-owned fields over from ``old`` (after defaults)."""

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """Problems with an update (immutable fields and the like)."""
        return self.validate_create(new, ctx)

    def grace_period(self, obj: ObjectView, requested: int | None) -> int | None:
        """The deletion grace period, or None when the kind is deleted at once."""
        return None


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}
