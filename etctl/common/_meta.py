"""Base model configuration, scalar types and object metadata shared by every etctl API model.

* :class:`KubeModel`: camelCase JSON aliases, populate by name or alias, unknown fields ignored on
  parse (the API server prunes them anyway), attribute docstrings as schema descriptions, and
  :meth:`KubeModel.to_dict`, the one serialisation (aliases, no ``None``, JSON types).
* :class:`ValueModel`: a frozen KubeModel, for values (specs, policies, conditions, references).
* :class:`OmitEmptyModel`: serialised like Go's ``omitempty`` (``ObjectMeta``, conditions).
* :data:`Timestamp`: a ``metav1.Time``; parsed from RFC 3339, kept as aware UTC whole seconds
  (what the API server keeps), written with a ``Z``.
* :data:`Int32`, :data:`Int64`, :data:`Quantity`: integers and resource quantities with the
  OpenAPI formats the Go types declare.
* :class:`ObjectMeta`, :class:`OwnerReference`, :class:`KubeObjectModel`: the metadata fields
  controllers read, and the apiVersion/kind/metadata every top-level object has.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from etctl._apimachinery import quantity

__all__ = [
    "Int32",
    "Int64",
    "KubeModel",
    "KubeObjectModel",
    "ObjectMeta",
    "OmitEmptyModel",
    "OwnerReference",
    "Quantity",
    "Timestamp",
    "ValueModel",
    "format_timestamp",
    "to_timestamp",
]


class KubeModel(BaseModel):
    """Base of every etctl API model: camelCase JSON, lenient about unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        use_attribute_docstrings=True,
        use_enum_values=False,
        # A model's validator and serializer are built at its first use, not at import: an
        # operator loads every kind's models and, idle, uses few of them.
        defer_build=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of this model: aliases, no ``None`` values, JSON-native types."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class ValueModel(KubeModel):
    """A :class:`KubeModel` that is a value: immutable once parsed, compared by content."""

    model_config = ConfigDict(frozen=True)


class OmitEmptyModel(KubeModel):
    """Serialised like Go's ``omitempty``: empty strings, zeros and empty collections left out."""

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if not _is_empty(value)}


def _is_empty(value: object) -> bool:
    if isinstance(value, bool):
        return value is False
    return value is None or value in ("", 0) or (isinstance(value, list | dict) and not value)


# --- scalar types -------------------------------------------------------------------------------


def to_timestamp(value: datetime) -> datetime:
    """``value`` as a Kubernetes timestamp: aware UTC, whole seconds (naive means UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0)


def format_timestamp(value: datetime) -> str:
    """RFC 3339 with a ``Z``, as the API server writes a ``metav1.Time``: 2026-01-01T00:00:00Z."""
    return to_timestamp(value).strftime("%Y-%m-%dT%H:%M:%SZ")


Timestamp = Annotated[
    datetime,
    AfterValidator(to_timestamp),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]
"""A ``metav1.Time``: parsed from RFC 3339, kept as aware UTC whole seconds, written with ``Z``."""

Int32 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int32"})]
"""An integer the Go types declare as ``int32``."""

Int64 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int64"})]
"""An integer the Go types declare as ``int64``."""

Quantity = Annotated[
    int | str,
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "pattern": quantity.PATTERN,
        }
    ),
]
"""A resource quantity, written as an integer or a string (``4``, ``"500m"``, ``"2Gi"``)."""

# --- metadata -----------------------------------------------------------------------------------


class OwnerReference(ValueModel):
    """An object that owns this one; at most one owner is the ``controller``."""

    api_version: str
    """API version of the owner."""
    kind: str
    """Kind of the owner."""
    name: str
    """Name of the owner."""
    uid: str
    """UID of the owner."""
    controller: bool | None = None
    """True when the owner manages this object."""
    block_owner_deletion: bool | None = None
    """True when foreground deletion of the owner waits for this object."""


class ObjectMeta(OmitEmptyModel):
    """The ``metadata`` fields controllers read. Serialised with Go's ``omitempty`` rules."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
    creation_timestamp: Timestamp | None = None
    deletion_timestamp: Timestamp | None = None

    def controller_ref(self) -> OwnerReference | None:
        """The owner reference with ``controller: true``, if any."""
        return next((ref for ref in self.owner_references if ref.controller), None)


class KubeObjectModel(KubeModel):
    """A top-level API object: ``apiVersion``, ``kind`` and ``metadata``."""

    api_version: str
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def key(self) -> str:
        """The cache key, ``namespace/name`` (``name`` for cluster-scoped objects)."""
        meta = self.metadata
        return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
