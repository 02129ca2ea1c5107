"""Permissions: the launcher's ServiceAccount, Role and RoleBinding, and what the operator needs.

The launcher runs as a ServiceAccount bound by a RoleBinding to a Role of the same name (the
launcher's name, ``<job>-launcher``), which grants, in the job's namespace only:

* ``pods``: get, list, watch (Horovod and kubectl look the workers up);
* ``pods/exec``: get and create, **only on the job's current workers** (``resourceNames``, rewritten
  on every scale and replacement: the proposal's "RBAC is updated as the pod set changes") and only
  for kinds that exec (kubexec mode). An empty ``resourceNames`` would mean *every* pod, so a job
  without workers gets no exec rule. Both verbs, because the API server authorizes an exec by its
  HTTP method: the WebSocket upgrade (kubectl's first choice, and the only protocol of etctl's
  client) is a GET, so ``get``, and from Kubernetes 1.35 also ``create``; SPDY is a POST, so
  ``create``;
* ``configmaps``: get, only the job's ConfigMap.

:func:`launcher_objects` is the set a kind wants once its launcher may start: the three RBAC objects
(when it needs them) and its ConfigMap, each re-synced when what it should say changes.

The operator (:func:`operator_rules`) needs, besides what every job kind needs, ServiceAccounts,
Roles and RoleBindings (to create and keep the launcher's), Secrets (ssh keys), ConfigMaps, and
``pods/exec`` get and create (the membership pusher and scalers' scripts run in launchers).
Kubernetes lets a subject create a Role only with permissions it holds itself (RBAC escalation
prevention), so holding ``pods/exec`` and ``configmaps`` get is also what lets the operator grant
them; it needs no ``escalate``. A kind adds the rules of its own resources.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from etctl.common import DesiredObject, PolicyRule
from etctl.runtime import CONFIGMAPS, ROLEBINDINGS, ROLES, SERVICEACCOUNTS, KubeObject, Resource

__all__ = [
    "LAUNCHER_RESOURCES",
    "WRITE_VERBS",
    "launcher_objects",
    "launcher_role",
    "launcher_role_binding",
    "launcher_service_account",
    "operator_rules",
]

LAUNCHER_RESOURCES: tuple[Resource, ...] = (SERVICEACCOUNTS, ROLES, ROLEBINDINGS, CONFIGMAPS)
"""The resources of the objects a launcher needs before it starts (owned by the job)."""

_RBAC = "rbac.authorization.k8s.io"
WRITE_VERBS: tuple[str, ...] = ("create", "get", "list", "watch", "update", "patch", "delete")
"""Every verb of a resource the operator creates and keeps in line."""


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


def launcher_objects(
    *,
    account: str,
    config_map: str,
    config: Callable[[], KubeObject],
    workers: Sequence[str],
    exec_into_workers: bool,
    rbac: bool = True,
) -> list[DesiredObject]:
    """The launcher's ServiceAccount, Role and RoleBinding (unless ``rbac`` is False) and ConfigMap.

    Args:
        account: the name of the ServiceAccount, Role and RoleBinding.
        config_map: the ConfigMap's name.
        config: builds the ConfigMap (its ``data``, at least).
        workers: the job's current workers (the Role's exec rule names them).
        exec_into_workers: the launcher execs into its workers (kubexec mode).
        rbac: the launcher needs the RBAC objects.
    """
    wanted = []
    if rbac:
        names = tuple(workers)
        wanted += [
            DesiredObject(SERVICEACCOUNTS, account, lambda: launcher_service_account(account)),
            DesiredObject(
                ROLES,
                account,
                lambda: launcher_role(
                    account,
                    workers=names,
                    config_map=config_map,
                    exec_into_workers=exec_into_workers,
                ),
            ),
            DesiredObject(ROLEBINDINGS, account, lambda: launcher_role_binding(account)),
        ]
    wanted.append(DesiredObject(CONFIGMAPS, config_map, config))
    return wanted


def operator_rules(*extra: PolicyRule) -> tuple[PolicyRule, ...]:
    """What the operator needs for a launcher/worker kind, then ``extra`` (the kind's own)."""
    return (
        PolicyRule(("",), ("serviceaccounts", "secrets", "configmaps"), WRITE_VERBS),
        PolicyRule((_RBAC,), ("roles", "rolebindings"), WRITE_VERBS),
        PolicyRule(("",), ("pods/exec",), ("get", "create")),
        *extra,
    )
