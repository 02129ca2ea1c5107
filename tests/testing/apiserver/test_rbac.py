"""RBAC evaluation over HTTP: rules, bindings and subjects decided as the real server does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from etctl.runtime import FakeClock
from etctl.testing import ApiServer, AuthConfig
from etctl.testing._apiserver.authn import ADMIN_TOKEN, UserInfo
from etctl.testing._apiserver.rbac import Attributes, rule_allows
from tests.testing.apiserver._client import PODS, WIDGET_CRD, Api, configmap, pod
from tests.testing.apiserver._rbac import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    ROLEBINDINGS,
    ROLES,
    binding,
    client,
    group,
    role,
    rule,
    service_account,
    user,
)

CM = "/api/v1/namespaces/default/configmaps"
ALICE = UserInfo("alice", ("dev", "system:authenticated"))


@pytest.fixture
def etctl_apiserver_options(clock: FakeClock) -> dict[str, Any]:
    return {"clock": clock, "seed": 7, "controllers": False, "auth": AuthConfig()}


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[Api]:
    """The administrator (``system:masters``), as the server's own kubeconfig."""
    async with client(server.url, ADMIN_TOKEN) as admin:
        yield admin


@pytest.fixture
async def alice(server: ApiServer) -> AsyncIterator[Api]:
    server.add_token("t-alice", user="alice", groups=["dev"])
    async with client(server.url, "t-alice") as api:
        yield api


async def grant(admin: Api, *rules: dict[str, Any], subject: dict[str, Any] | None = None) -> None:
    """A Role with ``rules`` in default, bound to ``subject`` (alice by default)."""
    await admin.create(ROLES, role("r", *rules))
    await admin.create(ROLEBINDINGS, binding("rb", "r", subject or user("alice")))


def attrs(verb: str, resource: str = "pods", **kw: Any) -> Attributes:
    return Attributes(ALICE, verb, resource=resource, namespace="default", **kw)


