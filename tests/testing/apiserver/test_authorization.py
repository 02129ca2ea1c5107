"""The access-control filter: off by default, the real 403 body, exec's verbs, bootstrap policy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from etctl.errors import Forbidden
from etctl.runtime import PODS as POD_RESOURCE
from etctl.runtime import Client, FakeClock
from etctl.testing import ApiServer, AuthConfig, SubresourceRequest
from etctl.testing._apiserver.authn import ADMIN_TOKEN
from tests.testing.apiserver._client import PODS, Api
from tests.testing.apiserver._rbac import ROLEBINDINGS, ROLES, binding, client, role, rule, user

OPERATOR = "system:serviceaccount:etctl-system:etctl"


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 7, "controllers": False, "auth": AuthConfig()}


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[Api]:
    """The administrator (``system:masters``), as the server's own kubeconfig."""
    async with client(server.url, ADMIN_TOKEN) as admin:
        yield admin


async def test_off_by_default_every_request_is_served(clock: FakeClock) -> None:
    async with ApiServer(clock=clock) as server, client(server.url, None) as anyone:
        assert (await anyone.get(PODS)).status == 200
        assert server.guard is None
        assert server.requests.find(resource="pods")[0].user == ""
        # No bootstrap policy is stored either: nothing else changes.
        assert (await anyone.get("/apis/rbac.authorization.k8s.io/v1/clusterroles")).body[
            "items"
        ] == []


async def test_the_forbidden_status_is_the_real_one(server: ApiServer) -> None:
    server.add_token("t-op", user=OPERATOR, groups=["system:serviceaccounts"])
    async with client(server.url, "t-op") as operator:
        reply = await operator.get("/api/v1/namespaces/default/pods/x")
    assert reply.status == 403
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": (
            f'pods "x" is forbidden: User "{OPERATOR}" cannot get resource "pods" in API group '
            '"" in the namespace "default"'
        ),
        "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods"},
        "code": 403,
    }
    record = server.requests.find(resource="pods")[0]
    assert (record.user, record.code) == (OPERATOR, 403)


async def test_kubernetes_asyncio_sees_a_forbidden_error(server: ApiServer, tmp_path: Path) -> None:
    server.add_token("t-bob", user="bob")
    path = server.write_kubeconfig(tmp_path / "bob", token="t-bob")
    async with await Client.from_kubeconfig(path) as bob:
        with pytest.raises(Forbidden) as denied:
            await bob.list(POD_RESOURCE, namespace="default")
    assert 'User "bob" cannot list resource "pods"' in str(denied.value)


def _answer_exec(server: ApiServer) -> None:
    async def handler(request: web.Request, sub: SubresourceRequest) -> web.StreamResponse:
        return web.Response(text=f"{request.method} {sub.name}")

    server.add_subresource("", "pods", "exec", handler)


@pytest.mark.parametrize(
    ("verbs", "requires_create", "websocket", "spdy"),
    [
        (["create"], False, 403, 200),  # 1.32: the WebSocket upgrade is a GET, authorized `get`
        (["get"], False, 200, 403),
        (["create"], True, 403, 200),
        (["get"], True, 403, 403),  # 1.35: the upgrade must also be allowed `create`
        (["get", "create"], True, 200, 200),
    ],
)
async def test_exec_is_get_over_websocket_and_create_over_spdy(
    clock: FakeClock, verbs: list[str], requires_create: bool, websocket: int, spdy: int
) -> None:
    config = AuthConfig(websocket_exec_requires_create=requires_create)
    async with ApiServer(clock=clock, controllers=False, auth=config) as server:
        _answer_exec(server)
        async with client(server.url, server.kubeconfig()["users"][0]["user"]["token"]) as admin:
            await admin.create(ROLES, role("exec", rule(["pods/exec"], verbs, names=["w"])))
            await admin.create(ROLEBINDINGS, binding("exec", "exec", user("eve")))
        server.add_token("t-eve", user="eve")
        async with client(server.url, "t-eve") as eve:
            got = await eve.get(f"{PODS}/w/exec", params={"command": "true"})
            posted = await eve.post(f"{PODS}/w/exec?command=true", {})
            other = await eve.post(f"{PODS}/x/exec?command=true", {})
    assert (got.status, posted.status, other.status) == (websocket, spdy, 403)
    if requires_create and "get" in verbs and "create" not in verbs:
        assert got.body["message"] == (
            'pods "w" is forbidden: User "eve" cannot create resource "pods/exec" in API group '
            '"" in the namespace "default"'
        )


async def test_the_bootstrap_policy_is_stored(server: ApiServer, api: Api) -> None:
    roles = await api.get("/apis/rbac.authorization.k8s.io/v1/clusterroles")
    names = {item["metadata"]["name"] for item in roles.body["items"]}
    assert names == {"cluster-admin", "system:discovery", "system:public-info-viewer"}
    server.add_token("t-frank", user="frank")
    async with client(server.url, "t-frank") as frank:
        for path in ("/api", "/apis", "/api/v1", "/version", "/healthz", "/openapi/v3"):
            assert (await frank.get(path)).status == 200, path
        assert (await frank.get("/metrics")).body["message"] == (
            'forbidden: User "frank" cannot get path "/metrics"'
        )
