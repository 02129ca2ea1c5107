"""TokenReview and SubjectAccessReview: the server's authentication and RBAC, asked by others.

A component that authenticates its own callers by their Kubernetes credentials (controller-
runtime's secure metrics filter, kube-rbac-proxy, an admission webhook) creates a ``TokenReview``
(``authentication.k8s.io/v1``) to learn whose a bearer token is, then a ``SubjectAccessReview``
(``authorization.k8s.io/v1``) to learn whether that user may do something. On a server that
enforces RBAC (``ApiServer(auth=AuthConfig())``), :func:`review_handlers` answers both from the
server's own :class:`~etctl.testing._apiserver.authorization.Guard`: the same tokens, the same
bindings, the same verdicts as the server's own requests get. Like the real ones, the reviews are
never stored: the answer is the request with its ``status`` filled in, and creating one takes
``create`` on ``tokenreviews`` or ``subjectaccessreviews``.

* TokenReview: ``status.authenticated``, and ``status.user`` (``username``, ``uid``, ``groups``)
  when it is; an unknown token is not authenticated (with ``status.error``), never an error answer.
* SubjectAccessReview: ``spec.nonResourceAttributes`` (``path``, ``verb``) or
  ``spec.resourceAttributes`` (``verb``, ``group``, ``resource``, ``subresource``, ``namespace``,
  ``name``) for ``spec.user`` in ``spec.groups``; ``status.allowed``, and ``status.reason`` as
  the real RBAC authorizer words it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from etctl.errors import Unauthorized
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.authn import UserInfo
from etctl.testing._apiserver.authorization import Guard
from etctl.testing._apiserver.http import ReviewHandler
from etctl.testing._apiserver.rbac import Attributes
from etctl.testing._apiserver.verbs import read_body

__all__ = ["AUTHENTICATION_GROUP", "AUTHORIZATION_GROUP", "review_handlers"]

AUTHENTICATION_GROUP = "authentication.k8s.io"
AUTHORIZATION_GROUP = "authorization.k8s.io"


async def _review(request: web.Request, kind: str, group: str) -> dict[str, Any]:
    body = await read_body(request)
    if not isinstance(body, Mapping) or body.get("kind") != kind:
        raise st.bad_request(f"expected a {kind} ({group}/v1)")
    review = dict(body)
    review.setdefault("apiVersion", f"{group}/v1")
    review["metadata"] = {"creationTimestamp": None, **dict(review.get("metadata") or {})}
    return review


def _spec(review: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = review.get("spec")
    if not isinstance(spec, Mapping):
        raise st.bad_request("spec is required")
    return spec


def review_handlers(guard: Guard) -> dict[tuple[str, str], ReviewHandler]:
    """The handlers of ``tokenreviews`` and ``subjectaccessreviews``, by (group, plural)."""

    async def token_review(request: web.Request) -> web.StreamResponse:
        review = await _review(request, "TokenReview", AUTHENTICATION_GROUP)
        token = str(_spec(review).get("token") or "")
        try:
            user = guard.authenticate(f"Bearer {token}") if token else None
        except Unauthorized:
            user = None
        if user is None:
            review["status"] = {"authenticated": False, "error": "invalid bearer token"}
        else:
            review["status"] = {
                "authenticated": True,
                "user": {"username": user.name, "uid": user.uid, "groups": list(user.groups)},
            }
        return web.json_response(review, status=201)

    async def access_review(request: web.Request) -> web.StreamResponse:
        review = await _review(request, "SubjectAccessReview", AUTHORIZATION_GROUP)
        spec = _spec(review)
        user = UserInfo(
            str(spec.get("user") or ""),
            tuple(str(group) for group in spec.get("groups") or ()),
            str(spec.get("uid") or ""),
        )
        attrs = _attributes(user, spec)
        allowed, reason = guard.allowed(attrs)
        review["status"] = {"allowed": allowed, **({"reason": reason} if reason else {})}
        return web.json_response(review, status=201)

    return {
        (AUTHENTICATION_GROUP, "tokenreviews"): token_review,
        (AUTHORIZATION_GROUP, "subjectaccessreviews"): access_review,
    }


def _attributes(user: UserInfo, spec: Mapping[str, Any]) -> Attributes:
    """What a SubjectAccessReview asks about.

    Raises:
        etctl.errors.BadRequest: it names neither resource nor non-resource attributes.
    """
    path = spec.get("nonResourceAttributes")
    if isinstance(path, Mapping):
        return Attributes(
            user,
            str(path.get("verb") or ""),
            resource_request=False,
            path=str(path.get("path") or ""),
        )
    resource = spec.get("resourceAttributes")
    if isinstance(resource, Mapping):
        return Attributes(
            user,
            str(resource.get("verb") or ""),
            group=str(resource.get("group") or ""),
            version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    msg = "exactly one of nonResourceAttributes and resourceAttributes must be specified"
    raise st.bad_request(msg)
