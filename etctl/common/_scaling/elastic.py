"""An elastic job as the scaling machinery reads it, derived from the kind's small protocol.

A kind that :class:`~etctl.common.ScalesElastically` says three things: which replica type holds
the members and where its jobs record them (:class:`~etctl.common.ElasticMembers`), a job's bounds
and its members' restartPolicy (``member_policy(job)``), and, optionally, who consumes the
members (``consumer(job, state)``: a launcher) and how many its objects can hold
(``membership_problem``). :func:`read_elasticity` derives everything else the machinery needs,
the same way for every kind:

* the desired count is the elastic type's ``replicas``, at the CRD's ``/scale`` path
  (``specReplicasPath``), which ``kubectl scale`` and an HPA write;
* the members are read from the job's status fields (:func:`read_members`), named
  ``<job>-<type lower>-<index>``;
* the members are *in use* while the consumer runs and the job is not suspended (a suspension
  deletes every pod, a launcher last: workers it deleted first are no vanished members of a
  launcher that still runs, and the resumed job gets them back under their names); scalers start
  only then, and not once the job finished;
* members to replace follow the members' restartPolicy (:func:`workers_to_replace`);
* without a consumer, the members are in use while the job's ``Running`` condition holds,
  nothing needs delivering and no script runs.

The plan the job controller creates the elastic type's pods from (:func:`member_slots`) is the
persisted targets, less the members that vanished while the consumer runs (they are replaced under
new names, never brought back under their own).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from etctl.common._api import RestartPolicy
from etctl.common._conditions import is_finished, is_true
from etctl.common._crd import CustomResource
from etctl.common._members import MemberFields, Members
from etctl.common._plugin import (
    Capabilities,
    Consumer,
    ExecTarget,
    JobState,
    ReplicaRef,
    ScalesElastically,
)
from etctl.common._scaling.membership import member_index, planned
from etctl.errors import ConfigError
from etctl.runtime import ObjectView, objects, podview

__all__ = [
    "Elasticity",
    "member_plan",
    "member_prefix",
    "member_slots",
    "read_elasticity",
    "read_members",
    "replicas_path",
    "workers_to_replace",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Elasticity:
    """How an elastic job's members may be resized now (see the module docstring).

    Attributes:
        replica_type: the elastic replica type; its pods are the members.
        replicas: the member count the spec asks for (what ``/scale`` writes).
        replicas_path: where that count lives in the object, as JSON keys from the root.
        members: the members as the job records them, and the fields that hold them.
        min_replicas: the fewest members a scaler may leave.
        max_replicas: the most members a scaler may make (None: no limit).
        member_prefix: members are named ``<member_prefix><index>``.
        slots: slots per member in the host list a scaler's script receives.
        replace: members to replace under new names now.
        ready: scalers may start (the members are in use and the job has not finished).
        executor: where scalers' scripts run, or None when nothing runs there now.
        membership_delivered: the consumer holds the membership the status records.
        membership_in_use: the consumer runs and the job is not suspended.
        membership_problem: why the job's objects could not hold a membership of these names,
            or None when they can; None: no such limit.
        name_rule: why a member's name is at most 63 characters, as messages say it.
        fixed: why no scaler may ever resize the job (the kind's ``MemberPolicy.fixed``), or
            None.
    """

    replica_type: str
    replicas: int
    replicas_path: tuple[str, ...]
    members: Members | None = None
    min_replicas: int = 1
    max_replicas: int | None = None
    member_prefix: str
    slots: int = 1
    replace: frozenset[str] = frozenset()
    ready: bool = False
    executor: ExecTarget | None = None
    membership_delivered: bool = True
    membership_in_use: bool = True
    membership_problem: Callable[[Sequence[str]], str | None] | None = None
    name_rule: str = "a worker's name is a DNS label"
    fixed: str | None = None


def replicas_path(resource: CustomResource) -> tuple[str, ...]:
    """The JSON keys of the desired member count: the CRD's ``/scale`` ``specReplicasPath``.

    Raises:
        ConfigError: the kind's storage version has no scale subresource.
    """
    scale = resource.storage_version.scale
    if scale is None:
        msg = (
            f"{resource.kind}: an elastic kind needs a /scale subresource on its storage version "
            "(its specReplicasPath is where the member count lives)"
        )
        raise ConfigError(msg)
    return tuple(key for key in scale.spec_replicas_path.split(".") if key)


def member_prefix(job_name: str, replica_type: str) -> str:
    """``<job>-<type lower>-``: members are this plus their index."""
    return f"{job_name}-{replica_type.lower()}-"


_ALIASES: dict[type[BaseModel], dict[str, str]] = {}


def _json_fields(status: BaseModel) -> dict[str, str]:
    cls = type(status)
    found = _ALIASES.get(cls)
    if found is None:
        found = {(info.alias or name): name for name, info in cls.model_fields.items()}
        _ALIASES[cls] = found
    return found


def read_members(status: BaseModel, fields: MemberFields) -> Members:
    """The members a job's parsed ``status`` records in ``fields`` (JSON names)."""
    names = _json_fields(status)

    def value(json_name: str) -> Any:
        attribute = names.get(json_name)
        return getattr(status, attribute, None) if attribute is not None else None

    targets, current = value(fields.targets), value(fields.current)
    last, scaler = value(fields.last_index), value(fields.scaler)
    replaced = value(fields.replaced) if fields.replaced is not None else None
    return Members(
        fields=fields,
        targets=tuple(str(n) for n in targets) if isinstance(targets, list | tuple) else (),
        current=tuple(str(n) for n in current) if isinstance(current, list | tuple) else (),
        last_index=last if isinstance(last, int) and not isinstance(last, bool) else None,
        scaler=scaler if isinstance(scaler, str) and scaler else None,
        replaced=replaced if isinstance(replaced, int) and not isinstance(replaced, bool) else 0,
    )


def _replaced(policy: RestartPolicy, pod: ObjectView) -> bool:
    phase = podview.phase(pod)
    if policy is RestartPolicy.ALWAYS:
        return phase in ("Failed", "Succeeded", "Unknown")
    if phase != "Failed":
        return False
    if policy is RestartPolicy.ON_FAILURE:
        return True
    if policy is RestartPolicy.EXIT_CODE:
        code = podview.exit_code(pod)
        return code is None or 128 < code < 255
    return False


def workers_to_replace(
    policy: RestartPolicy,
    targets: Sequence[str],
    current: Collection[str],
    pods: Mapping[str, ObjectView],
    *,
    launcher_running: bool = True,
) -> frozenset[str]:
    """The targets to replace under new names now, following the elastic type's restartPolicy.

    ==========  =============================================================================
    Always      a worker that failed, succeeded or is Unknown; a member that vanished
    OnFailure   a worker that failed (evicted included); a member that vanished
    ExitCode    a worker that failed with exit code 129-254 or none (evicted, killed from
                outside: retryable); a member that vanished. 1-128 and 255 are the program's
                own verdict: the worker stays failed and leaves the membership
    Never       a member that vanished; a failed worker stays failed and leaves the membership
    ==========  =============================================================================

    A member *vanished* when its pod is gone or is being deleted by someone else while the
    consumer runs: no verdict of the program on itself, so every policy replaces it. While none
    runs, no consumer knows any name, and the job controller creates it again under its name.

    Args:
        policy: the worker replica's restartPolicy.
        targets: the job's targets.
        current: the job's members.
        pods: the job's worker pods by name.
        launcher_running: the consumer runs (only then is a vanished member replaced).
    """
    doomed = set()
    for name in targets:
        pod = pods.get(name)
        if pod is None or objects.is_terminating(pod):
            if name in current and launcher_running:
                doomed.add(name)
        elif _replaced(policy, pod):
            doomed.add(name)
    return frozenset(doomed)


def _consumer(caps: Capabilities, job: Any, state: JobState[Any]) -> Consumer:
    if caps.consumer is not None:
        return caps.consumer.consumer(job, state)
    return Consumer(running=is_true(job.status.conditions, "Running"))


def member_plan(
    prefix: str,
    targets: Sequence[str],
    current: Collection[str],
    present: Collection[str],
    *,
    running: bool,
    replica_type: str = "Worker",
) -> tuple[ReplicaRef, ...]:
    """The slots of the members: the targets, less the members that vanished while consumed.

    Args:
        prefix: members are ``<prefix><index>``.
        targets: the job's targets.
        current: the job's members.
        present: names of the job's member pods that exist.
        running: the consumer runs (only then is a vanished member left out: it is replaced
            under a new name rather than recreated under its own).
        replica_type: the members' replica type.
    """
    kept = planned(targets, current, present) if running else list(targets)
    refs = []
    for name in kept:
        index = member_index(prefix, name)
        refs.append(ReplicaRef(replica_type, index if index is not None else 0, name))
    return tuple(refs)


def member_slots(
    caps: Capabilities, elastic: ScalesElastically[Any], job: Any, state: JobState[Any]
) -> tuple[ReplicaRef, ...]:
    """The elastic type's slots (:func:`member_plan` of the job's recorded members)."""
    declared = elastic.elastic
    rtype = declared.replica_type
    members = read_members(job.status, declared.fields)
    return member_plan(
        member_prefix(job.metadata.name, rtype),
        members.targets,
        members.current,
        {objects.name(pod) for pod in state.pods_of(rtype)},
        running=_consumer(caps, job, state).running,
        replica_type=rtype,
    )


def read_elasticity(
    caps: Capabilities, resource: CustomResource, job: Any, state: JobState[Any]
) -> Elasticity:
    """The scaling machinery's view of ``job`` (see the module docstring).

    Raises:
        ConfigError: the plugin is not elastic, or its kind has no ``/scale`` subresource.
    """
    elastic = caps.elastic
    if elastic is None:
        msg = f"{resource.kind}: the plugin does not scale elastically"
        raise ConfigError(msg)
    declared = elastic.elastic
    rtype = declared.replica_type
    spec = job.replica_specs().get(rtype)
    policy = elastic.member_policy(job)
    restart = policy.restart_policy or (spec.restart_policy if spec else RestartPolicy.NEVER)
    consumer = _consumer(caps, job, state)
    in_use = consumer.running and not job.run_policy().suspend
    members = read_members(job.status, declared.fields)
    replace = workers_to_replace(
        restart,
        members.targets,
        members.current,
        {objects.name(pod): pod for pod in state.pods_of(rtype)},
        launcher_running=in_use,
    )
    limits = caps.limits
    problem: Callable[[Sequence[str]], str | None] | None = None
    if limits is not None:

        def check(names: Sequence[str]) -> str | None:
            return limits.membership_problem(job, names, state)

        problem = check
    return Elasticity(
        replica_type=rtype,
        replicas=spec.replicas if spec is not None else 1,
        replicas_path=replicas_path(resource),
        members=members,
        min_replicas=policy.min_replicas,
        max_replicas=policy.max_replicas,
        member_prefix=member_prefix(job.metadata.name, rtype),
        slots=consumer.slots,
        replace=replace,
        ready=in_use and not is_finished(job.status.conditions),
        executor=consumer.executor,
        membership_delivered=consumer.delivered,
        membership_in_use=in_use,
        membership_problem=problem,
        name_rule=declared.name_rule,
        fixed=policy.fixed,
    )
