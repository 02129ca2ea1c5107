"""Binding a pod to a node: what ``POST pods/<name>/binding`` does (the scheduler's write).

The pod gets ``spec.nodeName``, the annotations of the Binding and a ``PodScheduled=True``
condition, in one commit. A pod that is already bound, being deleted, or whose uid does not
match the binding's precondition is refused with a 409, as the real registry refuses it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from etctl.errors import ApiError
from etctl.runtime import KubeObject
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.state import ServerState

__all__ = ["bind_pod"]


def bind_pod(
    state: ServerState,
    name: str,
    node_name: str,
    *,
    namespace: str,
    uid: str | None = None,
    annotations: Mapping[str, str] | None = None,
    dry_run: bool = False,
) -> KubeObject:
    """Assign a pod to a node (``POST pods/<name>/binding``), as the scheduler does.

    Sets ``spec.nodeName``, the binding's annotations and the ``PodScheduled`` condition.

    Raises:
        etctl.errors.NotFound: no such pod.
        etctl.errors.Conflict: the pod is already assigned, being deleted, or its uid differs.
    """
    info = state.registry.get("", "pods")
    assert info is not None
    existing = state.load(info, namespace, name)
    meta, spec = existing["metadata"], existing.get("spec") or {}

    def refuse(detail: str) -> ApiError:
        return st.conflict("", "pods/binding", name, detail)

    if uid and meta.get("uid") != uid:
        found = meta.get("uid")
        raise refuse(
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {found}"
        )
    if meta.get("deletionTimestamp"):
        raise refuse(f"pod {name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise refuse(f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    pod = copy.deepcopy(existing)
    pod["spec"]["nodeName"] = node_name
    if annotations:
        pod["metadata"].setdefault("annotations", {}).update(annotations)
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": state.now(),
        }
    )
    status["conditions"] = conditions
    if dry_run:
        return pod
    event = state.store.commit(info.key, state.key(info, namespace, name), pod)
    assert event is not None
    return event.object
