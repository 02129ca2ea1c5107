"""The Deployment and ReplicaSet controllers: a Deployment's pods are created, and then run.

As kube-controller-manager's controllers do, in short:

* a **Deployment** owns one ReplicaSet per pod template, named ``<deployment>-<pod-template-hash>``
  (the hash of the template, in the real alphabet), labelled and selected by that hash, annotated
  with the deployment's revision; the current template's ReplicaSet is scaled to
  ``spec.replicas`` and every older one to zero (the rollout happens at once, whatever the
  strategy), and scaled-down ones beyond ``revisionHistoryLimit`` are deleted. Its status sums
  its ReplicaSets' (``replicas``, ``updatedReplicas``, ``readyReplicas``,
  ``availableReplicas``, ``unavailableReplicas``) with the ``Available`` and ``Progressing``
  conditions worded as the real controller words them;
* a **ReplicaSet** creates pods from its template (``<replicaset>-<5 random characters>``, with a
  controller reference) until it owns ``spec.replicas`` active ones, deletes the surplus (pending
  and not-ready pods first, then the newest), and reports ``replicas``,
  ``fullyLabeledReplicas``, ``readyReplicas`` and ``availableReplicas``; a create the server
  refuses sets the ``ReplicaFailure`` condition (``FailedCreate``) with the server's message.

The simulated kubelet runs the pods; deleting a Deployment deletes its ReplicaSets and their pods
through the garbage collector. Work is event driven, as the other built-in controllers' is.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from etctl.errors import ApiError, NotFound
from etctl.log import get_logger
from etctl.runtime import KubeObject, ObjectView, Resource, objects
from etctl.testing._apiserver.storage import Storage, WriteOptions
from etctl.testing._apiserver.store import Event
from etctl.testing._controllers.host import QueueController

__all__ = ["DEPLOYMENTS", "REPLICASETS", "WorkloadController"]

log = get_logger(__name__)

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet")
_PODS = Resource("", "v1", "pods", "Pod")
_HASH_LABEL = "pod-template-hash"
_REVISION = "deployment.kubernetes.io/revision"
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_OPTIONS = WriteOptions(field_manager="kube-controller-manager")

Key = tuple[str, str, str]
"""``(plural, namespace, name)`` of a Deployment or a ReplicaSet."""


def template_hash(template: Mapping[str, Any]) -> str:
    """The ``pod-template-hash`` of a template: FNV-32a, safe-encoded as the real one is."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[int(c) % len(_ALPHANUMS)] for c in str(value))


def _controller_of(obj: ObjectView, kind: str) -> str:
    """The uid of ``obj``'s controller of ``kind``, or ``""``."""
    for ref in objects.meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == kind:
            return str(ref.get("uid") or "")
    return ""


def _controller_name(obj: ObjectView, kind: str) -> str:
    for ref in objects.meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == kind:
            return str(ref.get("name") or "")
    return ""


