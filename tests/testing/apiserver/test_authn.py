"""Authentication: tokens to users, ServiceAccount tokens, 401s worded as the real server's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from etctl.errors import ConfigError
from etctl.runtime import SERVICEACCOUNTS, FakeClock
from etctl.testing import ApiServer, AuthConfig
from tests.testing.apiserver._rbac import client

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 7, "controllers": False, "auth": AuthConfig()}


@pytest.mark.parametrize("token", [None, "nobody-issued-this"])
async def test_no_or_unknown_token_is_401_unauthorized(
    server: ApiServer, token: str | None
) -> None:
    async with client(server.url, token) as api:
        reply = await api.get("/api/v1/namespaces/default/pods")
        version = await api.get("/version")
    assert reply.status == 401
    assert reply.body == UNAUTHORIZED
    assert version.status == 401
    records = server.requests.find(resource="pods")
    assert [(r.code, r.user) for r in records] == [(401, "")]


async def test_a_malformed_authorization_header_is_401(server: ApiServer) -> None:
    async with client(server.url, None) as api:
        reply = await api.get("/api/v1/pods", headers={"Authorization": "Basic dXNlcjpwdw=="})
    assert reply.status == 401


async def test_the_server_kubeconfig_is_a_master(server: ApiServer, tmp_path: Path) -> None:
    token = server.kubeconfig()["users"][0]["user"]["token"]
    async with client(server.url, token) as api:
        reply = await api.get("/api/v1/namespaces/default/secrets")
    assert reply.status == 200
    assert server.requests.find(resource="secrets")[0].user == "etctl-admin"


async def test_a_static_token_is_its_user_and_an_authenticated_one(server: ApiServer) -> None:
    info = server.add_token("t-alice", user="alice", groups=["dev"])
    assert info.groups == ("dev", "system:authenticated")
    with pytest.raises(ValueError, match="issued"):
        server.add_token("t-alice", user="bob")
    async with client(server.url, "t-alice") as api:
        # Authenticated, so discovery is open (system:discovery), but pods are not.
        assert (await api.get("/version")).status == 200
        assert (await api.get("/api/v1/namespaces/default/pods")).status == 403
    assert {r.user for r in server.requests} == {"alice"}


async def test_a_service_account_token_follows_its_account(
    server: ApiServer, tmp_path: Path
) -> None:
    with pytest.raises(LookupError, match='serviceaccounts "robot" not found'):
        server.service_account_token("default", "robot")
    server.storage.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}}, namespace="default")
    path = server.write_service_account_kubeconfig(
        tmp_path / "robot.yaml", namespace="default", name="robot"
    )
    document = yaml.safe_load(path.read_text())
    assert document["contexts"][0]["context"]["namespace"] == "default"
    token = document["users"][0]["user"]["token"]
    async with client(server.url, token) as api:
        reply = await api.get("/api/v1/namespaces/default/pods/p")
        assert reply.status == 403
        assert reply.body["message"].startswith(
            'pods "p" is forbidden: User "system:serviceaccount:default:robot" cannot get'
        )
        # A deleted (or recreated) account's tokens stop working, as bound tokens do.
        server.storage.delete(SERVICEACCOUNTS, "robot", namespace="default")
        server.storage.create(SERVICEACCOUNTS, {"metadata": {"name": "robot"}}, namespace="default")
        assert (await api.get("/api/v1/namespaces/default/pods/p")).status == 401


async def test_anonymous_requests_are_system_anonymous_when_allowed(clock: FakeClock) -> None:
    async with ApiServer(clock=clock, auth=AuthConfig(anonymous=True)) as server:
        async with client(server.url, None) as api:
            health = await api.get("/healthz")
            discovery = await api.get("/api")
            pods = await api.get("/api/v1/pods")
        assert health.status == 200  # system:public-info-viewer covers the unauthenticated
        assert discovery.status == 403
        assert discovery.body["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/api"'
        )
        assert discovery.body["details"] == {}
        assert pods.status == 403


async def test_identities_need_a_server_that_authenticates(clock: FakeClock) -> None:
    server = ApiServer(clock=clock)
    with pytest.raises(ConfigError, match="auth=AuthConfig"):
        server.add_token("t", user="u")
    with pytest.raises(ConfigError):
        server.service_account_token("default", "default")
