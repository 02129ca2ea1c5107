"""The ClusterRoles that give people the job kinds, aggregated into ``admin``, ``edit``, ``view``.

For each enabled plugin, three ClusterRoles named after its job kind's plural, as kubeflow's
``kubeflow-mpijobs-admin/edit/view`` and kubebuilder's ``<kind>_{admin,editor,viewer}_role`` are:

=========================  ============================================  ===========================
role                       grants, on every CRD the plugin brings        aggregated into
=========================  ============================================  ===========================
``etctl-<plural>-admin``   everything (create ... deletecollection);     ``admin``
                           ``/status`` read; ``/scale`` read and write
``etctl-<plural>-edit``    the same                                      ``edit``
``etctl-<plural>-view``    get, list, watch; ``/status`` and ``/scale``  ``view``
                           read
=========================  ============================================  ===========================

The labels ``rbac.authorization.k8s.io/aggregate-to-<role>: "true"`` make the API server's
ClusterRole aggregation controller add the rules to the built-in roles, so whoever may edit a
namespace may create TFJobs there, ScaleIns and ScaleOuts included (they come with the elastic
kinds). The Kubeflow overlay adds kubeflow's ``rbac.authorization.kubeflow.org/
aggregate-to-kubeflow-<role>`` labels (:data:`KUBEFLOW_LABELS`), so Kubeflow profiles'
``kubeflow-edit`` gets them too. ``/status`` is never writable by people: the operator owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.cli._rbac import merge_rules, rule_to_dict
from etctl.common import CustomResource, JobPlugin, PolicyRule, custom_resources

__all__ = ["KUBEFLOW_LABELS", "ROLES", "role_name", "user_roles"]

ROLES = ("admin", "edit", "view")
"""The built-in roles the job kinds are aggregated into."""

_API = "rbac.authorization.k8s.io"
_WRITE = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
_READ = ("get", "list", "watch")

KUBEFLOW_LABELS: dict[str, dict[str, str]] = {
    role: {f"rbac.authorization.kubeflow.org/aggregate-to-kubeflow-{role}": "true"}
    for role in ROLES
}
"""Per role, the labels that aggregate it into Kubeflow's ``kubeflow-<role>`` as well."""


def role_name(plugin: JobPlugin[Any], role: str) -> str:
    """``etctl-<plural>-<role>`` (``etctl-tfjobs-edit``)."""
    return f"etctl-{plugin.resource.plural}-{role}"


def _rules(resources: Sequence[CustomResource], role: str) -> list[PolicyRule]:
    rules = []
    for resource in resources:
        group, plural = (resource.group,), resource.plural
        writes = role != "view"
        rules.append(
            PolicyRule(api_groups=group, resources=(plural,), verbs=_WRITE if writes else _READ)
        )
        rules.append(PolicyRule(api_groups=group, resources=(f"{plural}/status",), verbs=("get",)))
        if resource.storage_version.scale is not None:
            verbs = ("get", "update", "patch") if writes else ("get",)
            rules.append(PolicyRule(api_groups=group, resources=(f"{plural}/scale",), verbs=verbs))
    return merge_rules(rules)


def user_roles(
    plugin: JobPlugin[Any], labels: dict[str, str], *, kubeflow: bool = False
) -> dict[str, dict[str, Any]]:
    """The three ClusterRoles of one plugin, by role.

    Args:
        plugin: the plugin whose CRDs they grant.
        labels: the labels every object of the install carries.
        kubeflow: also aggregate into Kubeflow's roles.
    """
    out = {}
    for role in ROLES:
        role_labels = {**labels, f"{_API}/aggregate-to-{role}": "true"}
        if kubeflow:
            role_labels.update(KUBEFLOW_LABELS[role])
        out[role] = {
            "apiVersion": f"{_API}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role_name(plugin, role), "labels": role_labels},
            "rules": [rule_to_dict(rule) for rule in _rules(custom_resources(plugin), role)],
        }
    return out
