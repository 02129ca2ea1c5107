"""The server's access control, opt-in: authenticate every request, then authorize it with RBAC.

Off by default (``ApiServer()`` accepts every request as before). With
``ApiServer(auth=AuthConfig())`` every request goes through :class:`Guard` before anything else
answers it:

1. authentication (:mod:`~etctl.testing._apiserver.authn`): no usable token is 401 ``Unauthorized``;
2. ``system:masters`` is allowed everything without consulting RBAC (the real server's
   privileged-group authorizer), so the server's own kubeconfig keeps full access;
3. RBAC (:mod:`~etctl.testing._apiserver.rbac`) on the request's attributes, derived as the real
   ``RequestInfoFactory`` derives them: a list or watch with a ``metadata.name=x`` field selector
   names ``x``; a request on namespace ``x`` itself is in namespace ``x``; ``pods/exec`` over a
   WebSocket is a ``get`` (the upgrade is a GET) and over SPDY a ``create`` (a POST);
4. a denial is 403 ``Forbidden`` worded as the real server words it:
   ``pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace
   "ns"`` (``at the cluster scope`` without a namespace, ``forbidden: User "u" cannot get path
   "/p"`` for a path), followed by ``: RBAC: ...`` when a binding names a missing role.

With :attr:`AuthConfig.websocket_exec_requires_create` (the ``AuthorizePodWebsocketUpgradeCreate
Permission`` gate, on by default from Kubernetes 1.35) a WebSocket ``get`` on ``pods/exec``,
``pods/attach`` or ``pods/portforward`` must also be allowed ``create``.

Enabling it also stores the bootstrap policy a cluster starts with (:func:`bootstrap_policy`):
``cluster-admin`` bound to ``system:masters``, ``system:discovery`` and
``system:public-info-viewer`` bound to the authenticated (and, for the latter, unauthenticated).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from etctl.errors import Forbidden
from etctl.runtime import FieldSelector, SelectorError
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.authn import (
    AUTHENTICATED,
    MASTERS,
    UNAUTHENTICATED,
    Authenticator,
    UserInfo,
)
from etctl.testing._apiserver.rbac import RBAC_GROUP, Attributes, RBACAuthorizer
from etctl.testing._apiserver.request import RequestInfo
from etctl.testing._apiserver.store import Store

__all__ = ["AuthConfig", "Guard", "bootstrap_policy", "forbidden_message"]

_CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward"})


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """How the server authenticates and authorizes (given as ``ApiServer(auth=...)``).

    Attributes:
        anonymous: a request without a token is ``system:anonymous`` (then usually 403) instead
            of 401, as with kube-apiserver's ``--anonymous-auth=true``.
        websocket_exec_requires_create: a WebSocket exec, attach or port-forward also needs
            ``create`` (Kubernetes 1.35's default); off, a ``get`` suffices (1.32, which this
            server's ``/version`` reports).
        bootstrap_policy: store the default ClusterRoles and bindings of :func:`bootstrap_policy`.
    """

    anonymous: bool = False
    websocket_exec_requires_create: bool = False
    bootstrap_policy: bool = True


def forbidden_message(attrs: Attributes) -> str:
    """What the real server says a user cannot do (before the ``: <reason>``)."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f"User {_q(user)} cannot {attrs.verb} path {_q(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    head = (
        f"User {_q(user)} cannot {attrs.verb} resource {_q(resource)} in API group "
        f"{_q(attrs.group)}"
    )
    if attrs.namespace:
        return f"{head} in the namespace {_q(attrs.namespace)}"
    return f"{head} at the cluster scope"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _PathForbidden(Forbidden):
    """A 403 on a path: the real server sends its ``details`` as an empty object."""

    empty_details = True


def _forbidden(attrs: Attributes, reason: str) -> Forbidden:
    detail = forbidden_message(attrs)
    if reason:
        detail = f"{detail}: {reason}"
    if not attrs.resource_request:
        # NewForbidden with an empty group-resource: "forbidden: ..." and empty details.
        return _PathForbidden(f"forbidden: {detail}", reason="Forbidden")
    return st.forbidden(attrs.group, attrs.resource, attrs.name, detail)


def _name_from_field_selector(selector: str) -> str:
    """The name a field selector requires exactly (``metadata.name=x``), or ``""``."""
    try:
        value = FieldSelector.parse(selector).requires_exact_match("metadata.name")
    except SelectorError:
        return ""
    # Only a valid path segment name counts, as in the real RequestInfoFactory.
    if value is None or value in ("", ".", "..") or any(c in value for c in "/%"):
        return ""
    return value


class Guard:
    """Authenticates and authorizes requests (see the module docstring).

    Args:
        store: the server's store (RBAC objects and ServiceAccounts are read from it).
        config: the settings.
    """

    def __init__(self, store: Store, config: AuthConfig) -> None:
        self.config = config
        self.authenticator = Authenticator(store, anonymous=config.anonymous)
        self.authorizer = RBACAuthorizer(store)

    def attributes(
        self, user: UserInfo, info: RequestInfo, path: str, query: Mapping[str, str]
    ) -> Attributes:
        """The authorization attributes of a parsed request."""
        if not info.resource_request:
            return Attributes(user, info.verb, resource_request=False, path=path)
        name, namespace = info.name, info.namespace
        if not name and info.verb in ("list", "watch"):
            name = _name_from_field_selector(query.get("fieldSelector", ""))
        if info.group == "" and info.resource == "namespaces" and info.name:
            namespace = info.name  # /api/v1/namespaces/x is in namespace x
        return Attributes(
            user,
            info.verb,
            group=info.group,
            version=info.version,
            resource=info.resource,
            subresource=info.subresource,
            namespace=namespace,
            name=name,
            path=path,
        )

    def allowed(self, attrs: Attributes) -> tuple[bool, str]:
        """Whether ``attrs`` is allowed, and the reason of a denial."""
        if MASTERS in attrs.user.groups:
            return True, ""
        decision = self.authorizer.authorize(attrs)
        return decision.allowed, decision.reason

    def authenticate(self, authorization: str | None) -> UserInfo:
        """The user an ``Authorization`` header names.

        Raises:
            etctl.errors.Unauthorized: no usable credential.
        """
        return self.authenticator.authenticate(authorization)

    def authorize(
        self, user: UserInfo, info: RequestInfo, path: str, query: Mapping[str, str]
    ) -> None:
        """Let the request through, or raise why not.

        Raises:
            etctl.errors.Forbidden: RBAC does not allow the request.
        """
        attrs = self.attributes(user, info, path, query)
        allowed, reason = self.allowed(attrs)
        if not allowed:
            raise _forbidden(attrs, reason)
        if (
            self.config.websocket_exec_requires_create
            and attrs.verb == "get"
            and attrs.group == ""
            and attrs.resource == "pods"
            and attrs.subresource in _CONNECT_SUBRESOURCES
        ):
            create = dataclasses.replace(attrs, verb="create")
            allowed, reason = self.allowed(create)
            if not allowed:
                raise _forbidden(create, reason)


def _bootstrap_labels() -> dict[str, Any]:
    return {
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, **_bootstrap_labels()},
        "rules": rules,
    }


def _binding(name: str, *groups: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, **_bootstrap_labels()},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


_PUBLIC_INFO = ["/healthz", "/livez", "/readyz", "/version", "/version/"]


def bootstrap_policy() -> list[dict[str, Any]]:
    """The default ClusterRoles and ClusterRoleBindings (kube-apiserver 1.32's, in part)."""
    discovery = sorted(["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*"])
    return [
        _cluster_role(
            "cluster-admin",
            [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        ),
        _cluster_role(
            "system:discovery",
            [{"nonResourceURLs": sorted([*discovery, *_PUBLIC_INFO]), "verbs": ["get"]}],
        ),
        _cluster_role(
            "system:public-info-viewer",
            [{"nonResourceURLs": _PUBLIC_INFO, "verbs": ["get"]}],
        ),
        _binding("cluster-admin", MASTERS),
        _binding("system:discovery", AUTHENTICATED),
        _binding("system:public-info-viewer", AUTHENTICATED, UNAUTHENTICATED),
    ]
