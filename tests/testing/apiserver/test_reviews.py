"""TokenReview and SubjectAccessReview: the server's own authentication and RBAC, for others."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.runtime import SERVICEACCOUNTS, FakeClock
from etctl.testing import ApiServer, AuthConfig
from tests.testing.apiserver._rbac import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    binding,
    client,
    role,
    rule,
    service_account,
)

TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESSREVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SCRAPER = "system:serviceaccount:default:scraper"
SCRAPER_ACCOUNT = {"metadata": {"name": "scraper", "namespace": "default"}}


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 7, "controllers": False, "auth": AuthConfig()}


def token_review(token: str) -> dict[str, Any]:
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token},
    }


def access_review(user: str, groups: list[str], **attributes: Any) -> dict[str, Any]:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups, **attributes},
    }


async def test_a_token_review_names_the_tokens_user(server: ApiServer) -> None:
    server.storage.create(
        SERVICEACCOUNTS, {"metadata": {"name": "scraper", "namespace": "default"}}
    )
    token = server.service_account_token("default", "scraper")
    admin = server.kubeconfig()["users"][0]["user"]["token"]
    async with client(server.url, admin) as api:
        known = await api.post(TOKENREVIEWS, token_review(token))
        unknown = await api.post(TOKENREVIEWS, token_review("nobody-issued-this"))
        listed = await api.get(TOKENREVIEWS)
    assert known.status == 201
    status = known.body["status"]
    assert status["authenticated"] is True
    assert status["user"]["username"] == SCRAPER
    assert "system:serviceaccounts:default" in status["user"]["groups"]
    assert known.body["spec"] == {"token": token}
    assert unknown.status == 201
    assert unknown.body["status"]["authenticated"] is False
    assert listed.status == 405  # reviews are created, never stored


async def test_an_access_review_is_the_servers_own_rbac_verdict(server: ApiServer) -> None:
    reader = role("metrics-reader", cluster=True)
    reader["rules"] = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    server_admin = server.kubeconfig()["users"][0]["user"]["token"]
    async with client(server.url, server_admin) as api:
        assert (await api.post(CLUSTERROLES, reader)).status == 201
        pods = role("pod-reader", rule(["pods"], ["get"]), cluster=True)
        assert (await api.post(CLUSTERROLES, pods)).status == 201
        scraper = service_account("scraper", "default")
        for name in ("metrics-reader", "pod-reader"):
            bound = binding(name, name, scraper, ref_kind="ClusterRole", cluster=True)
            assert (await api.post(CLUSTERROLEBINDINGS, bound)).status == 201
        groups = ["system:serviceaccounts", "system:authenticated"]
        metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
        elsewhere = {"nonResourceAttributes": {"path": "/debug", "verb": "get"}}
        pod = {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "x"}}
        secret = {"resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "x"}}
        verdicts = [
            (await api.post(ACCESSREVIEWS, access_review(SCRAPER, groups, **asked))).body
            for asked in (metrics, elsewhere, pod, secret)
        ]
        other = (await api.post(ACCESSREVIEWS, access_review("nosy", groups, **metrics))).body
        empty = await api.post(ACCESSREVIEWS, access_review(SCRAPER, groups))
    assert [verdict["status"]["allowed"] for verdict in verdicts] == [True, False, True, False]
    assert other["status"]["allowed"] is False
    assert empty.status == 400


async def test_creating_a_review_takes_rbac_of_its_own(server: ApiServer) -> None:
    server.storage.create(
        SERVICEACCOUNTS, {"metadata": {"name": "scraper", "namespace": "default"}}
    )
    token = server.service_account_token("default", "scraper")
    async with client(server.url, token) as api:
        refused = await api.post(TOKENREVIEWS, token_review(token))
    assert refused.status == 403
    assert 'cannot create resource "tokenreviews"' in refused.body["message"]
