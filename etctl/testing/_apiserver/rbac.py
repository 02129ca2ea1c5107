"""RBAC: whether the stored Roles and bindings allow a request, decided as kube-apiserver does.

A request is described by :class:`Attributes` (user, verb, API group, resource, subresource,
namespace, name, or a non-resource path). It is allowed when one rule reachable from the user
allows it:

* every ClusterRoleBinding whose subjects include the user, with the rules of its ClusterRole;
* in the request's namespace, every RoleBinding whose subjects include the user, with the rules of
  the Role (of that namespace) or ClusterRole it references;
* a subject is a ``User`` (by name), a ``Group`` (by membership) or a ``ServiceAccount`` (its
  namespace defaults to the RoleBinding's own).

A rule allows a resource request when its ``verbs``, ``apiGroups``, ``resources`` and
``resourceNames`` all match: ``*`` matches anything, ``pods/exec`` is a resource of its own
(``pods`` does not cover it; ``*/exec`` does), and a rule with ``resourceNames`` only matches
requests that name an object, so never a create, or a list or watch without a ``metadata.name``
field selector. A non-resource request (``/healthz``) matches ``nonResourceURLs``, where a trailing
``*`` is a prefix match.

A referenced Role or ClusterRole that does not exist contributes nothing; the denial then carries
the real server's reason (``RBAC: role.rbac.authorization.k8s.io "x" not found``). Rules are read
from the store on every decision, so a change to a Role takes effect on the next request.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from etctl.testing._apiserver.authn import UserInfo
from etctl.testing._apiserver.store import Store, object_key

__all__ = ["Attributes", "Decision", "RBACAuthorizer", "rule_allows"]

RBAC_GROUP = "rbac.authorization.k8s.io"
_ROLES = (RBAC_GROUP, "roles")
_ROLEBINDINGS = (RBAC_GROUP, "rolebindings")
_CLUSTERROLES = (RBAC_GROUP, "clusterroles")
_CLUSTERROLEBINDINGS = (RBAC_GROUP, "clusterrolebindings")
_SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class Attributes:
    """What is asked, in the terms of ``k8s.io/apiserver/pkg/authorization/authorizer``.

    Attributes:
        user: who asks.
        verb: the verb (``get``, ``list``, ``watch``, ``create``...; the lower-cased HTTP method
            for non-resource requests).
        resource_request: True for an API resource, False for a path such as ``/healthz``.
        group: the API group (``""`` for core).
        version: the API version.
        resource: the resource (plural).
        subresource: the subresource (``exec``, ``status``), ``""`` if none.
        namespace: the namespace, ``""`` at the cluster scope.
        name: the object's name, ``""`` if the request names none.
        path: the URL path (what non-resource rules match).
    """

    user: UserInfo
    verb: str
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict of :meth:`RBACAuthorizer.authorize`.

    Attributes:
        allowed: whether a rule allows the request.
        reason: on a denial, why no rule could apply (roles that are missing), ``""`` otherwise.
    """

    allowed: bool
    reason: str = ""


def _strings(value: Any) -> Sequence[str]:
    return [str(v) for v in value] if isinstance(value, list) else ()


def _resource_matches(rules: Sequence[str], combined: str, subresource: str) -> bool:
    for candidate in rules:
        if candidate in ("*", combined):
            return True
        # `*/exec` matches the exec subresource of every resource.
        if subresource and candidate == f"*/{subresource}":
            return True
    return False


def _url_matches(rules: Sequence[str], path: str) -> bool:
    for candidate in rules:
        if candidate in ("*", path):
            return True
        if candidate.endswith("*") and path.startswith(candidate.rstrip("*")):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Mapping[str, Any]) -> bool:
    """Whether one PolicyRule (as stored) allows the request."""
    verbs = _strings(rule.get("verbs"))
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return _url_matches(_strings(rule.get("nonResourceURLs")), attrs.path)
    groups = _strings(rule.get("apiGroups"))
    if "*" not in groups and attrs.group not in groups:
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not _resource_matches(_strings(rule.get("resources")), combined, attrs.subresource):
        return False
    names = _strings(rule.get("resourceNames"))
    return not names or attrs.name in names


def _applies(user: UserInfo, subjects: Any, namespace: str) -> bool:
    """Whether any of a binding's subjects is ``user`` (``namespace``: the binding's own)."""
    for subject in subjects if isinstance(subjects, list) else ():
        if not isinstance(subject, Mapping):
            continue
        kind, name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User" and user.name == name:
            return True
        if kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount":
            account_namespace = str(subject.get("namespace") or namespace)
            if account_namespace and user.name == f"{_SA_PREFIX}{account_namespace}:{name}":
                return True
    return False


class RBACAuthorizer:
    """Decides requests from the RBAC objects in a store.

    Args:
        store: the server's store.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    def _rules_of(self, role_ref: Any, namespace: str) -> tuple[Sequence[Any], str]:
        """The rules a binding's ``roleRef`` grants, or an error message when it cannot."""
        ref = role_ref if isinstance(role_ref, Mapping) else {}
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "Role":
            role = self._store.get(_ROLES, object_key(namespace, name))
            if role is None:
                return (), f'role.{RBAC_GROUP} "{name}" not found'
        elif kind == "ClusterRole":
            role = self._store.get(_CLUSTERROLES, name)
            if role is None:
                return (), f'clusterrole.{RBAC_GROUP} "{name}" not found'
        else:
            return (), f'unsupported role reference kind: "{kind}"'
        rules = role.get("rules")
        return (rules if isinstance(rules, list) else ()), ""

    def rules_for(self, user: UserInfo, namespace: str) -> Iterator[tuple[Mapping[str, Any], str]]:
        """Every rule that applies to ``user`` in ``namespace``, in the real resolver's order.

        Each comes with ``""``; a binding whose role is missing yields ``({}, error)``.
        """
        for _, binding in self._store.items(_CLUSTERROLEBINDINGS):
            if not _applies(user, binding.get("subjects"), ""):
                continue
            rules, error = self._rules_of(binding.get("roleRef"), "")
            if error:
                yield {}, error
            for rule in rules:
                if isinstance(rule, Mapping):
                    yield rule, ""
        if not namespace:
            return
        for _, binding in self._store.items(_ROLEBINDINGS, namespace):
            if not _applies(user, binding.get("subjects"), namespace):
                continue
            rules, error = self._rules_of(binding.get("roleRef"), namespace)
            if error:
                yield {}, error
            for rule in rules:
                if isinstance(rule, Mapping):
                    yield rule, ""

    def authorize(self, attrs: Attributes) -> Decision:
        """Allow when a rule reachable from the user allows the request."""
        errors: list[str] = []
        for rule, error in self.rules_for(attrs.user, attrs.namespace):
            if error:
                if error not in errors:
                    errors.append(error)
            elif rule_allows(attrs, rule):
                return Decision(allowed=True)
        if not errors:
            return Decision(allowed=False)
        listed = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return Decision(allowed=False, reason=f"RBAC: {listed}")
