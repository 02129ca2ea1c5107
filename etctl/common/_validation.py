"""Checks on parsed job objects, reported as problems a user can act on.

The controllers run them on every object they reconcile, and the admission webhooks
(:mod:`etctl.common._admission`) run the very same functions when an object is written, so a bad
manifest is refused by ``kubectl apply`` with the words the job's condition would have used.

The CRD schema rejects most bad input at admission; these functions cover what it cannot express
(cross-field rules) and objects that reached the controller without it (created before the schema
tightened, or on a server that does not validate). Each returns a list of problems, empty when the
object is fine, each problem in the form ``<field path>: <what is wrong>; <what to do or why>``.
The job controller turns a non-empty list into a Failed condition instead of retrying.

:func:`parse_problems` renders a :class:`pydantic.ValidationError` in the same form, so a manifest
that does not even parse is reported the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from etctl._apimachinery import quantity
from etctl.common._api import ReplicaSpec, ReplicatedJob, RunPolicy, pod_containers
from etctl.common._conditions import is_finished

__all__ = [
    "DNS1035_LABEL_MAX_LENGTH",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "parse_problems",
    "validate_job_update",
    "validate_name",
    "validate_pod_template",
    "validate_replica_spec",
    "validate_run_policy",
    "validate_scaling_bounds",
]

DNS1035_LABEL_MAX_LENGTH = 63
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def is_dns1035_label(value: str) -> bool:
    """True for a DNS-1035 label: lower-case alphanumerics and '-', from a letter, <= 63 chars."""
    return len(value) <= DNS1035_LABEL_MAX_LENGTH and _DNS1035.fullmatch(value) is not None


def is_dns1123_label(value: str) -> bool:
    """True for a DNS-1123 label: lower-case alphanumerics and '-', <= 63 (container names)."""
    return len(value) <= DNS1035_LABEL_MAX_LENGTH and _DNS1123.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    """True for a DNS-1123 subdomain: DNS-1123 labels joined by '.', <= 253 (object names)."""
    return (
        len(value) <= _DNS1123_SUBDOMAIN_MAX_LENGTH
        and _DNS1123_SUBDOMAIN.fullmatch(value) is not None
    )


def parse_problems(error: ValidationError) -> list[str]:
    """One ``<path>: <message>`` line per error of a failed parse, with JSON field names."""
    problems = []
    for item in error.errors(include_url=False):
        path = _format_loc(item["loc"])
        problems.append(f"{path}: {item['msg']}" if path else str(item["msg"]))
    return problems


def _format_loc(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def validate_name(name: str, *, path: str = "metadata.name", longest_suffix: str = "") -> list[str]:
    """Problems with a job name that pod and service names are derived from.

    Args:
        name: the job's name.
        path: the field path to report.
        longest_suffix: the longest suffix a child name appends (``-worker-15``); the whole child
            name must stay a DNS-1035 label, since services are named after it.
    """
    if not is_dns1035_label(name):
        return [
            f"{path}: {name!r} is not a DNS-1035 label (lower-case letters, digits and '-', "
            "starting with a letter and ending with a letter or digit, at most 63 characters); "
            "pod and service names are derived from it"
        ]
    child = name + longest_suffix
    if len(child) > DNS1035_LABEL_MAX_LENGTH:
        return [
            f"{path}: {name!r} is too long: the child name {child!r} would exceed "
            f"{DNS1035_LABEL_MAX_LENGTH} characters; shorten the name to at most "
            f"{DNS1035_LABEL_MAX_LENGTH - len(longest_suffix)} characters"
        ]
    return []


def validate_pod_template(template: Mapping[str, Any], *, path: str) -> list[str]:
    """Problems the API server would only report when the pods are created."""
    problems = []
    seen: set[str] = set()
    for index, container in enumerate(pod_containers(template)):
        where = f"{path}.spec.containers[{index}]"
        name = str(container.get("name", ""))
        if not is_dns1123_label(name):
            problems.append(
                f"{where}.name: {name!r} is not a DNS-1123 label (lower-case letters, digits "
                "and '-', at most 63 characters); the API server rejects such containers"
            )
        if name in seen:
            problems.append(f"{where}.name: {name!r} is used by another container of the pod")
        seen.add(name)
        image = container.get("image")
        if not isinstance(image, str) or not image.strip():
            problems.append(f"{where}.image: missing; every container needs an image to run")
    return problems


def validate_replica_spec(
    spec: ReplicaSpec, *, path: str, minimum: int = 0, maximum: int | None = None
) -> list[str]:
    """Problems with one replica spec: its replica count and its pod template."""
    problems = []
    if spec.replicas < minimum:
        hint = "set 0 or more" if minimum == 0 else f"set at least {minimum}"
        problems.append(f"{path}.replicas: {spec.replicas} is below {minimum}; {hint}")
    elif maximum is not None and spec.replicas > maximum:
        problems.append(
            f"{path}.replicas: {spec.replicas} is above {maximum}; set at most {maximum}"
        )
    problems.extend(validate_pod_template(spec.template, path=f"{path}.template"))
    return problems


def validate_scaling_bounds(low: int | None, high: int | None, *, path: str) -> list[str]:
    """Problems with an elastic job's ``minReplicas``/``maxReplicas`` at ``path`` (unset: none).

    A ``replicas`` outside them is not a problem: it is what the ``/scale`` subresource may write,
    and the scaling machinery clamps it with a Warning Event.
    """
    problems = []
    for field, value in (("minReplicas", low), ("maxReplicas", high)):
        if value is not None and value < 1:
            problems.append(f"{path}.{field}: {value} is below 1; set 1 or more")
    if low is not None and high is not None and low > high:
        problems.append(
            f"{path}: minReplicas {low} is greater than maxReplicas {high}; "
            "the job could never be scaled within them"
        )
    return problems


def validate_run_policy(policy: RunPolicy, *, path: str = "spec.runPolicy") -> list[str]:
    """Problems with a run policy's numbers and resource quantities."""
    problems = []
    bounds = (
        ("ttlSecondsAfterFinished", policy.ttl_seconds_after_finished, 0),
        ("activeDeadlineSeconds", policy.active_deadline_seconds, 1),
        ("backoffLimit", policy.backoff_limit, 0),
    )
    for field, value, low in bounds:
        if value is not None and value < low:
            problems.append(
                f"{path}.{field}: {value} is below {low}; set at least {low} or unset it"
            )
    scheduling = policy.scheduling_policy
    if scheduling is None:
        return problems
    where = f"{path}.schedulingPolicy"
    if scheduling.min_available is not None and scheduling.min_available < 1:
        problems.append(
            f"{where}.minAvailable: {scheduling.min_available} is below 1; a gang needs at "
            "least one pod, or unset it to use the sum of all replicas"
        )
    timeout = scheduling.schedule_timeout_seconds
    if timeout is not None and timeout < 0:
        problems.append(f"{where}.scheduleTimeoutSeconds: {timeout} is negative")
    for resource, amount in (scheduling.min_resources or {}).items():
        try:
            quantity.amount(amount)
        except quantity.QuantityError as exc:
            problems.append(f"{where}.minResources.{resource}: {exc}")
    return problems


