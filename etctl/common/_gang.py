"""Gang scheduling: the job's PodGroup and the pod decoration that binds pods to it (pure).

With ``JobSettings.gang_scheduler`` set, a job gets one PodGroup named after it, owned by it, for
the batch scheduler to place all its pods together or none:

* ``volcano``: ``scheduling.volcano.sh/v1beta1`` PodGroup with ``minMember``, ``queue`` (the
  scheduling policy's, else ``default``; a queue volcano already set is kept when the policy names
  none), ``priorityClassName`` and ``minResources``. Pods get ``schedulerName: volcano`` and the
  annotations ``scheduling.k8s.io/group-name: <job>`` and ``volcano.sh/task-spec: <replica type>``.
  Pods are not created until volcano admits the group: its ``status.phase`` must be set and not
  ``Pending`` (kubeflow/common#129: pods created early sit unschedulable and may starve others).
* ``scheduler-plugins``: ``scheduling.x-k8s.io/v1alpha1`` PodGroup with ``minMember``,
  ``minResources`` and ``scheduleTimeoutSeconds``. Pods get ``schedulerName:
  scheduler-plugins-scheduler`` and the label ``scheduling.x-k8s.io/pod-group: <job>``. The
  coscheduling plugin holds pods at its Permit stage, so pods are created at once.

``minMember`` is ``schedulingPolicy.minAvailable``, else the number of pods the job wants.
``minResources`` is ``schedulingPolicy.minResources``, else kubeflow's rule: replica types sorted
by the value of their pod template's PriorityClass (highest first, unknown classes count 0, ties in
the job's replica type order), and the per-container requests of their pods summed until
``minMember`` pods are counted; a resource a container limits without requesting counts at its
limit, as the scheduler defaults the request to the limit.

A template that names another scheduler keeps it (a Warning event says gang scheduling will not
apply to those pods), as kubeflow does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from etctl._apimachinery.quantity import QuantityError, ResourceList
from etctl.common._api import RunPolicy, pod_containers
from etctl.errors import ConfigError
from etctl.runtime import KubeObject, ObjectView, Resource

__all__ = [
    "SCHEDULER_PLUGINS",
    "SCHEDULER_PLUGINS_PODGROUPS",
    "VOLCANO",
    "VOLCANO_PODGROUPS",
    "GangMember",
    "Scheduler",
    "build_podgroup",
    "decorate_pod",
    "is_admitted",
    "min_member",
    "min_resources",
    "podgroup_patch",
    "scheduler_for",
]

VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"

VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
SCHEDULER_PLUGINS_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")

_VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True, slots=True)
class Scheduler:
    """One supported gang scheduler.

    Attributes:
        name: the ``JobSettings.gang_scheduler`` value.
        scheduler_name: the ``schedulerName`` pods get.
        podgroups: the PodGroup resource.
        holds_creation: pods wait for the PodGroup to be admitted before they are created.
    """

    name: str
    scheduler_name: str
    podgroups: Resource
    holds_creation: bool


_SCHEDULERS = {
    VOLCANO: Scheduler(VOLCANO, "volcano", VOLCANO_PODGROUPS, holds_creation=True),
    SCHEDULER_PLUGINS: Scheduler(
        SCHEDULER_PLUGINS,
        "scheduler-plugins-scheduler",
        SCHEDULER_PLUGINS_PODGROUPS,
        holds_creation=False,
    ),
}


def scheduler_for(name: str) -> Scheduler | None:
    """The gang scheduler called ``name`` (None for ``""``: no gang scheduling).

    Raises:
        ConfigError: an unknown scheduler name.
    """
    if not name:
        return None
    found = _SCHEDULERS.get(name)
    if found is None:
        known = ", ".join(sorted(_SCHEDULERS))
        msg = f"unknown gang scheduler {name!r}; use one of {known} or leave it empty"
        raise ConfigError(msg)
    return found


@dataclass(frozen=True, slots=True)
class GangMember:
    """The pods of one replica type, as the gang counts them.

    Attributes:
        replica_type: the replica type.
        template: its pod template.
        pods: how many pods it wants.
    """

    replica_type: str
    template: Mapping[str, Any]
    pods: int

    @property
    def priority_class(self) -> str:
        """The template's ``spec.priorityClassName`` (empty when unset)."""
        spec = self.template.get("spec")
        value = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
        return value if isinstance(value, str) else ""


def min_member(policy: RunPolicy, members: Sequence[GangMember]) -> int:
    """``minAvailable``, else every pod the job wants."""
    scheduling = policy.scheduling_policy
    if scheduling is not None and scheduling.min_available is not None:
        return scheduling.min_available
    return sum(max(member.pods, 0) for member in members)


def _requests(container: Mapping[str, Any]) -> dict[str, str | int]:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    requests = resources.get("requests")
    limits = resources.get("limits")
    out: dict[str, str | int] = {}
    if isinstance(limits, Mapping):
        out.update({str(k): v for k, v in limits.items() if isinstance(v, str | int)})
    if isinstance(requests, Mapping):
        out.update({str(k): v for k, v in requests.items() if isinstance(v, str | int)})
    return out


