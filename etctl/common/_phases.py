"""The phases of a job kind, run by the framework in one order, with its defaults.

:class:`Phases` is a plugin as the reconcile calls it: each phase is the plugin's method when it
has one (detected once, :class:`~etctl.common.Capabilities`), else the framework's default. The
controller runs them in this order (the table of docs/plugins.md):

1. **validate and default** (:meth:`Phases.validate`): the model parsed the job with its defaults;
   a :class:`~etctl.common.JobModel` kind's generic checks, then the kind's ``validate``. The
   admission webhook calls the same method, so a manifest is refused at the door with the words
   its condition would have used.
2. **plan replicas** (:meth:`Phases.plan`): every replica type's slots, indices ``0..replicas-1``
   by default and an elastic kind's members for its elastic type
   (:func:`~etctl.common._scaling.elastic.member_slots`), handed to the kind's ``plan``, which
   may rename, limit or gate them.
3. **build desired objects**: pods from the template, decorated by the kind's ``decorate_pod``
   (:meth:`Phases.decorate_pod`); its ``build_service`` and ``extra_objects`` when it has them.
4. **judge the outcome** (:meth:`Phases.judge`): the kind's ``verdict``, else
   :func:`judge_replicas`; ``restarts_on_failure`` says whether a failure restarts the whole job.
5. **extend status** (:meth:`Phases.extend_status`): the kind's own status fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from etctl.common._api import ReplicatedJob, RestartPolicy
from etctl.common._jobmodel import JobModel
from etctl.common._plugin import (
    BuildsExtraObjects,
    BuildsServices,
    Capabilities,
    JobPlugin,
    JobState,
    ReplicaRef,
    Replicas,
    Verdict,
)
from etctl.common._scaling.elastic import member_slots
from etctl.common._slots import default_plan
from etctl.runtime import KubeObject

__all__ = ["Phases", "judge_replicas"]

JobT = TypeVar("JobT", bound=ReplicatedJob)


def judge_replicas(kind: str, job: ReplicatedJob, state: JobState[Any]) -> Verdict | None:
    """The default judgement of a job from its replica statuses.

    Failed once a replica type whose pods are never restarted (restartPolicy Never) has a failed
    pod; Succeeded once every type has as many completions as planned pods; Running while a pod
    runs; None (nothing new) otherwise.
    """
    who = f"{kind} {job.metadata.name}"
    specs = job.replica_specs()
    for rtype, spec in specs.items():
        counts = state.replica_statuses.get(rtype)
        if counts and counts.failed and spec.restart_policy is RestartPolicy.NEVER:
            message = f"{who} failed: {counts.failed} {rtype} pod(s) failed"
            return Verdict.failed(f"{kind}Failed", message)
    if specs and all(
        (counts := state.replica_statuses.get(rtype)) is not None
        and counts.succeeded >= state.replicas(rtype)
        for rtype in specs
    ):
        return Verdict.succeeded(f"{kind}Succeeded", f"{who} succeeded")
    if any(counts.active for counts in state.replica_statuses.values()):
        return Verdict.running(f"{kind}Running", f"{who} is running")
    return None


class Phases(Generic[JobT]):
    """The phases of one job kind (see the module docstring).

    Args:
        plugin: the job kind.
        capabilities: its phases and capabilities (detected from ``plugin`` when not given).
    """

    def __init__(self, plugin: JobPlugin[JobT], capabilities: Capabilities | None = None) -> None:
        self.plugin = plugin
        self.capabilities = capabilities or Capabilities.of(plugin)
        self.kind = plugin.resource.kind
        caps = self.capabilities
        self.services: BuildsServices[Any] | None = caps.services
        self.extra_objects: BuildsExtraObjects[Any] | None = caps.extra_objects

    # 1. validate and default

    def validate(self, job: JobT) -> list[str]:
        """What makes ``job`` impossible to run: generic checks, then the kind's."""
        problems = job.problems() if isinstance(job, JobModel) else []
        validator = self.capabilities.validator
        if validator is not None:
            problems.extend(validator.validate(job))
        return problems

    # 2. plan replicas

    def plan(self, job: JobT, observed: Callable[[], JobState[Any]]) -> dict[str, Replicas]:
        """Every replica type's plan, in creation order.

        Args:
            job: the job.
            observed: the job's state as observed (built only when a plan needs it).
        """
        caps = self.capabilities
        elastic = caps.elastic
        elastic_type = elastic.elastic.replica_type if elastic is not None else None
        planner = caps.planner
        state = observed() if planner is not None or elastic is not None else None
        name = job.metadata.name
        plans: dict[str, Replicas] = {}
        for rtype, spec in job.replica_specs().items():
            if elastic is not None and state is not None and rtype == elastic_type:
                slots = member_slots(caps, elastic, job, state)
            else:
                slots = default_plan(name, rtype, spec.replicas)
            planned = Replicas(rtype, slots)
            if planner is not None and state is not None:
                planned = planner.plan(job, planned, state)
            plans[rtype] = planned
        return plans

    # 3. build desired objects

    def decorate_pod(
        self, job: JobT, pod: KubeObject, ref: ReplicaRef, state: JobState[Any]
    ) -> None:
        """The kind's particulars on a pod built from its template (nothing by default)."""
        decorator = self.capabilities.pods
        if decorator is not None:
            decorator.decorate_pod(job, pod, ref, state)

    # 4. judge the outcome

    def judge(self, job: JobT, state: JobState[Any]) -> Verdict | None:
        """The condition the outcome calls for: the kind's verdict, else :func:`judge_replicas`."""
        judge = self.capabilities.judge
        if judge is not None:
            return judge.verdict(job, state)
        return judge_replicas(self.kind, job, state)

    def restarts_on_failure(self, job: JobT) -> bool:
        """Whether a failure restarts the whole job (never by default)."""
        restart = self.capabilities.restart
        return restart is not None and restart.restarts_on_failure(job)

    # 5. extend status

    def extend_status(self, job: JobT, state: JobState[Any]) -> Mapping[str, Any]:
        """The kind's own status fields (none by default)."""
        extender = self.capabilities.status
        return extender.extend_status(job, state) if extender is not None else {}

    @property
    def extends_status(self) -> bool:
        """Whether the kind has status fields of its own."""
        return self.capabilities.status is not None