def _owner_ref(owner: ObjectView, kind: str) -> dict[str, Any]:
    meta = objects.meta(owner)
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _ready(pod: ObjectView) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _active(pod: ObjectView) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return not objects.meta(pod).get("deletionTimestamp") and phase not in ("Succeeded", "Failed")


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _percent(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        scaled = total * int(value[:-1] or 0)
        return -(-scaled // 100) if round_up else scaled // 100
    return _int(value)


class WorkloadController(QueueController[Key]):
    """Runs Deployments and ReplicaSets.

    Args:
        storage: the server's storage.
    """

    def __init__(self, storage: Storage) -> None:
        super().__init__(storage, task_name="workload-controller")

    def _resume(self) -> None:
        """Pick up the Deployments and ReplicaSets already stored."""
        for plural in ("deployments", "replicasets"):
            for _key, obj in self.storage.store.items(("apps", plural)):
                meta = objects.meta(obj)
                self._queue.add((plural, str(meta.get("namespace")), str(meta.get("name"))))

    def observe(self, event: Event) -> None:
        """Queue the Deployment or ReplicaSet a change concerns, and its controller."""
        group, plural = event.resource
        obj = event.object
        namespace = str(objects.meta(obj).get("namespace") or "")
        if (group, plural) == ("apps", "deployments"):
            self._queue.add(("deployments", namespace, str(objects.meta(obj).get("name"))))
        elif (group, plural) == ("apps", "replicasets"):
            self._queue.add(("replicasets", namespace, str(objects.meta(obj).get("name"))))
            owner = _controller_name(obj, "Deployment")
            if owner:
                self._queue.add(("deployments", namespace, owner))
        elif (group, plural) == ("", "pods"):
            owner = _controller_name(obj, "ReplicaSet")
            if owner:
                self._queue.add(("replicasets", namespace, owner))

    def _handle(self, key: Key) -> None:
        plural, namespace, name = key
        try:
            if plural == "deployments":
                self._sync_deployment(namespace, name)
            else:
                self._sync_replicaset(namespace, name)
        except NotFound:
            return  # gone meanwhile: its change queues what follows
        except ApiError as error:
            log.debug("workload sync failed", key=key, error=str(error))

    # -- ReplicaSets ----------------------------------------------------------------------------

    def _owned_pods(self, rs: ObjectView) -> list[KubeObject]:
        uid = objects.uid(rs)
        namespace = str(objects.meta(rs).get("namespace"))
        return [
            pod
            for pod in self.storage.list(_PODS, namespace=namespace).items
            if _controller_of(pod, "ReplicaSet") == uid
        ]

    def _sync_replicaset(self, namespace: str, name: str) -> None:
        rs = self.storage.get(REPLICASETS, name, namespace=namespace)
        if objects.meta(rs).get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        active = [pod for pod in self._owned_pods(rs) if _active(pod)]
        wanted = _int(spec.get("replicas"), 1)
        failure = ""
        if len(active) < wanted:
            failure = self._create_pods(rs, wanted - len(active))
        elif len(active) > wanted:
            # The real controller's ranking: unscheduled, pending, not ready first; newest first.
            def rank(pod: ObjectView) -> tuple[bool, bool, bool, str]:
                status = pod.get("status") or {}
                return (
                    bool((pod.get("spec") or {}).get("nodeName")),
                    status.get("phase") == "Running",
                    _ready(pod),
                    "".join(chr(255 - ord(c)) for c in str(objects.meta(pod).get("name"))),
                )

            for pod in sorted(active, key=rank)[: len(active) - wanted]:
                self.storage.delete(_PODS, objects.name(pod), namespace=namespace)
        active = [pod for pod in self._owned_pods(rs) if _active(pod)]
        ready = sum(1 for pod in active if _ready(pod))
        status: dict[str, Any] = {
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": objects.meta(rs).get("generation"),
        }
        if failure:
            status["conditions"] = [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": failure,
                    "lastTransitionTime": self.storage.now(),
                }
            ]
        self._write_status(REPLICASETS, rs, {k: v for k, v in status.items() if v != 0})

    def _create_pods(self, rs: KubeObject, count: int) -> str:
        """Create ``count`` pods from the template; the refusal's message if one is refused."""
        template = (rs.get("spec") or {}).get("template") or {}
        meta = objects.meta(rs)
        for _ in range(count):
            pod: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    **copy.deepcopy(template.get("metadata") or {}),
                    "generateName": f"{meta.get('name')}-",
                    "namespace": meta.get("namespace"),
                    "ownerReferences": [_owner_ref(rs, "ReplicaSet")],
                },
                "spec": copy.deepcopy(template.get("spec") or {}),
            }
            pod["metadata"].pop("name", None)
            try:
                self.storage.create(_PODS, pod, namespace=str(meta.get("namespace")))
            except ApiError as error:
                return error.message
        return ""

    # -- Deployments ----------------------------------------------------------------------------

    def _sync_deployment(self, namespace: str, name: str) -> None:
        deployment = self.storage.get(DEPLOYMENTS, name, namespace=namespace)
        if objects.meta(deployment).get("deletionTimestamp"):
            return
        spec = deployment.get("spec") or {}
        uid = objects.uid(deployment)
        owned = [
            rs
            for rs in self.storage.list(REPLICASETS, namespace=namespace).items
            if _controller_of(rs, "Deployment") == uid
        ]
        template = spec.get("template") or {}
        pod_hash = template_hash(template)
        current = next((rs for rs in owned if rs["metadata"]["name"] == f"{name}-{pod_hash}"), None)
        replicas = _int(spec.get("replicas"), 1)
        revisions = [int(r["metadata"].get("annotations", {}).get(_REVISION, "0")) for r in owned]
        if current is None:
            current = self._create_replicaset(
                deployment, pod_hash, replicas, max(revisions, default=0) + 1
            )
        elif _int((current.get("spec") or {}).get("replicas")) != replicas:
            self._scale(current, replicas)
        old = [rs for rs in owned if rs["metadata"]["name"] != current["metadata"]["name"]]
        for rs in old:
            if _int((rs.get("spec") or {}).get("replicas")) != 0:
                self._scale(rs, 0)
        history = _int(spec.get("revisionHistoryLimit"), 10)
        idle = [rs for rs in old if not (rs.get("status") or {}).get("replicas")]
        idle.sort(key=lambda rs: int(rs["metadata"].get("annotations", {}).get(_REVISION, "0")))
        for rs in idle[: max(len(idle) - history, 0)]:
            self.storage.delete(REPLICASETS, objects.name(rs), namespace=namespace)
        self._deployment_status(deployment, current, [current, *old])

    def _create_replicaset(
        self, deployment: KubeObject, pod_hash: str, replicas: int, revision: int
    ) -> KubeObject:
        meta = objects.meta(deployment)
        spec = deployment.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        labels = {**(template.get("metadata") or {}).get("labels", {}), _HASH_LABEL: pod_hash}
        template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**selector.get("matchLabels", {}), _HASH_LABEL: pod_hash}
        max_surge = _percent(
            ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxSurge"),
            replicas,
            round_up=True,
        )
        body = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{meta.get('name')}-{pod_hash}",
                "namespace": meta.get("namespace"),
                "labels": labels,
                "annotations": {
                    "deployment.kubernetes.io/desired-replicas": str(replicas),
                    "deployment.kubernetes.io/max-replicas": str(replicas + max_surge),
                    _REVISION: str(revision),
                },
                "ownerReferences": [_owner_ref(deployment, "Deployment")],
            },
            "spec": {
                "replicas": replicas,
                "minReadySeconds": _int(spec.get("minReadySeconds")),
                "selector": selector,
                "template": template,
            },
        }
        return self.storage.create(
            REPLICASETS, body, namespace=str(meta.get("namespace")), options=_OPTIONS
        )

    def _scale(self, rs: KubeObject, replicas: int) -> None:
        changed = copy.deepcopy(rs)
        changed["spec"]["replicas"] = replicas
        annotations = changed["metadata"].setdefault("annotations", {})
        annotations["deployment.kubernetes.io/desired-replicas"] = str(replicas)
        self.storage.update(REPLICASETS, changed, namespace=str(objects.meta(rs).get("namespace")))

    def _deployment_status(
        self, deployment: KubeObject, current: ObjectView, owned: list[ObjectView]
    ) -> None:
        spec = deployment.get("spec") or {}
        replicas = _int(spec.get("replicas"), 1)
        statuses = [rs.get("status") or {} for rs in owned]
        total = sum(_int(s.get("replicas")) for s in statuses)
        available = sum(_int(s.get("availableReplicas")) for s in statuses)
        ready = sum(_int(s.get("readyReplicas")) for s in statuses)
        updated = _int((current.get("status") or {}).get("replicas"))
        max_unavailable = _percent(
            ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable"),
            replicas,
            round_up=False,
        )
        rs_name = objects.name(current)
        now = self.storage.now()
        previous = {
            c.get("type"): c for c in (deployment.get("status") or {}).get("conditions") or []
        }

        def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
            before = previous.get(kind) or {}
            same = before.get("status") == status
            unchanged = same and before.get("reason") == reason
            return {
                "type": kind,
                "status": status,
                "lastUpdateTime": before.get("lastUpdateTime") if unchanged else now,
                "lastTransitionTime": before.get("lastTransitionTime") if same else now,
                "reason": reason,
                "message": message,
            }

        if available >= replicas - max_unavailable:
            available_condition = condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            available_condition = condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        if updated == replicas and available == replicas and total == replicas:
            progressing = condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs_name}" has successfully progressed.',
            )
        else:
            progressing = condition(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                f'ReplicaSet "{rs_name}" is progressing.',
            )
        status: dict[str, Any] = {
            "observedGeneration": objects.meta(deployment).get("generation"),
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": available,
            "unavailableReplicas": max(replicas - available, 0),
        }
        status = {k: v for k, v in status.items() if v != 0}
        status["conditions"] = [available_condition, progressing]
        self._write_status(DEPLOYMENTS, deployment, status)

    def _write_status(self, resource: Resource, obj: KubeObject, status: dict[str, Any]) -> None:
        if (obj.get("status") or {}) == status:
            return
        changed = {**obj, "status": status}
        namespace = str(objects.meta(obj).get("namespace"))
        self.storage.update(resource, changed, namespace=namespace, subresource="status")
