"""Keeping a job's PodGroup in line (step 6 of the reconcile) and removing it when it is done.

:class:`PodGroupSync` creates the PodGroup :mod:`etctl.common._gang` describes when it is missing,
patches the fields the controller sets when they drifted (comparing quantities by value and never
the live object against itself, kubeflow's ``SyncPodGroup`` bug), and answers whether pods may be
created now (volcano: once the group is admitted). A PodGroup of the job's name that the job does
not control is never touched (a Warning ``ErrResourceExists`` event) and holds pod creation, since
the pods would join a stranger's gang.

The PodGroup is deleted when the job finishes, is suspended, or fails on its deadline or backoff
limit (``SuccessfulDeletePodGroup``).
"""

from __future__ import annotations

from typing import Any

from etctl.common import _gang as gang
from etctl.common._control import ChildControl, ChildReader
from etctl.common._round import Round
from etctl.errors import ConfigError, EtctlError
from etctl.runtime import PRIORITYCLASSES, objects

__all__ = ["PodGroupSync"]


class PodGroupSync:
    """Creates, patches and deletes the PodGroups of one job kind's jobs.

    Args:
        scheduler: the gang scheduler.
        control: writes the PodGroups.
        reader: the cache (PodGroups and PriorityClasses are read from it).
    """

    def __init__(
        self, scheduler: gang.Scheduler, control: ChildControl, reader: ChildReader
    ) -> None:
        self.scheduler = scheduler
        self._control = control
        self._reader = reader

    def observe(self, rnd: Round[Any]) -> None:
        """Record the job's PodGroup in the round, if the job controls one."""
        found = self._reader.get(self.scheduler.podgroups, rnd.name, namespace=rnd.namespace)
        if found is not None and objects.controller_ref(found) == rnd.uid:
            rnd.podgroup = found

    async def sync(self, rnd: Round[Any]) -> bool:
        """Create or patch the PodGroup; True when the job's pods may be created now."""
        try:
            desired = self._desired(rnd)
        except ConfigError as exc:
            rnd.fail(f"{rnd.kind}Invalid", f"{rnd.kind} {rnd.name} is invalid: {exc}")
            return False
        res = self.scheduler.podgroups
        live = rnd.podgroup
        try:
            if live is None:
                if self._foreign(rnd):
                    return False
                live = await self._control.create(rnd.raw, res, desired, key=None)
                if live is None:
                    return False
                rnd.podgroup = live
            else:
                policy = rnd.job.run_policy().scheduling_policy
                keep_queue = policy is None or not policy.queue
                patch = gang.podgroup_patch(live, desired, keep_queue=keep_queue)
                if patch is not None:
                    live = await self._control.patch(rnd.raw, res, live, patch)
                    rnd.podgroup = live
        except EtctlError as exc:
            rnd.errors.append(exc)
            return False
        return gang.is_admitted(self.scheduler, live)

    async def delete(self, rnd: Round[Any]) -> None:
        """Delete the job's PodGroup, if it has one."""
        if rnd.podgroup is None:
            return
        try:
            await self._control.delete(rnd.raw, self.scheduler.podgroups, rnd.podgroup, key=None)
        except EtctlError as exc:
            rnd.errors.append(exc)
            return
        rnd.podgroup = None

    def _desired(self, rnd: Round[Any]) -> dict[str, Any]:
        policy = rnd.job.run_policy()
        members = [
            gang.GangMember(rtype, spec.template, spec.replicas)
            for rtype, spec in rnd.specs.items()
        ]
        minimum = gang.min_member(policy, members)
        priorities = self._priorities(members)
        resources = gang.min_resources(policy, members, minimum=minimum, priorities=priorities)
        return gang.build_podgroup(
            self.scheduler,
            job=rnd.raw,
            owner_ref=rnd.owner_ref,
            policy=policy,
            minimum=minimum,
            resources=resources,
        )

    def _priorities(self, members: list[gang.GangMember]) -> dict[str, int]:
        out: dict[str, int] = {}
        for member in members:
            name = member.priority_class
            if not name or name in out:
                continue
            found = self._reader.get(PRIORITYCLASSES, name)
            value = found.get("value") if found is not None else None
            out[name] = value if isinstance(value, int) and not isinstance(value, bool) else 0
        return out

    def _foreign(self, rnd: Round[Any]) -> bool:
        existing = self._reader.get(self.scheduler.podgroups, rnd.name, namespace=rnd.namespace)
        if existing is None:
            return False
        self._control.recorder.event(
            rnd.raw,
            "Warning",
            "ErrResourceExists",
            f"podgroup {rnd.name} already exists and is not controlled by {rnd.kind} {rnd.name}; "
            "pods are not created until it is gone",
        )
        return True