def min_resources(
    policy: RunPolicy,
    members: Sequence[GangMember],
    *,
    minimum: int,
    priorities: Mapping[str, int],
) -> dict[str, str]:
    """The PodGroup's ``minResources`` (see the module docstring).

    Args:
        policy: the job's run policy.
        members: the replica types in the job's order.
        minimum: ``minMember``.
        priorities: PriorityClass values by name.

    Raises:
        ConfigError: a request or a minResources value is not a quantity.
    """
    try:
        scheduling = policy.scheduling_policy
        if scheduling is not None and scheduling.min_resources:
            return ResourceList(scheduling.min_resources).to_dict()
        ranked = sorted(
            enumerate(members),
            key=lambda item: (-priorities.get(item[1].priority_class, 0), item[0]),
        )
        total = ResourceList()
        counted = 0
        for _, member in ranked:
            for _ in range(max(member.pods, 0)):
                if counted >= minimum:
                    return total.to_dict()
                counted += 1
                for container in pod_containers(member.template):
                    total.add(_requests(container))
        return total.to_dict()
    except QuantityError as exc:
        raise ConfigError(f"gang scheduling: {exc}") from exc


def build_podgroup(
    scheduler: Scheduler,
    *,
    job: ObjectView,
    owner_ref: Mapping[str, Any],
    policy: RunPolicy,
    minimum: int,
    resources: Mapping[str, str],
) -> KubeObject:
    """The PodGroup of a job (named after it, in its namespace, controlled by it)."""
    metadata = job.get("metadata")
    meta = metadata if isinstance(metadata, Mapping) else {}
    annotations = meta.get("annotations")
    copied = {
        str(k): str(v)
        for k, v in (annotations.items() if isinstance(annotations, Mapping) else ())
        if k != _LAST_APPLIED
    }
    scheduling = policy.scheduling_policy
    spec: dict[str, Any] = {"minMember": minimum}
    if resources:
        spec["minResources"] = dict(resources)
    if scheduler.name == VOLCANO:
        spec["queue"] = (scheduling.queue if scheduling else None) or "default"
        if scheduling is not None and scheduling.priority_class:
            spec["priorityClassName"] = scheduling.priority_class
    elif scheduling is not None and scheduling.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = scheduling.schedule_timeout_seconds
    group_meta: dict[str, Any] = {
        "name": str(meta.get("name") or ""),
        "namespace": str(meta.get("namespace") or ""),
        "ownerReferences": [dict(owner_ref)],
    }
    if copied:
        group_meta["annotations"] = copied
    return {
        "apiVersion": scheduler.podgroups.api_version,
        "kind": scheduler.podgroups.kind,
        "metadata": group_meta,
        "spec": spec,
    }


def _same_resources(live: object, wanted: object) -> bool:
    if not isinstance(live, Mapping) or not isinstance(wanted, Mapping):
        return live == wanted or (not live and not wanted)
    try:
        return ResourceList(dict(live)) == ResourceList(dict(wanted))
    except QuantityError:
        return False


def podgroup_patch(
    live: ObjectView, desired: ObjectView, *, keep_queue: bool
) -> dict[str, Any] | None:
    """A merge patch bringing ``live``'s spec fields to ``desired``'s, or None when in line.

    Only the fields the controller sets are compared (the scheduler owns the rest); quantities
    compare by value. ``keep_queue`` leaves a queue the live group already has alone.
    """
    live_spec = live.get("spec")
    have = live_spec if isinstance(live_spec, Mapping) else {}
    want = desired.get("spec")
    wanted = want if isinstance(want, Mapping) else {}
    changes: dict[str, Any] = {}
    for key, value in wanted.items():
        if key == "queue" and keep_queue and have.get("queue"):
            continue
        if key == "minResources":
            if not _same_resources(have.get(key), value):
                changes[key] = value
        elif have.get(key) != value:
            changes[key] = value
    return {"spec": changes} if changes else None


def is_admitted(scheduler: Scheduler, podgroup: ObjectView | None) -> bool:
    """True when pods of the group may be created now."""
    if not scheduler.holds_creation:
        return True
    if podgroup is None:
        return False
    status = podgroup.get("status")
    phase = status.get("phase") if isinstance(status, Mapping) else None
    return isinstance(phase, str) and phase not in ("", "Pending")


def decorate_pod(
    scheduler: Scheduler, pod: KubeObject, *, job_name: str, replica_type: str
) -> bool:
    """Bind ``pod`` to the job's group; False when its template names another scheduler."""
    spec = pod.setdefault("spec", {})
    own = spec.get("schedulerName")
    bound = not own or own == scheduler.scheduler_name
    if not own:
        spec["schedulerName"] = scheduler.scheduler_name
    metadata = pod.setdefault("metadata", {})
    if scheduler.name == VOLCANO:
        annotations = metadata.setdefault("annotations", {})
        annotations[_VOLCANO_GROUP_ANNOTATION] = job_name
        annotations[_VOLCANO_TASK_ANNOTATION] = replica_type
    else:
        metadata.setdefault("labels", {})[_PLUGINS_GROUP_LABEL] = job_name
    return bound
