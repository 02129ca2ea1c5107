"""Permissions: the launcher's ServiceAccount, Role and RoleBinding, and what the operator needs.

The launcher runs as ServiceAccount ``<job>-launcher``, bound by RoleBinding ``<job>-launcher`` to
Role ``<job>-launcher``, which grants (in the job's namespace only):

* ``pods``: get, list, watch (Horovod and kubectl look the workers up);
* ``pods/exec``: get and create, **only on this job's workers** (``resourceNames`` = ``status.
  targetWorkers``, rewritten on every scale and replacement) and only in kubexec mode, the one
  mode that execs (et-operator granted exec into every pod of the namespace, in every mode). An
  empty ``resourceNames`` would mean *every* pod, so a job without workers gets no exec rule.
  Both verbs, because the API server authorizes an exec by its HTTP method: the WebSocket upgrade
  (kubectl's first choice, and the only protocol of etctl's client) is a GET, so ``get``, and from
  Kubernetes 1.35 also ``create``; SPDY is a POST, so ``create``. With ``create`` alone kubectl
  pays a refused WebSocket round trip before falling back to SPDY, and a WebSocket-only client
  cannot exec at all;
* ``configmaps``: get, only ``<job>-config`` (et-operator's rule named ``configmap`` and granted
  nothing).

The operator (:func:`operator_rules`) needs, besides what every job kind needs: ServiceAccounts,
Roles and RoleBindings (to create and keep the launcher's), Secrets (the ssh keys) and ConfigMaps,
``pods/exec`` get and create (the hostfile pusher and scalers' scripts run in the launcher over the
WebSocket protocol, authorized as ``get``, and as ``create`` too from Kubernetes 1.35), and the
ScaleIn and ScaleOut objects with their status. Kubernetes lets a subject create a Role only with
permissions it holds itself (RBAC escalation prevention), so the operator must also hold
``pods/exec`` get and create and ``configmaps`` get to grant them to launchers; it does (above),
and needs no ``escalate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etctl.common import PolicyRule
from etctl.jobs.trainingjob._api import GROUP
from etctl.runtime import KubeObject

__all__ = [
    "launcher_role",
    "launcher_role_binding",
    "launcher_service_account",
    "operator_rules",
]

_RBAC = "rbac.authorization.k8s.io"
_WRITE = ("create", "get", "list", "watch", "update", "patch", "delete")


def launcher_service_account(name: str) -> KubeObject:
    """The launcher's ServiceAccount."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}


def launcher_role(
    name: str, *, workers: Sequence[str], config_map: str, exec_into_workers: bool
) -> KubeObject:
    """The launcher's Role (see the module docstring)."""
    rules: list[dict[str, Any]] = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    ]
    if exec_into_workers and workers:
        rules.append(
            {
                "apiGroups": [""],
                "resources": ["pods/exec"],
                "verbs": ["get", "create"],
                "resourceNames": sorted(workers),
            }
        )
    rules.append(
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get"],
            "resourceNames": [config_map],
        }
    )
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": name},
        "rules": rules,
    }


def launcher_role_binding(name: str) -> KubeObject:
    """Binds the launcher's Role to its ServiceAccount (both named ``name``)."""
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name}],
    }


def operator_rules() -> tuple[PolicyRule, ...]:
    """What the operator needs for TrainingJobs beyond pods, services and events."""
    return (
        PolicyRule(("",), ("serviceaccounts", "secrets", "configmaps"), _WRITE),
        PolicyRule((_RBAC,), ("roles", "rolebindings"), _WRITE),
        PolicyRule(("",), ("pods/exec",), ("get", "create")),
        PolicyRule((GROUP,), ("trainingjobs", "scaleins", "scaleouts"), _WRITE),
        PolicyRule(
            (GROUP,),
            ("trainingjobs/status", "scaleins/status", "scaleouts/status"),
            ("get", "update", "patch"),
        ),
    )
