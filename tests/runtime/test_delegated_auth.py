"""Delegated authentication and authorization: TokenReviews and SubjectAccessReviews, cached."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from etctl.runtime import SERVICEACCOUNTS, Client, FakeClock, Resource
from etctl.runtime._delegated_auth import DelegatedAuth
from etctl.runtime._http_server import Request
from etctl.testing import ApiServer, AuthConfig
from tests.runtime._realtime import client_of

READER = "system:serviceaccount:default:reader"
RBAC = "rbac.authorization.k8s.io"
CLUSTERROLES = Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTERROLEBINDINGS = Resource(
    RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)


def metrics_request(token: str | None, method: str = "GET") -> Request:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return Request(method=method, path="/metrics", headers=headers)


def grant_metrics(server: ApiServer, account: str) -> None:
    """Bind ``default/<account>`` to a ClusterRole that may get ``/metrics``."""
    role = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{account}-metrics"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }
    binding = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{account}-metrics"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"{account}-metrics"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}],
    }
    server.apply_object(CLUSTERROLES, role)
    server.apply_object(CLUSTERROLEBINDINGS, binding)


def accounts(server: ApiServer, *names: str) -> list[str]:
    tokens = []
    for name in names:
        server.storage.create(SERVICEACCOUNTS, {"metadata": {"name": name, "namespace": "default"}})
        tokens.append(server.service_account_token("default", name))
    return tokens


def reviews(server: ApiServer, resource: str) -> int:
    return len(server.requests.find(resource=resource, code=201))


@asynccontextmanager
async def reviewing(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Reviewing]:
    """A server enforcing RBAC, reader allowed /metrics, nosy not, and an admin's DelegatedAuth."""
    async with ApiServer(auth=AuthConfig()) as server, client_of(server, tmp_path) as admin:
        reader, nosy = accounts(server, "reader", "nosy")
        grant_metrics(server, "reader")
        yield Reviewing(server, DelegatedAuth(admin, clock), reader, nosy)


@dataclass
class Reviewing:
    server: ApiServer
    auth: DelegatedAuth
    reader: str
    nosy: str


async def test_allowed_denied_and_unauthenticated_requests(tmp_path: Path) -> None:
    async with reviewing(tmp_path, FakeClock()) as env:
        auth, reader, nosy = env.auth, env.reader, env.nosy
        assert await auth.check(metrics_request(reader)) is None
        denied = await auth.check(metrics_request(nosy))
        assert denied is not None
        assert (denied.status, denied.body) == (
            403,
            b"Authorization denied for user system:serviceaccount:default:nosy\n",
        )
        for token in (None, "nobody-issued-this"):
            refused = await auth.check(metrics_request(token))
            assert refused is not None
            assert (refused.status, refused.body) == (401, b"Unauthorized\n")
        head = await auth.check(metrics_request(reader, "HEAD"))  # the verb is the method
        assert head is not None
        assert head.status == 403


async def test_reviews_are_cached_as_the_delegating_filters_cache_them(tmp_path: Path) -> None:
    clock = FakeClock()
    async with reviewing(tmp_path, clock) as env:
        server, auth, reader, nosy = env.server, env.auth, env.reader, env.nosy
        for _ in range(3):
            assert await auth.check(metrics_request(reader)) is None
            assert await auth.check(metrics_request(nosy)) is not None
        assert reviews(server, "tokenreviews") == 2
        assert reviews(server, "subjectaccessreviews") == 2
        await clock.advance(31)  # past a denial's 30 s: asked again; an allowance lasts 5 min
        assert await auth.check(metrics_request(nosy)) is not None
        assert await auth.check(metrics_request(reader)) is None
        assert reviews(server, "subjectaccessreviews") == 3
        await clock.advance(30)  # past a token's minute: both tokens reviewed again
        assert await auth.check(metrics_request(reader)) is None
        assert await auth.check(metrics_request(nosy)) is not None
        assert reviews(server, "tokenreviews") == 4


async def test_a_review_the_operator_may_not_create_is_a_500(tmp_path: Path) -> None:
    async with ApiServer(auth=AuthConfig()) as server:
        (operator,) = accounts(server, "operator")
        kubeconfig = server.write_kubeconfig(tmp_path / "operator", token=operator)
        async with await Client.from_kubeconfig(kubeconfig) as client:
            auth = DelegatedAuth(client, FakeClock())
            failed = await auth.check(metrics_request(operator))
    assert failed is not None
    assert (failed.status, failed.body) == (500, b"Authentication failed\n")
