"""Building the pod of a slot from its replica spec (pure).

:func:`build_pod` turns a replica's pod template into the pod of one slot, in kubeflow's order:

1. the template is deep-copied (a model's template is never aliased into a pod);
2. name ``<job>-<type lower>-<index>`` (or the plugin's planned name) and the job's namespace;
3. the template's labels plus the slot's labels (``job-name``, ``operator-name``,
   ``replica-type`` in lower case, ``replica-index``), which win over the template's;
4. a controller ``ownerReference`` to the job with ``blockOwnerDeletion``;
5. ``spec.restartPolicy`` from the replica spec (``ExitCode`` runs as ``Never``). A template that
   set a restart policy of its own is overridden, and :class:`PodDraft` says so, so the controller
   can warn (event ``SetPodTemplateRestartPolicy``) as kubeflow does.

Gang-scheduling decoration (:mod:`etctl.common._gang`) and the plugin's ``decorate_pod`` are applied
afterwards by the caller, so the plugin sees (and may rely on) everything above.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from etctl.common._api import ReplicaSpec
from etctl.common._labels import replica_labels
from etctl.common._plugin import ReplicaRef
from etctl.common._restarts import pod_restart_policy
from etctl.runtime import KubeObject

__all__ = ["PodDraft", "build_pod"]


@dataclass(slots=True)
class PodDraft:
    """A pod being built, and what the build had to override.

    Attributes:
        pod: the pod object (mutable until it is sent).
        overrode_restart_policy: the template's own ``restartPolicy`` was replaced.
    """

    pod: KubeObject
    overrode_restart_policy: bool


def _mapping(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def build_pod(
    *,
    job_name: str,
    namespace: str,
    owner_ref: Mapping[str, Any],
    ref: ReplicaRef,
    spec: ReplicaSpec,
    operator_name: str,
) -> PodDraft:
    """The pod of slot ``ref`` from ``spec``'s template (see the module docstring).

    Args:
        job_name: the job's name (labels).
        namespace: the job's namespace.
        owner_ref: the job's controller owner reference.
        ref: the slot.
        spec: the replica spec of ``ref.replica_type``.
        operator_name: the ``operator-name`` label value.
    """
    template = copy.deepcopy(dict(spec.template))
    metadata = _mapping(template, "metadata")
    pod_spec = _mapping(template, "spec")
    labels = {str(k): str(v) for k, v in _mapping(metadata, "labels").items()}
    labels.update(replica_labels(job_name, operator_name, ref.replica_type, ref.index))
    annotations = _mapping(metadata, "annotations")
    pod_metadata: dict[str, Any] = {
        "name": ref.name,
        "namespace": namespace,
        "labels": labels,
        "ownerReferences": [dict(owner_ref)],
    }
    if annotations:
        pod_metadata["annotations"] = annotations
    wanted = pod_restart_policy(spec.restart_policy)
    overrode = bool(pod_spec.get("restartPolicy")) and pod_spec.get("restartPolicy") != wanted
    pod_spec["restartPolicy"] = wanted
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": pod_spec}
    return PodDraft(pod=pod, overrode_restart_policy=overrode)
