"""The TokenRequest API (``serviceaccounts/<name>/token``) on an embedded server enforcing RBAC.

``kubectl create token <account>`` and any client that asks a cluster for a ServiceAccount's token
POST a ``TokenRequest`` there. :func:`serve_token_requests` answers it on an :class:`ApiServer`
started with ``auth=AuthConfig()``, with the token :meth:`ApiServer.service_account_token` mints
(so the same identity, groups and lifetime rules apply: the token stops working when the account
is deleted). Tests that run the operator as its ServiceAccount then work the same way on the
embedded server and on a real cluster. ``python -m etctl.testing --auth`` serves it.

The token does not expire by time: ``spec.expirationSeconds`` is echoed and the expiration stamp
is that far from the server's clock, but nothing enforces it (the embedded server's tokens are
opaque strings, not JWTs).
"""

from __future__ import annotations

import json
from datetime import timedelta

from aiohttp import web

from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.deletion import timestamp
from etctl.testing._apiserver.http import SubresourceRequest
from etctl.testing._apiserver.server import ApiServer

__all__ = ["serve_token_requests"]

_DEFAULT_SECONDS = 3600


def serve_token_requests(server: ApiServer) -> None:
    """Answer ``POST .../serviceaccounts/<name>/token`` on ``server`` (which enforces RBAC)."""

    async def token(request: web.Request, sub: SubresourceRequest) -> web.StreamResponse:
        if request.method != "POST":
            raise st.method_not_allowed()
        try:
            body = json.loads(await request.read() or b"{}")
        except ValueError as exc:
            raise st.bad_request(f"the TokenRequest does not parse: {exc}") from exc
        spec = dict(body.get("spec") or {})
        spec.setdefault("expirationSeconds", _DEFAULT_SECONDS)
        try:
            minted = server.service_account_token(sub.namespace, sub.name)
        except LookupError:
            raise st.not_found("", "serviceaccounts", sub.name) from None
        expires = server.clock.now() + timedelta(seconds=int(spec["expirationSeconds"]))
        answer = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": sub.name, "namespace": sub.namespace},
            "spec": spec,
            "status": {"token": minted, "expirationTimestamp": timestamp(expires)},
        }
        return web.json_response(answer, status=201)

    server.add_subresource("", "serviceaccounts", "token", token)
