"""The root CA publisher: every namespace holds a ``kube-root-ca.crt`` ConfigMap, as on a cluster.

kube-controller-manager's ``root-ca-cert-publisher`` puts the cluster's CA bundle in every
namespace, as the ConfigMap ``kube-root-ca.crt`` (key ``ca.crt``), and puts it back when someone
deletes or changes it. Pods mount it (the projected service-account token volume), and a test that
expects a namespace to hold only its own ConfigMaps is wrong on any real cluster: so the embedded
server publishes it too, with the server's CA when it serves HTTPS (empty over plain HTTP, which
has none).

It runs synchronously in the store's change listener: by the time the write that created a
namespace returns, its ConfigMap exists (a real cluster's publisher is a moment later).
Terminating namespaces are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from etctl.errors import AlreadyExists, ApiError
from etctl.log import get_logger
from etctl.runtime import CONFIGMAPS, NAMESPACES, objects
from etctl.testing._apiserver.storage import Storage
from etctl.testing._apiserver.store import NAMESPACES as _NAMESPACES
from etctl.testing._apiserver.store import Event

__all__ = ["ROOT_CA_CONFIGMAP", "RootCAPublisher"]

log = get_logger(__name__)

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
_CONFIGMAPS = ("", "configmaps")
_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class RootCAPublisher:
    """Keeps ``kube-root-ca.crt`` in every namespace (see the module docstring).

    Args:
        storage: the server's storage.
        ca: the CA bundle to publish, read at each write.
    """

    def __init__(self, storage: Storage, ca: Callable[[], str]) -> None:
        self._storage = storage
        self._ca = ca

    def observe(self, event: Event) -> None:
        """A store listener: publish on a new namespace, restore a deleted or changed bundle."""
        if event.resource == _NAMESPACES:
            if event.type == "ADDED":
                self._publish(objects.name(event.object))
        elif (
            event.resource == _CONFIGMAPS
            and objects.name(event.object) == ROOT_CA_CONFIGMAP
            and (event.type == "DELETED" or (event.object.get("data") or {}) != self._data())
        ):
            self._publish(objects.namespace(event.object))

    def refresh(self) -> None:
        """Publish (again) in every namespace: the CA changed (the server's TLS came up)."""
        for namespace in self._storage.list(NAMESPACES).items:
            self._publish(objects.name(namespace))

    def _data(self) -> dict[str, str]:
        return {"ca.crt": self._ca()}

    def _publish(self, namespace: str) -> None:
        try:
            ns = self._storage.get(NAMESPACES, namespace)
        except ApiError:
            return
        if objects.is_terminating(ns):
            return
        body = {
            "metadata": {
                "name": ROOT_CA_CONFIGMAP,
                "namespace": namespace,
                "annotations": {"kubernetes.io/description": _DESCRIPTION},
            },
            "data": self._data(),
        }
        try:
            self._storage.create(CONFIGMAPS, body, namespace=namespace)
        except AlreadyExists:
            current = self._storage.get(CONFIGMAPS, ROOT_CA_CONFIGMAP, namespace=namespace)
            if (current.get("data") or {}) != body["data"]:
                self._storage.update(
                    CONFIGMAPS, {**current, "data": body["data"]}, namespace=namespace
                )
        except ApiError as exc:
            log.warning("could not publish the root CA", namespace=namespace, error=str(exc))
