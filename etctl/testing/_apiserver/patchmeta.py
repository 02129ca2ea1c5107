"""How the fields of built-in kinds merge: patch strategies, merge keys and list types.

kube-apiserver reads this from Go struct tags (``patchStrategy``, ``patchMergeKey``) for strategic
merge patch and from the OpenAPI extensions (``x-kubernetes-list-type``, ``-list-map-keys``,
``-map-type``) for server-side apply. This module is the one table of both, for the kinds the
embedded server serves, so :mod:`.patch` and :mod:`.apply` cannot disagree.

A :class:`FieldMeta` describes one field; its ``fields`` describe the members of the struct the
field holds (or of each element, for a list). A field the table does not name gets
:data:`UNKNOWN`: no patch strategy (lists are replaced, maps merged) and, for apply, atomic lists
and granular maps. The table only needs the fields whose behaviour differs from that default.

Invariant: every entry mirrors the tags of ``k8s.io/api`` (core/v1 and the other groups served);
``metadata`` is the same for every kind, including custom resources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

__all__ = ["UNKNOWN", "FieldMeta", "ListType", "meta_for_kind"]

ListType = Literal["", "atomic", "set", "map"]


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """Merge behaviour of one field and the shape beneath it.

    Attributes:
        strategy: strategic merge patch strategy: ``"merge"``, ``"replace"`` or ``""`` (none).
        merge_key: strategic merge patch key of a merged list of objects.
        list_type: server-side apply list semantics; ``""`` means atomic.
        map_keys: the ``x-kubernetes-list-map-keys`` of a ``map`` list.
        atomic: server-side apply treats this map or struct as one value.
        fields: members of the object this field holds, or of each list element.
    """

    strategy: Literal["", "merge", "replace"] = ""
    merge_key: str = ""
    list_type: ListType = ""
    map_keys: tuple[str, ...] = ()
    atomic: bool = False
    fields: Mapping[str, FieldMeta] = field(default_factory=lambda: _NO_FIELDS)

    def child(self, name: str) -> FieldMeta:
        """The meta of member ``name`` (or :data:`UNKNOWN`)."""
        return self.fields.get(name, UNKNOWN)


_NO_FIELDS: Mapping[str, FieldMeta] = MappingProxyType({})
UNKNOWN = FieldMeta()
"""A field the table does not describe: default semantics all the way down."""


def _struct(**fields: FieldMeta) -> FieldMeta:
    return FieldMeta(fields=MappingProxyType(fields))


def _merged(merge_key: str, *map_keys: str, item: FieldMeta = UNKNOWN) -> FieldMeta:
    """A list merged by ``merge_key`` (SMP) and keyed by ``map_keys`` (apply)."""
    return FieldMeta(
        strategy="merge",
        merge_key=merge_key,
        list_type="map",
        map_keys=map_keys or (merge_key,),
        fields=item.fields,
    )


def _keyed(*map_keys: str) -> FieldMeta:
    """A list that apply treats as a map but strategic merge patch replaces."""
    return FieldMeta(list_type="map", map_keys=map_keys)


_SET = FieldMeta(strategy="merge", list_type="set")
_ATOMIC_MAP = FieldMeta(atomic=True)

_OBJECT_META = _struct(finalizers=_SET, ownerReferences=_merged("uid"))

_CONTAINER = _struct(
    ports=_merged("containerPort", "containerPort", "protocol"),
    env=_merged("name"),
    volumeMounts=_merged("mountPath"),
    volumeDevices=_merged("devicePath"),
    resources=_struct(claims=_keyed("name")),
)

_POD_SPEC = _struct(
    volumes=_merged("name"),
    initContainers=_merged("name", item=_CONTAINER),
    containers=_merged("name", item=_CONTAINER),
    ephemeralContainers=_merged("name", item=_CONTAINER),
    imagePullSecrets=_merged("name"),
    hostAliases=_merged("ip"),
    topologySpreadConstraints=_merged("topologyKey", "topologyKey", "whenUnsatisfiable"),
    schedulingGates=_merged("name"),
    resourceClaims=_merged("name"),
    nodeSelector=_ATOMIC_MAP,
)

_POD_STATUS = _struct(
    conditions=_merged("type"),
    podIPs=_merged("ip"),
    # Merged by strategic merge patch, yet atomic for apply (+listType=atomic).
    hostIPs=FieldMeta(strategy="merge", merge_key="ip"),
    resourceClaimStatuses=_merged("name"),
)

_CONDITIONS_ONLY = _struct(conditions=_merged("type"))

_KINDS: Mapping[str, Mapping[str, FieldMeta]] = {
    "Pod": {"spec": _POD_SPEC, "status": _POD_STATUS},
    "PodTemplate": {"template": _struct(spec=_POD_SPEC)},
    "Deployment": {
        "spec": _struct(template=_struct(metadata=_OBJECT_META, spec=_POD_SPEC)),
        "status": _CONDITIONS_ONLY,
    },
    "ReplicaSet": {
        "spec": _struct(template=_struct(metadata=_OBJECT_META, spec=_POD_SPEC)),
        "status": _CONDITIONS_ONLY,
    },
    "Service": {
        "spec": _struct(ports=_merged("port", "port", "protocol"), selector=_ATOMIC_MAP),
        "status": _CONDITIONS_ONLY,
    },
    "Node": {
        "spec": _struct(podCIDRs=_SET),
        "status": _struct(conditions=_merged("type"), addresses=_merged("type")),
    },
    "Namespace": {"status": _CONDITIONS_ONLY},
    "ServiceAccount": {"secrets": _merged("name")},
    "CustomResourceDefinition": {"status": _struct(conditions=_keyed("type"))},
    # ConfigMap, Secret, Event, Endpoints, the RBAC kinds, Lease and PriorityClass carry no
    # patch strategies below metadata: their lists are atomic and their maps merge.
}

_ROOTS: dict[str, FieldMeta] = {
    kind: _struct(metadata=_OBJECT_META, **members) for kind, members in _KINDS.items()
}
_DEFAULT_ROOT = _struct(metadata=_OBJECT_META)


def meta_for_kind(kind: str) -> FieldMeta:
    """The merge description of a whole object of ``kind``.

    Kinds the table does not list (including custom resources) get ``metadata`` only.
    """
    return _ROOTS.get(kind, _DEFAULT_ROOT)
