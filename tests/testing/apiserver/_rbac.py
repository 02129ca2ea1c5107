"""Helpers of the access-control suites: a client per identity, and RBAC objects to store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from tests.testing.apiserver._client import Api

RBAC = "rbac.authorization.k8s.io"
ROLES = f"/apis/{RBAC}/v1/namespaces/default/roles"
ROLEBINDINGS = f"/apis/{RBAC}/v1/namespaces/default/rolebindings"
CLUSTERROLES = f"/apis/{RBAC}/v1/clusterroles"
CLUSTERROLEBINDINGS = f"/apis/{RBAC}/v1/clusterrolebindings"


@asynccontextmanager
async def client(url: str, token: str | None) -> AsyncIterator[Api]:
    """An HTTP client that sends ``token`` as its bearer token (none when None)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:
        yield Api(session, url)


def rule(
    resources: list[str],
    verbs: list[str],
    *,
    groups: list[str] | None = None,
    names: list[str] | None = None,
) -> dict[str, Any]:
    """A PolicyRule."""
    out: dict[str, Any] = {"apiGroups": groups or [""], "resources": resources, "verbs": verbs}
    if names is not None:
        out["resourceNames"] = names
    return out


def role(name: str, *rules: dict[str, Any], cluster: bool = False) -> dict[str, Any]:
    """A Role (or a ClusterRole)."""
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole" if cluster else "Role",
        "metadata": {"name": name},
        "rules": list(rules),
    }


def binding(
    name: str,
    ref: str,
    *subjects: dict[str, Any],
    ref_kind: str = "Role",
    cluster: bool = False,
) -> dict[str, Any]:
    """A RoleBinding (or ClusterRoleBinding) of ``ref`` to ``subjects``."""
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding" if cluster else "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": ref_kind, "name": ref},
        "subjects": list(subjects),
    }


def user(name: str) -> dict[str, Any]:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


def group(name: str) -> dict[str, Any]:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def service_account(name: str, namespace: str | None = None) -> dict[str, Any]:
    subject: dict[str, Any] = {"kind": "ServiceAccount", "name": name}
    if namespace is not None:
        subject["namespace"] = namespace
    return subject
