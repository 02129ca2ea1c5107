"""Extra children of a job: create, keep in line, prune (step 7 of the reconcile).

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
be created or compared.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from etctl.common._api import ReplicatedJob
from etctl.common._control import ChildControl, ChildReader
from etctl.common._labels import job_selector
from etctl.common._plugin import BuildsExtraObjects, DesiredObject, SyncPolicy
from etctl.common._round import Round
from etctl.common._tracking import child_key
from etctl.errors import EtctlError
from etctl.runtime import KubeObject, objects

__all__ = ["ExtraObjectSync", "drift"]

JobT = TypeVar("JobT", bound=ReplicatedJob)

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


class ExtraObjectSync(Generic[JobT]):
    """Step 7 of the reconcile for one job kind (see the module docstring).

    Args:
        builder: the plugin's extra-object capability.
        control: writes children.
        reader: the cache (to spot objects the job does not control).
    """

    def __init__(
        self, builder: BuildsExtraObjects[Any], control: ChildControl, reader: ChildReader
    ) -> None:
        self._builder = builder
        self._control = control
        self._reader = reader

    async def run(self, rnd: Round[JobT], *, prune: bool = True) -> None:
        """Create, sync and (unless ``prune`` is False) prune the job's extra objects."""
        desired = list(self._builder.extra_objects(rnd.job, rnd.state()))
        wanted = {(d.resource, d.name) for d in desired}

        async def one(item: DesiredObject) -> None:
            try:
                await self._one(rnd, item)
            except EtctlError as exc:
                rnd.errors.append(exc)

        # Independent objects: written at once, so a job's few extra objects cost one round trip.
        async with asyncio.TaskGroup() as group:
            for index, item in enumerate(desired):
                group.create_task(one(item), name=f"extra-{rnd.name}-{index}")
        if not prune:
            return
        for res in self._builder.owned_resources:
            for obj in rnd.extras.get(res, []):
                if (res, objects.name(obj)) in wanted or objects.is_terminating(obj):
                    continue
                key = child_key(rnd.namespace, rnd.name, rnd.uid, res)
                try:
                    await self._control.delete(rnd.raw, res, obj, key=key)
                except EtctlError as exc:
                    rnd.errors.append(exc)

    def _finish(self, rnd: Round[JobT], item: DesiredObject) -> KubeObject:
        obj = dict(item.build())
        obj.setdefault("apiVersion", item.resource.api_version)
        obj.setdefault("kind", item.resource.kind)
        metadata = dict(obj.get("metadata") or {})
        labels = {**dict(metadata.get("labels") or {}), **self._labels(rnd)}
        metadata.update(
            name=item.name,
            namespace=rnd.namespace,
            labels=labels,
            ownerReferences=[dict(rnd.owner_ref)],
        )
        obj["metadata"] = metadata
        return obj

    def _labels(self, rnd: Round[JobT]) -> dict[str, str]:
        return job_selector(rnd.name, rnd.settings.operator_name)

    async def _one(self, rnd: Round[JobT], item: DesiredObject) -> None:
        owned = {objects.name(obj): obj for obj in rnd.extras.get(item.resource, [])}
        live = owned.get(item.name)
        if live is not None:
            if item.policy is SyncPolicy.SYNC and not objects.is_terminating(live):
                patch = drift(_comparable(live), _comparable(self._finish(rnd, item)))
                if patch:
                    await self._control.patch(rnd.raw, item.resource, live, patch)
            return
        if self._foreign(rnd, item):
            return
        key = child_key(rnd.namespace, rnd.name, rnd.uid, item.resource)
        created = await self._control.create(
            rnd.raw, item.resource, self._finish(rnd, item), key=key
        )
        if created is not None:
            rnd.extras.setdefault(item.resource, []).append(created)

    def _foreign(self, rnd: Round[JobT], item: DesiredObject) -> bool:
        owner = f"{rnd.kind} {rnd.name}"
        return self._control.name_taken(
            self._reader, rnd.raw, item.resource, item.name, owner=owner
        )
