"""The TokenRequest API (``serviceaccounts/<name>/token``) on an embedded server enforcing RBAC.

``kubectl create token <account>`` and any client that asks a cluster for a ServiceAccount's token
POST a ``TokenRequest`` there. :func:`serve_token_requests` answers it on an :class:`ApiServer`
started with ``auth=AuthConfig()``, with the token :meth:`ApiServer.service_account_token` mints
(so the same identity, groups and lifetime rules apply: the token stops working when the account
is deleted). Tests that run the operator as its ServiceAccount then work the same way on the
embedded server and on a real cluster. ``python -m etctl.testing --auth`` serves it.

The token does not expire by time: ``spec.expirationSeconds`` is echoed and the expiration stamp
is that far from the server's clock, but nothing enforces it (the embedded server's tokens are
opaque strings, not JWTs). The request may be JSON, YAML or protobuf (kubectl's typed client sends
protobuf and does not fall back to JSON); the answer is JSON, which every client accepts.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from aiohttp import web

from etctl.testing._apiserver import protowire
from etctl.testing._apiserver import status as st
from etctl.testing._apiserver.deletion import timestamp
from etctl.testing._apiserver.http import SubresourceRequest
from etctl.testing._apiserver.server import ApiServer
from etctl.testing._apiserver.verbs import read_body, read_raw

__all__ = ["serve_token_requests"]

_DEFAULT_SECONDS = 3600
# BoundObjectReference's field numbers (k8s.io/api authentication/v1 generated.proto).
_BOUND_OBJECT_FIELDS = {1: "kind", 2: "apiVersion", 3: "name", 4: "uid"}


def _protobuf_spec(body: bytes) -> dict[str, Any]:
    """The ``spec`` of a protobuf TokenRequest (what kubectl's typed client sends).

    TokenRequest: 2 spec. TokenRequestSpec: 1 audiences, 4 expirationSeconds, 3 boundObjectRef
    (:data:`_BOUND_OBJECT_FIELDS`). Read by hand rather than through ``protobody``: the committed
    descriptors cover the stored kinds only, and these few fields are all the token needs.
    """
    try:
        _, kind, message = protowire.unwrap(body)
        spec: dict[str, Any] = {}
        for number, value in protowire.fields(message):
            if number != 2 or not isinstance(value, bytes):
                continue
            for field, item in protowire.fields(value):
                if field == 1 and isinstance(item, bytes):
                    spec.setdefault("audiences", []).append(item.decode())
                elif field == 4 and isinstance(item, int):
                    spec["expirationSeconds"] = item
                elif field == 3 and isinstance(item, bytes):
                    spec["boundObjectRef"] = {
                        _BOUND_OBJECT_FIELDS[n]: v.decode()
                        for n, v in protowire.fields(item)
                        if n in _BOUND_OBJECT_FIELDS and isinstance(v, bytes)
                    }
    except (ValueError, UnicodeDecodeError) as exc:
        raise st.bad_request(f"the TokenRequest does not parse: {exc}") from exc
    if kind and kind != "TokenRequest":
        raise st.bad_request(f"expected a TokenRequest, got a {kind}")
    return spec


def serve_token_requests(server: ApiServer) -> None:
    """Answer ``POST .../serviceaccounts/<name>/token`` on ``server`` (which enforces RBAC)."""

    async def token(request: web.Request, sub: SubresourceRequest) -> web.StreamResponse:
        if request.method != "POST":
            raise st.method_not_allowed()
        if request.content_type == protowire.MEDIA_TYPE:
            spec = _protobuf_spec(await read_raw(request))
        else:
            body = await read_body(request)
            spec = dict((body or {}).get("spec") or {})
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
