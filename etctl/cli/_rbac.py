"""The operator's RBAC, derived from the enabled job plugins: least privilege by construction.

The ClusterRole is the union of

* what the generic JobController does for every kind: read and write the pods and services it
  owns (create, delete, and patch to adopt or release them; never update: it only patches), and
  record Events;
* per plugin, its custom resources: read and watch them, delete them (TTL after finished), patch
  ``/status`` (the controller's only write to a job), and update ``/finalizers``, which the API
  server requires of whoever sets an ownerReference that blocks the owner's deletion;
* per plugin, the resources of the extra children it builds (``BuildsExtraObjects``) and the rules
  it declares itself (``DeclaresRBAC``);
* with a gang scheduler, that scheduler's PodGroups and read access to PriorityClasses (minResources
  orders pods by priority).

Leader election gets a namespaced Role in the operator's namespace only (get, create and update
on Leases, and Events about them). Secure metrics get a ClusterRole of their own (create
TokenReviews and SubjectAccessReviews, to authenticate and authorize scrapers), and scrapers the
``metrics-reader`` ClusterRole (get the non-resource URL ``/metrics``), as kubebuilder scaffolds
them. Verbs are those the code uses, no more: the controller patches
children and jobs, it never updates them. Rules are merged and sorted, so the same plugins always
render the same role, and a new permission shows up as a reviewable diff of the committed
manifests. Nothing here grants secrets, ``pods/exec``, roles or bindings unless a plugin declares
it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from etctl.common import (
    SCHEDULER_PLUGINS,
    VOLCANO,
    Capabilities,
    CustomResource,
    JobPlugin,
    PolicyRule,
    custom_resources,
    scheduler_for,
)
from etctl.runtime import PODS, PRIORITYCLASSES, SERVICES, Resource

__all__ = [
    "GANG_RULES",
    "GENERIC_RULES",
    "LEADER_ELECTION_RULES",
    "METRICS_AUTH_RULES",
    "cluster_role_rules",
    "merge_rules",
    "rule_to_dict",
]

_READ = ("get", "list", "watch")
_OWN = (*_READ, "create", "delete", "patch")

GENERIC_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(api_groups=("",), resources=(PODS.plural, SERVICES.plural), verbs=_OWN),
    PolicyRule(api_groups=("",), resources=("events",), verbs=("create", "patch")),
)
"""What the JobController needs whatever the kinds: owned pods and services, and Events."""


def _owned_rule(resource: Resource) -> PolicyRule:
    return PolicyRule(api_groups=(resource.group,), resources=(resource.plural,), verbs=_OWN)


GANG_RULES: dict[str, tuple[PolicyRule, ...]] = {
    scheduler.name: (
        _owned_rule(scheduler.podgroups),
        PolicyRule(
            api_groups=(PRIORITYCLASSES.group,),
            resources=(PRIORITYCLASSES.plural,),
            verbs=_READ,
        ),
    )
    for scheduler in map(scheduler_for, (VOLCANO, SCHEDULER_PLUGINS))
    if scheduler is not None
}
"""The extra rules of each gang scheduler."""

LEADER_ELECTION_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        api_groups=("coordination.k8s.io",),
        resources=("leases",),
        verbs=("get", "create", "update"),
    ),
    PolicyRule(api_groups=("",), resources=("events",), verbs=("create", "patch")),
)
"""The namespaced Role of leader election."""

METRICS_AUTH_RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        api_groups=("authentication.k8s.io",), resources=("tokenreviews",), verbs=("create",)
    ),
    PolicyRule(
        api_groups=("authorization.k8s.io",),
        resources=("subjectaccessreviews",),
        verbs=("create",),
    ),
)
"""What secure metrics need: to review a scraper's token, and what its user may get."""


def _kind_rules(resource: CustomResource) -> list[PolicyRule]:
    group = (resource.group,)
    return [
        PolicyRule(api_groups=group, resources=(resource.plural,), verbs=(*_READ, "delete")),
        PolicyRule(api_groups=group, resources=(f"{resource.plural}/status",), verbs=("patch",)),
        PolicyRule(
            api_groups=group, resources=(f"{resource.plural}/finalizers",), verbs=("update",)
        ),
    ]


def cluster_role_rules(
    plugins: Iterable[JobPlugin[Any]], *, gang_scheduler: str = ""
) -> list[PolicyRule]:
    """Every rule the operator's ClusterRole needs for ``plugins``, merged and sorted."""
    rules: list[PolicyRule] = list(GENERIC_RULES)
    for plugin in plugins:
        for resource in custom_resources(plugin):
            rules.extend(_kind_rules(resource))
        capabilities = Capabilities.of(plugin)
        rules.extend(_owned_rule(resource) for resource in capabilities.owned_resources)
        if capabilities.rbac is not None:
            rules.extend(capabilities.rbac.rbac_rules())
    rules.extend(GANG_RULES.get(gang_scheduler, ()))
    return merge_rules(rules)


def merge_rules(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """Rules with the same groups, resource and names merged (verbs unioned), sorted.

    Each resulting rule names one API group and one resource, so a reviewer reads the grants
    resource by resource.
    """
    verbs: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    for rule in rules:
        for group in rule.api_groups:
            for resource in rule.resources:
                key = (group, resource, tuple(sorted(rule.resource_names)))
                verbs.setdefault(key, set()).update(rule.verbs)
    return [
        PolicyRule(
            api_groups=(group,),
            resources=(resource,),
            verbs=_verb_order(verbs[(group, resource, names)]),
            resource_names=names,
        )
        for group, resource, names in sorted(verbs)
    ]


_VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


def _verb_order(verbs: Sequence[str] | set[str]) -> tuple[str, ...]:
    known = [v for v in _VERB_ORDER if v in verbs]
    return (*known, *sorted(set(verbs) - set(_VERB_ORDER)))


def rule_to_dict(rule: PolicyRule) -> dict[str, Any]:
    """A rule as it appears in a Role or ClusterRole."""
    out: dict[str, Any] = {
        "apiGroups": list(rule.api_groups),
        "resources": list(rule.resources),
        "verbs": list(rule.verbs),
    }
    if rule.resource_names:
        out["resourceNames"] = list(rule.resource_names)
    return out