@pytest.mark.parametrize(
    ("rule_", "request_", "allowed"),
    [
        (rule(["pods"], ["get"]), attrs("get", name="p"), True),
        (rule(["pods"], ["get"]), attrs("list"), False),
        (rule(["pods"], ["*"]), attrs("deletecollection"), True),
        (rule(["*"], ["get"]), attrs("get", subresource="exec", name="p"), True),
        (rule(["pods"], ["create"]), attrs("create", subresource="exec", name="p"), False),
        (rule(["*/exec"], ["create"]), attrs("create", subresource="exec", name="p"), True),
        (rule(["*/exec"], ["create"]), attrs("create", subresource="log", name="p"), False),
        (rule(["pods/exec"], ["create"]), attrs("create", subresource="exec", name="p"), True),
        (rule(["pods"], ["get"], groups=["apps"]), attrs("get", name="p"), False),
        (rule(["pods"], ["get"], groups=["*"]), attrs("get", name="p"), True),
        (rule(["pods"], ["get"], names=["p"]), attrs("get", name="p"), True),
        (rule(["pods"], ["get"], names=["p"]), attrs("get", name="q"), False),
        (rule(["pods"], ["create"], names=["p"]), attrs("create"), False),
        (rule(["pods"], ["list"], names=["p"]), attrs("list"), False),
        (rule(["pods"], ["list"], names=["p"]), attrs("list", name="p"), True),
        (rule(["pods"], ["get"], names=[]), attrs("get", name="q"), True),
        ({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, attrs("get"), False),
    ],
)
def test_rule_matching(rule_: dict[str, Any], request_: Attributes, allowed: bool) -> None:
    assert rule_allows(request_, rule_) is allowed


@pytest.mark.parametrize(
    ("urls", "path", "allowed"),
    [
        (["/healthz"], "/healthz", True),
        (["/healthz"], "/healthz/etcd", False),
        (["/healthz/*"], "/healthz/etcd", True),
        (["/apis*"], "/apis/example.com", True),
        (["*"], "/anything", True),
    ],
)
def test_non_resource_urls(urls: list[str], path: str, allowed: bool) -> None:
    request = Attributes(ALICE, "get", resource_request=False, path=path)
    assert rule_allows(request, {"nonResourceURLs": urls, "verbs": ["get"]}) is allowed
    assert not rule_allows(
        Attributes(ALICE, "post", resource_request=False, path=path),
        {"nonResourceURLs": urls, "verbs": ["get"]},
    )


async def test_a_role_grants_its_verbs_in_its_namespace_only(
    server: ApiServer, api: Api, alice: Api
) -> None:
    await api.create(CM, configmap("c"))
    await api.create("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await grant(api, rule(["configmaps"], ["get", "list"]))
    assert (await alice.get(f"{CM}/c")).status == 200
    assert (await alice.get(CM)).status == 200
    assert (await alice.get("/api/v1/namespaces/other/configmaps")).status == 403
    assert (await alice.get("/api/v1/configmaps")).status == 403  # all namespaces: cluster scope
    assert (await alice.post(CM, configmap("d"))).status == 403
    assert (await alice.delete(f"{CM}/c")).status == 403
    assert (await alice.delete(CM)).status == 403  # deletecollection


async def test_watch_is_not_list(api: Api, alice: Api) -> None:
    await grant(api, rule(["configmaps"], ["list"]))
    assert (await alice.get(CM)).status == 200
    status, events = await alice.watch_lines(CM, {"timeoutSeconds": "1"}, count=1)
    assert status == 403
    assert "cannot watch resource" in events[0]["message"]


async def test_resource_names_limit_reads_by_name_and_by_field_selector(
    api: Api, alice: Api
) -> None:
    await api.create(CM, configmap("mine"))
    await api.create(CM, configmap("theirs"))
    await grant(api, rule(["configmaps"], ["get", "list", "watch", "create"], names=["mine"]))
    assert (await alice.get(f"{CM}/mine")).status == 200
    assert (await alice.get(f"{CM}/theirs")).status == 403
    # A list names no object, so resourceNames never match it, unless the field selector does.
    assert (await alice.get(CM)).status == 403
    selected = await alice.get(CM, params={"fieldSelector": "metadata.name=mine"})
    assert selected.status == 200
    assert [i["metadata"]["name"] for i in selected.body["items"]] == ["mine"]
    other = await alice.get(CM, params={"fieldSelector": "metadata.name=theirs"})
    assert other.status == 403
    assert other.body["message"].startswith('configmaps "theirs" is forbidden: User "alice"')
    status, _ = await alice.watch_lines(
        CM, {"fieldSelector": "metadata.name=mine", "timeoutSeconds": "1"}, count=1
    )
    assert status == 200
    # A create carries no name in its path: denied even for the listed name.
    assert (await alice.post(CM, configmap("mine-2"))).status == 403


async def test_subresources_are_resources_of_their_own(
    server: ApiServer, api: Api, alice: Api
) -> None:
    server.load_crds(WIDGET_CRD)
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    await api.create(widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                               "metadata": {"name": "w"}, "spec": {}})  # fmt: skip
    await grant(api, rule(["widgets/status"], ["get", "patch"], groups=["example.com"]))
    assert (await alice.get(f"{widgets}/w")).status == 403
    assert (await alice.get(f"{widgets}/w/status")).status == 200
    patched = await alice.patch(f"{widgets}/w/status", {"status": {"phase": "Ready"}})
    assert patched.status == 200
    denied = await alice.get(f"{widgets}/w/scale")
    assert denied.body["message"] == (
        'widgets.example.com "w" is forbidden: User "alice" cannot get resource "widgets/scale" '
        'in API group "example.com" in the namespace "default"'
    )
    assert denied.body["details"] == {"name": "w", "group": "example.com", "kind": "widgets"}


async def test_subjects_user_group_and_service_account(server: ApiServer, api: Api) -> None:
    await api.create(ROLES, role("read", rule(["configmaps"], ["get"])))
    await api.create(CM, configmap("c"))
    for name, subject in [
        ("by-group", group("dev")),
        ("by-sa", service_account("robot")),  # the namespace defaults to the binding's
        ("by-sa-elsewhere", service_account("robot", "kube-system")),
    ]:
        await api.create(ROLEBINDINGS, binding(name, "read", subject))
    server.add_token("t-dev", user="carol", groups=["dev"])
    server.add_token("t-ops", user="dave", groups=["ops"])
    for namespace in ("default", "kube-system"):
        await api.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                         {"metadata": {"name": "robot"}})  # fmt: skip
    robot = server.service_account_token("default", "robot")
    other_robot = server.service_account_token("kube-system", "robot")
    expected = {"t-dev": 200, "t-ops": 403, robot: 200, other_robot: 200}
    for token, code in expected.items():
        async with client(server.url, token) as who:
            assert (await who.get(f"{CM}/c")).status == code, token
    # The kube-system robot is bound in default only: nothing in its own namespace.
    async with client(server.url, other_robot) as who:
        assert (await who.get("/api/v1/namespaces/kube-system/configmaps/x")).status == 403


