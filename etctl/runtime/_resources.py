"""Resource identities: which collection of the API an object lives in.

A :class:`Resource` is the (group, version, plural) triple the REST paths are built from, plus the
kind and scope the client needs to build and check objects. It is frozen and hashable, so it keys
informers, caches and metrics. The well-known built-in resources etctl uses are defined here once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from etctl.runtime._target import api_path

__all__ = [
    "CONFIGMAPS",
    "ENDPOINTS",
    "CRDS",
    "EVENTS",
    "LEASES",
    "MUTATING_WEBHOOK_CONFIGURATIONS",
    "NAMESPACES",
    "NODES",
    "PODS",
    "PRIORITYCLASSES",
    "ROLEBINDINGS",
    "ROLES",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "VALIDATING_WEBHOOK_CONFIGURATIONS",
    "Resource",
]


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource: ``/apis/<group>/<version>/[namespaces/<ns>/]<plural>``.

    Attributes:
        group: the API group, ``""`` for the core group.
        version: the served version (``v1``, ``v1alpha1``).
        plural: the lower-case plural in the URL (``pods``).
        kind: the object kind (``Pod``).
        namespaced: True when objects live in namespaces.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` field of objects of this resource (``v1`` or ``group/version``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` (or just ``plural`` for the core group), as RBAC and errors spell it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path of the collection, of one object, or of one object's subresource.

        Every segment (group, version, plural, namespace, name, subresource) is percent-encoded
        by the one function that builds the client's paths, so none can leave its place.

        Raises:
            UnsafeRequest: a segment is empty, ``.`` or ``..``.
        """
        collection = _collection_path(self, namespace if self.namespaced and namespace else None)
        if name is None:
            return collection
        return collection + (api_path(name, subresource) if subresource else api_path(name))

    def __str__(self) -> str:
        return f"{self.group_resource}/{self.version}"


@functools.lru_cache(maxsize=1024)
def _collection_path(res: Resource, namespace: str | None) -> str:
    """The path of ``res``'s collection (in ``namespace``), built once for each pair that recurs.

    Raises:
        UnsafeRequest: a segment is empty, ``.`` or ``..`` (never kept).
    """
    segments = ["apis", res.group, res.version] if res.group else ["api", res.version]
    if namespace is not None:
        segments += ["namespaces", namespace]
    segments.append(res.plural)
    return api_path(*segments)


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
PRIORITYCLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
