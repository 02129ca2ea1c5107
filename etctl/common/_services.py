"""Finishing the service a plugin builds for a slot (pure).

A :class:`~etctl.common.BuildsServices` plugin returns the service of a slot with what is
particular to its kind (ports, headless or not). :func:`finish_service` adds what every child of a
job has, so a plugin cannot get it wrong:

* name (the slot's name unless the plugin chose one) and the job's namespace;
* the slot's labels (the plugin's labels are kept, the slot's win);
* a controller ``ownerReference`` to the job;
* ``spec.selector`` selecting exactly the slot's pod (its ``job-name``, ``operator-name``,
  ``replica-type`` and ``replica-index`` labels) unless the plugin set a selector itself.

The service is deep-copied first: a plugin may return a shared constant.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from etctl.common._labels import replica_labels
from etctl.common._plugin import ReplicaRef
from etctl.runtime import KubeObject, ObjectView

__all__ = ["finish_service"]


def finish_service(
    service: ObjectView,
    *,
    job_name: str,
    namespace: str,
    owner_ref: Mapping[str, Any],
    ref: ReplicaRef,
    operator_name: str,
) -> KubeObject:
    """The plugin's service of slot ``ref`` with the job's name, labels and owner reference."""
    out: KubeObject = copy.deepcopy(dict(service))
    out.setdefault("apiVersion", "v1")
    out.setdefault("kind", "Service")
    metadata = out.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    slot_labels = replica_labels(job_name, operator_name, ref.replica_type, ref.index)
    given = metadata.get("labels")
    labels = {**(given if isinstance(given, dict) else {}), **slot_labels}
    metadata.update(
        name=metadata.get("name") or ref.name,
        namespace=namespace,
        labels=labels,
        ownerReferences=[dict(owner_ref)],
    )
    out["metadata"] = metadata
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        out["spec"] = spec
    if not spec.get("selector"):
        spec["selector"] = dict(slot_labels)
    return out
