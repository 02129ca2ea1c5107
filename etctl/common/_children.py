"""Extra children of a job: wanted, kept in line, pruned (step 7 of the reconcile).

A :class:`~etctl.common.BuildsExtraObjects` plugin names the extra objects it wants
(ConfigMaps, Secrets, ServiceAccounts, Roles...) as :class:`~etctl.common.DesiredObject`
values. Each is independent of the others and they are written at once (a failure of one does not
stop the others; every failure is recorded); for each:

* **missing**: built and created, with the job's namespace, selector labels and controller owner
  reference added (so claiming and garbage collection treat it like a pod);
* **present, policy SYNC**: rebuilt and compared on the fields the plugin sets, and only those
  (labels and annotations key by key, the rest of the object field by field; lists compare
  whole); a drift is patched back with a merge patch of exactly the drifted fields, and fields
  the plugin does not set (defaults the API server added, another controller's annotations) are
  never touched;
* **present, policy CREATE**: left alone forever (generated keys must not be regenerated);
* an object of that name the job does not control: never touched, a Warning ``ErrResourceExists``
  event says so.

Owned objects of the plugin's ``owned_resources`` that it no longer wants are deleted, except
while the job is suspended: a suspended job keeps the extra children it has and gets the ones
its kind wants (mpi-operator creates a suspended MPIJob's Service, ConfigMap and ssh Secret, so
they are in place when Kueue admits it); only its pods go. ``build`` runs only when an object must
be created or compared. A ``with_pods`` object is written at the same time as the replicas
step's first stage (the pods' deletes, or their creation), the others before it.

:func:`extras_step` says all of this as writes (creates and patches at once, then the prunes one
after another) for the applier; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etctl.common._labels import job_selector
from etctl.common._ledger import WriteLedger
from etctl.common._observe import Observed
from etctl.common._plan import Create, Delete, JobEvent, Stage, Step, Update, Write
from etctl.common._plugin import BuildsExtraObjects, DesiredObject, JobState, SyncPolicy
from etctl.runtime import KubeObject, objects

__all__ = ["drift", "extras_step"]

_METADATA_COMPARED = ("labels", "annotations")


def drift(live: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch setting every field of ``wanted`` that differs in ``live`` (see above)."""
    patch: dict[str, Any] = {}
    for key, value in wanted.items():
        current = live.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            nested = drift(current, value)
            if nested:
                patch[key] = nested
        elif current != value:
            patch[key] = value
    return patch


def _comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind", "status")}
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        kept = {k: metadata[k] for k in _METADATA_COMPARED if k in metadata}
        if kept:
            out["metadata"] = kept
    return out


def _finish(seen: Observed[Any], item: DesiredObject) -> KubeObject:
    obj = dict(item.build())
    obj.setdefault("apiVersion", item.resource.api_version)
    obj.setdefault("kind", item.resource.kind)
    metadata = dict(obj.get("metadata") or {})
    labels = {
        **dict(metadata.get("labels") or {}),
        **job_selector(seen.name, seen.settings.operator_name),
    }
    metadata.update(
        name=item.name,
        namespace=seen.namespace,
        labels=labels,
        ownerReferences=[dict(seen.owner_ref)],
    )
    obj["metadata"] = metadata
    return obj


def extras_step(
    seen: Observed[Any],
    builder: BuildsExtraObjects[Any],
    state: JobState[Any],
    ledger: WriteLedger,
    *,
    prune: bool = True,
) -> Step:
    """The extra children wanted now, kept in line, and (unless ``prune`` is False) pruned."""
    desired = list(builder.extra_objects(seen.job, state))
    wanted = {(d.resource, d.name) for d in desired}
    writes: list[Write] = []
    with_pods: list[Write] = []
    events: list[JobEvent] = []
    owner = f"{seen.kind} {seen.name}"
    for item in desired:
        owned = {objects.name(obj): obj for obj in seen.extras.get(item.resource, ())}
        live = owned.get(item.name)
        batch = with_pods if item.with_pods else writes
        if live is not None:
            if item.policy is SyncPolicy.SYNC and not objects.is_terminating(live):
                patch = drift(_comparable(live), _comparable(_finish(seen, item)))
                if patch:
                    batch.append(Update(item.resource, live, patch))
            continue
        if ledger.taken(seen.raw, item.resource, item.name):
            events.append(ledger.taken_event(item.resource, item.name, owner))
            continue
        batch.append(Create(item.resource, _finish(seen, item)))
    stages = [Stage("concurrent", tuple(writes), name="extra", events=tuple(events))]
    if prune:
        gone = [
            Delete(res, obj)
            for res in builder.owned_resources
            for obj in seen.extras.get(res, ())
            if (res, objects.name(obj)) not in wanted and not objects.is_terminating(obj)
        ]
        if gone:
            stages.append(Stage("sequential", tuple(gone), name="prune"))
    if with_pods:
        # Last, so it joins the replicas step's first stage (the pods' deletes or creates).
        stages.append(
            Stage("concurrent", tuple(with_pods), name="extra-with-pods", joins_next=True)
        )
    return Step(stages=tuple(stages))
