"""Pods: the defaults, validation, status and graceful deletion the real server gives them.

What is modelled: the defaults a pod gains on its way into a cluster (from defaulting and the
default admission plugins: restart policy, grace period, scheduler, DNS policy, service account,
priority, the two not-ready/unreachable tolerations, per-container pull policy and termination
message settings), the status a new pod starts with (``Pending`` and a QoS class), the validation of
its spec (:mod:`~etctl.testing._apiserver.podspec`), the immutability of the spec
on update (only images, ``activeDeadlineSeconds``, tolerations and the grace period may change),
the pod field selectors, and graceful deletion (immediate when the pod was never scheduled or has
finished).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.runtime import KubeObject, ObjectView
from etctl.testing._apiserver.podspec import decode_error, validate_pod_spec
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import Strategy, WriteContext, mapping

__all__ = ["PodStrategy", "qos_class"]

_DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)
_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def _containers(spec: Mapping[str, Any], key: str = "containers") -> list[dict[str, Any]]:
    value = spec.get(key)
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def _pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or untagged images, ``IfNotPresent`` otherwise.

    An image that does not parse (an empty one) has no tag: ``IfNotPresent``.
    """
    if "@" in image or not image.strip():
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_container(container: dict[str, Any]) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = _pull_policy(str(container.get("image") or ""))
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    resources = container["resources"]
    if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = resources.setdefault("requests", {})
        if isinstance(requests, dict):
            for name, amount in resources["limits"].items():
                requests.setdefault(name, amount)


def qos_class(spec: Mapping[str, Any]) -> str:
    """The QoS class of a pod spec: Guaranteed, Burstable or BestEffort."""
    containers = _containers(spec) + _containers(spec, "initContainers")
    any_set = False
    guaranteed = bool(containers)
    for container in containers:
        resources = mapping(container.get("resources"))
        requests = mapping(resources.get("requests"))
        limits = mapping(resources.get("limits"))
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits.get(name)) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class PodStrategy(Strategy):
    """Behaviour of ``pods``."""

    field_labels = frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        }
    )
    default_field_error = False

    def __init__(self, *, scheduling_gates: bool = True) -> None:
        self.scheduling_gates = scheduling_gates
        """Whether the release knows ``spec.schedulingGates`` (else it drops the field)."""

    def _drop_unknown(self, obj: KubeObject) -> None:
        spec = obj.get("spec")
        if not self.scheduling_gates and isinstance(spec, dict):
            spec.pop("schedulingGates", None)

    def fields(self, obj: ObjectView) -> dict[str, str]:
        """Name, namespace and the pod's selectable spec and status fields."""
        spec = mapping(obj.get("spec"))
        status = mapping(obj.get("status"))
        pod_ips = status.get("podIPs") or []
        first_ip = ""
        if isinstance(pod_ips, list) and pod_ips and isinstance(pod_ips[0], Mapping):
            first_ip = str(pod_ips[0].get("ip") or "")
        out = super().fields(obj)
        out.update(
            {
                "spec.nodeName": str(spec.get("nodeName") or ""),
                "spec.restartPolicy": str(spec.get("restartPolicy") or ""),
                "spec.schedulerName": str(spec.get("schedulerName") or ""),
                "spec.serviceAccountName": str(spec.get("serviceAccountName") or ""),
                "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
                "status.phase": str(status.get("phase") or ""),
                "status.podIP": str(status.get("podIP") or ""),
                "status.podIPs": first_ip,
                "status.nominatedNodeName": str(status.get("nominatedNodeName") or ""),
            }
        )
        return out

    def defaults(self, obj: KubeObject) -> None:
        """The defaulting every pod gets (kube-apiserver's SetDefaults_Pod and friends)."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("securityContext", {})
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("enableServiceLinks", True)
        for key in ("containers", "initContainers"):
            for container in _containers(spec, key):
                _default_container(container)

    def prepare_create(self, obj: KubeObject, ctx: WriteContext) -> None:
        """What admission adds on create: service account, priority and default tolerations."""
        self._drop_unknown(obj)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = account
        spec["serviceAccount"] = account
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        if isinstance(tolerations, list):
            keys = {t.get("key") for t in tolerations if isinstance(t, Mapping)}
            for toleration in _DEFAULT_TOLERATIONS:
                if toleration["key"] not in keys:
                    tolerations.append(dict(toleration))

    def prepare_update(self, new: KubeObject, old: ObjectView, ctx: WriteContext) -> None:
        """What an older release does not know is dropped from updates too."""
        super().prepare_update(new, old, ctx)
        self._drop_unknown(new)

    def reset_status(self, obj: KubeObject, ctx: WriteContext) -> None:
        """A new pod is Pending, with the QoS class its resources give it."""
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(mapping(obj.get("spec")))}

    def decode_error(self, obj: ObjectView) -> str | None:
        """Quantities that do not parse are refused when the body is decoded."""
        return decode_error(mapping(obj.get("spec")))

    def validate_create(self, obj: ObjectView, ctx: WriteContext) -> list[Cause]:
        """``ValidatePodSpec``: containers, volumes, resources, ports, names and policies."""
        return validate_pod_spec(mapping(obj.get("spec")))

    def validate_update(self, new: ObjectView, old: ObjectView, ctx: WriteContext) -> list[Cause]:
        """The spec is immutable except images, deadline, added tolerations and grace period."""
        causes = self.validate_create(new, ctx)
        new_spec = copy.deepcopy(dict(mapping(new.get("spec"))))
        old_spec = mapping(old.get("spec"))
        for key in ("containers", "initContainers"):
            old_containers = _containers(old_spec, key)
            for index, container in enumerate(_containers(new_spec, key)):
                if index < len(old_containers) and "image" in old_containers[index]:
                    container["image"] = old_containers[index]["image"]
        for key in ("activeDeadlineSeconds", "terminationGracePeriodSeconds"):
            if key in old_spec:
                new_spec[key] = old_spec[key]
            else:
                new_spec.pop(key, None)
        old_tolerations = old_spec.get("tolerations") or []
        new_tolerations = new_spec.get("tolerations") or []
        if isinstance(new_tolerations, list) and all(t in new_tolerations for t in old_tolerations):
            new_spec["tolerations"] = old_spec.get("tolerations")
            if "tolerations" not in old_spec:
                new_spec.pop("tolerations", None)
        if new_spec != dict(old_spec):
            changed = sorted(
                k for k in set(new_spec) | set(old_spec) if new_spec.get(k) != old_spec.get(k)
            )
            detail = _UPDATE_FORBIDDEN + "\n  changed: " + ", ".join(f"spec.{k}" for k in changed)
            causes.append(Cause("FieldValueForbidden", "spec", f"Forbidden: {detail}"))
        return causes

    def grace_period(self, obj: ObjectView, requested: int | None) -> int | None:
        """Graceful unless never scheduled or finished; the request, else the pod's own period."""
        spec = mapping(obj.get("spec"))
        phase = mapping(obj.get("status")).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return requested
        own = spec.get("terminationGracePeriodSeconds")
        return own if isinstance(own, int) else 30