def _replica_paths(job: ReplicatedJob, types: set[str]) -> dict[str, str]:
    """The JSON path of each replica type's spec (``spec.tfReplicaSpecs.Worker``...)."""
    spec = getattr(job, "spec", None)
    dumped = spec.model_dump(by_alias=True, mode="json") if isinstance(spec, BaseModel) else {}
    folded = {t.casefold(): t for t in types}
    for field, value in dumped.items():
        if isinstance(value, dict) and {str(k).casefold() for k in value} & set(folded):
            return {
                folded[str(k).casefold()]: f"spec.{field}.{k}"
                for k in value
                if str(k).casefold() in folded
            }
    return {t: f"spec.{t}" for t in types}


def validate_job_update(old: ReplicatedJob, new: ReplicatedJob) -> list[str]:
    """Problems with changing ``old`` into ``new``: the rules of an update.

    * ``runPolicy.managedBy`` never changes (training-operator's rule; the value that names this
      operator's upstream, or none, counts as the same): one job never changes hands.
    * While a job runs (it started, has not finished, and neither version is suspended), its
      replica types and pod templates do not change (as a batch Job's template, and JobSet's):
      pods made before and after would differ, and an elastic job's new workers would run another
      image than the old ones. Suspending the job first (``runPolicy.suspend``) lets them change,
      as Kueue does between admissions. Replica counts, the elastic bounds and the run policy
      may change: they are how a job is scaled and steered.
    """
    problems = []
    before, after = old.run_policy().managed_by, new.run_policy().managed_by
    if before != after:
        problems.append(
            f"spec.runPolicy.managedBy: may not change ({before or 'unset'} to "
            f"{after or 'unset'}); it names the controller that runs the job, and a job never "
            "changes hands"
        )
    runs = old.status.start_time is not None and not is_finished(old.status.conditions)
    if not runs or old.run_policy().suspend or new.run_policy().suspend:
        return problems
    old_specs, new_specs = old.replica_specs(), new.replica_specs()
    paths = _replica_paths(new, set(old_specs) | set(new_specs))
    added, removed = (
        sorted(set(new_specs) - set(old_specs)),
        sorted(set(old_specs) - set(new_specs)),
    )
    for replica_type in (*added, *removed):
        change = "added" if replica_type in added else "removed"
        problems.append(
            f"{paths[replica_type]}: {change} while the job runs; replica types may change only "
            "while the job is suspended (spec.runPolicy.suspend: true)"
        )
    problems.extend(
        f"{paths[replica_type]}.template: may not change while the job runs (its pods would "
        "differ from the ones running); suspend the job (spec.runPolicy.suspend: true) to change it"
        for replica_type in sorted(set(old_specs) & set(new_specs))
        if old_specs[replica_type].template != new_specs[replica_type].template
    )
    return problems