async def test_a_role_binding_may_reference_a_cluster_role(api: Api, alice: Api) -> None:
    await api.create(
        CLUSTERROLES, role("pod-reader", rule(["pods"], ["get", "list"]), cluster=True)
    )
    await api.create(
        ROLEBINDINGS, binding("rb", "pod-reader", user("alice"), ref_kind="ClusterRole")
    )
    assert (await alice.get(PODS)).status == 200
    assert (await alice.get("/api/v1/pods")).status == 403  # only where it is bound
    await api.create(
        CLUSTERROLEBINDINGS,
        binding("crb", "pod-reader", group("dev"), ref_kind="ClusterRole", cluster=True),
    )
    assert (await alice.get("/api/v1/pods")).status == 200
    assert (await alice.get("/api/v1/namespaces/kube-system/pods")).status == 200


async def test_cluster_scoped_resources_need_a_cluster_role_binding(api: Api, alice: Api) -> None:
    await api.create(ROLES, role("ns", rule(["namespaces", "nodes"], ["get", "list"])))
    await api.create(ROLEBINDINGS, binding("rb", "ns", user("alice")))
    # A request on namespace x itself is in namespace x: a RoleBinding there covers it.
    assert (await alice.get("/api/v1/namespaces/default")).status == 200
    listed = await alice.get("/api/v1/nodes")
    assert listed.body["message"] == (
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the '
        "cluster scope"
    )
    assert listed.body["details"] == {"kind": "nodes"}


async def test_a_missing_role_is_the_reason_of_the_denial(api: Api, alice: Api) -> None:
    await api.create(ROLEBINDINGS, binding("rb", "gone", user("alice")))
    missing = binding("crb", "gone-too", user("alice"), ref_kind="ClusterRole", cluster=True)
    await api.create(CLUSTERROLEBINDINGS, missing)
    reply = await alice.get(f"{PODS}/p")
    assert reply.body["message"] == (
        'pods "p" is forbidden: User "alice" cannot get resource "pods" in API group "" in the '
        'namespace "default": RBAC: [clusterrole.rbac.authorization.k8s.io "gone-too" not found, '
        'role.rbac.authorization.k8s.io "gone" not found]'
    )


async def test_changes_to_roles_apply_to_the_next_request(api: Api, alice: Api) -> None:
    await api.create(PODS, pod("p"))
    assert (await alice.get(f"{PODS}/p")).status == 403
    await grant(api, rule(["pods"], ["get"]))
    assert (await alice.get(f"{PODS}/p")).status == 200
    await api.delete(f"{ROLEBINDINGS}/rb")
    assert (await alice.get(f"{PODS}/p")).status == 403
