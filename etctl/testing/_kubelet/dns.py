"""Cluster DNS as a pod sees it: Service and pod host names resolved from the server's objects.

What CoreDNS's ``kubernetes`` plugin answers for ``cluster.local``, read from the store at the
moment of the lookup (no caching, no propagation delay):

* ``<service>.<namespace>.svc.cluster.local``: a Service with a cluster IP resolves to it; a
  headless one (``clusterIP: None``) to the IPs of the pods its selector picks that have one,
  the Ready ones only unless it sets ``publishNotReadyAddresses`` (then not-ready and terminating
  pods too), as the endpoints controller lists them; finished pods never;
* ``<hostname>.<subdomain>.<namespace>.svc.cluster.local``: the pod with that ``spec.hostname``
  and ``spec.subdomain`` when a headless Service named after the subdomain lists it.

A name is looked up as the pod's ``/etc/resolv.conf`` says (``search <namespace>.svc.cluster.local
svc.cluster.local cluster.local``, ``ndots:5``): a name with fewer than five dots is tried with
each search domain first, then as it is; a name ending in ``.`` only as it is. Nothing outside
the cluster resolves. ``/etc/hosts`` (the pod's own host name) is the caller's: ``getent`` reads
it first, ``nslookup`` asks DNS only, as their real counterparts do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from etctl.runtime import KubeObject
from etctl.testing._apiserver.apps import selector_matches
from etctl.testing._apiserver.store import Store
from etctl.testing._apiserver.strategy import mapping

__all__ = ["CLUSTER_DOMAIN", "Answer", "ClusterDNS"]

CLUSTER_DOMAIN: Final = "cluster.local"
_NDOTS: Final = 5
_PODS: Final = ("", "pods")
_SERVICES: Final = ("", "services")


@dataclass(frozen=True, slots=True)
class Answer:
    """A name that resolved: the fully qualified name that answered, and its addresses."""

    name: str
    addresses: tuple[str, ...]


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = mapping(pod.get("status")).get("conditions") or []
    return any(
        mapping(c).get("type") == "Ready" and mapping(c).get("status") == "True" for c in conditions
    )


def _listed(pod: Mapping[str, Any], publish_not_ready: bool) -> bool:
    """Whether the endpoints of a Service selecting ``pod`` list it (with an address)."""
    status = mapping(pod.get("status"))
    if not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed"):
        return False
    if publish_not_ready:
        return True
    return _ready(pod) and not mapping(pod.get("metadata")).get("deletionTimestamp")


class ClusterDNS:
    """Answers pods' lookups from the server's Services and pods.

    Args:
        store: the server's object store.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def resolve(self, name: str, namespace: str) -> Answer | None:
        """``name`` as a pod of ``namespace`` looks it up, or None (NXDOMAIN)."""
        name = name.strip().lower()
        if not name:
            return None
        if name.endswith("."):
            candidates = [name[:-1]]
        else:
            search = [f"{namespace}.svc.{CLUSTER_DOMAIN}", f"svc.{CLUSTER_DOMAIN}", CLUSTER_DOMAIN]
            expanded = [f"{name}.{domain}" for domain in search]
            candidates = [*expanded, name] if name.count(".") < _NDOTS else [name, *expanded]
        for candidate in candidates:
            addresses = self._records(candidate)
            if addresses:
                return Answer(candidate, addresses)
        return None

    def _records(self, fqdn: str) -> tuple[str, ...]:
        suffix = f".svc.{CLUSTER_DOMAIN}"
        if not fqdn.endswith(suffix):
            return ()
        labels = fqdn[: -len(suffix)].split(".")
        if len(labels) == 2:
            service = self._store.get(_SERVICES, f"{labels[1]}/{labels[0]}")
            return self._service(service, labels[1]) if service is not None else ()
        if len(labels) == 3:
            return self._pod_record(*labels)
        return ()

    def _endpoints(self, service: KubeObject, namespace: str) -> list[Mapping[str, Any]]:
        spec = mapping(service.get("spec"))
        selector = mapping(spec.get("selector"))
        if not selector:
            return []
        publish = bool(spec.get("publishNotReadyAddresses"))
        wanted = {"matchLabels": dict(selector)}
        return [
            pod
            for _, pod in self._store.items(_PODS, namespace)
            if selector_matches(wanted, mapping(mapping(pod.get("metadata")).get("labels")))
            and _listed(pod, publish)
        ]

    def _service(self, service: KubeObject, namespace: str) -> tuple[str, ...]:
        cluster_ip = mapping(service.get("spec")).get("clusterIP")
        if isinstance(cluster_ip, str) and cluster_ip and cluster_ip != "None":
            return (cluster_ip,)
        pods = self._endpoints(service, namespace)
        return tuple(sorted({str(mapping(p.get("status")).get("podIP")) for p in pods}))

    def _pod_record(self, hostname: str, subdomain: str, namespace: str) -> tuple[str, ...]:
        service = self._store.get(_SERVICES, f"{namespace}/{subdomain}")
        if service is None or mapping(service.get("spec")).get("clusterIP") != "None":
            return ()
        for pod in self._endpoints(service, namespace):
            spec = mapping(pod.get("spec"))
            if spec.get("hostname") == hostname and spec.get("subdomain") == subdomain:
                return (str(mapping(pod.get("status")).get("podIP")),)
        return ()
