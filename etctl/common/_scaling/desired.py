"""The desired worker count of an elastic job: what ``/scale`` reads and writes.

:class:`DesiredCount` writes the count a finished scaler leaves (so a user's scaler and ``/scale``
never fight), and, with no scaler in flight, follows what a user or an autoscaler wrote: a count
outside ``[minReplicas, maxReplicas]``, or above the most workers whose names fit 63 characters
(the kind's ``name_rule``: the job grows as far as names fit, never all or nothing), is written
back clamped (Warning ``ReplicasClamped``, saying which limit), and a count that differs from the
job's size creates ``<job>-replicas-<generation>``, a ScaleOut or
ScaleIn owned by the job (for a kind other than the scalers' default, its selector names the kind
and so does its name, ``<job>-<kind>-replicas-<generation>``), which then runs like any other. A
failed one is not created again: set the replicas again to retry.
"""

from __future__ import annotations

from typing import Any

from etctl.common._ledger import Recorder, WriteLedger
from etctl.common._scaling import membership
from etctl.common._scaling.api import SCALEINS, SCALEOUTS, ScalerSelector
from etctl.common._scaling.observe import Observation
from etctl.common._scaling.selection import clamp
from etctl.runtime import CacheReader, KubeObject, Resource, objects

__all__ = ["DesiredCount"]


class DesiredCount:
    """Writes and follows the desired worker count of one elastic job kind.

    Args:
        kind: the job kind.
        jobs: the job resource.
        cache: the informer cache (scalers made for a generation already).
        writer: reads and writes (the scalers it creates are followed until the cache shows them).
        recorder: where Events go.
    """

    def __init__(
        self,
        *,
        kind: str,
        jobs: Resource,
        cache: CacheReader,
        writer: WriteLedger,
        recorder: Recorder,
    ) -> None:
        self.kind = kind
        self.jobs = jobs
        self._cache = cache
        self._writer = writer
        self._recorder = recorder

    async def write(self, seen: Observation, replicas: int) -> None:
        """Write ``replicas`` to the job's desired worker count, guarded by the count read.

        Not by the job's version: the job's status writes, of both its writers, are no conflict,
        while a user's or an autoscaler's change of the count since it was read is.
        """
        path = seen.elasticity.replicas_path
        seen.refresh(await self._writer.patch_field(self.jobs, seen.raw, path, replicas))

    async def sync(self, seen: Observation) -> None:
        """With no scaler in flight, clamp the desired count or create the scaler it asks for."""
        elastic = seen.elasticity
        if not elastic.ready or any(not o.scaler.status.finished() for o in seen.scalers):
            return
        size = len(seen.view.targets)
        desired, bound = _clamped(seen, size)
        if desired != elastic.replicas:
            message = (
                f"replicas {elastic.replicas} of {self.kind} {seen.name} is {bound}; "
                f"set to {desired}"
            )
            await self.write(seen, desired)
            self._recorder.event(seen.raw, "Warning", "ReplicasClamped", message)
            return
        if desired == size:
            return
        if self._writer.pending(objects.uid(seen.raw)) is not None:
            return  # a scaler created for the job is not in the cache yet: its event comes
        name = _replicas_scaler_name(seen, self.jobs)
        for res in (SCALEOUTS, SCALEINS):
            if self._cache.get(res, name, namespace=seen.namespace) is not None:
                return  # made for this generation already (a failed one is not retried)
        scaler = _replicas_scaler(seen, name, desired - size, self.jobs)
        res = SCALEOUTS if desired > size else SCALEINS
        if await self._writer.create(seen.raw, res, scaler, record=False) is None:
            return  # the name is taken: made already, or not ours to touch
        message = (
            f"replicas of {self.kind} {seen.name} changed from {size} to {desired}: "
            f"created {res.kind} {name}"
        )
        self._recorder.event(seen.raw, "Normal", "ScalerCreated", message)


def _clamped(seen: Observation, size: int) -> tuple[int, str]:
    """The desired count within the job's bounds and its names' room, and which limit it met.

    Growth past ``size`` takes new names after the highest index used; only those of at most
    63 characters can be had, so the job grows as far as they go.
    """
    elastic = seen.elasticity
    wanted = elastic.replicas
    desired = clamp(wanted, elastic.min_replicas, elastic.max_replicas)
    if desired < wanted:
        bound = f"above maxReplicas {elastic.max_replicas}"
    else:
        bound = f"below minReplicas {elastic.min_replicas}"
    if desired > size:
        prefix = elastic.member_prefix
        view = seen.view
        highest = membership.highest_fitting(prefix)
        room = size + max(highest - membership.high_water(prefix, view.last_index, view.targets), 0)
        if desired > room:
            member = elastic.replica_type.lower()
            longest = membership.member_name(prefix, highest) if highest >= 0 else prefix
            desired = room
            bound = (
                f"more than its {member} names allow: {member}s past {longest} would have names "
                f"over {membership.NAME_MAX_LENGTH} characters ({elastic.name_rule}; a shorter "
                "job name leaves room for more)"
            )
    return desired, bound


def _replicas_scaler_name(seen: Observation, jobs: Resource) -> str:
    """The name of the scaler ``/scale`` makes for the job's generation.

    ``<job>-replicas-<generation>``, with the kind in it for a kind the scalers do not default to
    (``<job>-mpijob-replicas-<generation>``): jobs of two kinds may share a name, and one's scaler
    must never pass for the other's.
    """
    generation = objects.generation(seen.raw)
    if ScalerSelector(name=seen.name).names(jobs):
        return f"{seen.name}-replicas-{generation}"
    return f"{seen.name}-{jobs.kind.lower()}-replicas-{generation}"


def _replicas_scaler(seen: Observation, name: str, change: int, jobs: Resource) -> KubeObject:
    owner = objects.make_controller_ref(seen.raw, jobs)
    selector: dict[str, Any] = {"name": seen.name}
    if not ScalerSelector(name=seen.name).names(jobs):
        selector.update(kind=jobs.kind, apiGroup=jobs.group)  # not the scalers' default kind
    spec: dict[str, Any] = {"selector": selector}
    if change > 0:
        kind = "ScaleOut"
        spec["toAdd"] = {"count": change}
    else:
        kind = "ScaleIn"
        spec["toDelete"] = {"count": -change}
    return {
        "apiVersion": SCALEOUTS.api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": seen.namespace, "ownerReferences": [owner]},
        "spec": spec,
    }
