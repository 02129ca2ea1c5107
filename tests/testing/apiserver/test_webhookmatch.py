"""Which webhooks a request matches: rules, wildcards, subresources, scope and match policy."""

from __future__ import annotations

from typing import Any

import pytest

from etctl.runtime import LabelSelector
from etctl.testing._apiserver.admissionrequest import AdmissionAttributes
from etctl.testing._apiserver.builtin import builtin_resources
from etctl.testing._apiserver.registry import ResourceInfo, VersionInfo
from etctl.testing._apiserver.services import ClusterIPAllocator
from etctl.testing._apiserver.store import Store
from etctl.testing._apiserver.strategy import Strategy
from etctl.testing._apiserver.webhookconfigs import ClientConfig, Rule, Webhook
from etctl.testing._apiserver.webhookmatch import should_call

RESOURCES = {r.plural: r for r in builtin_resources(ClusterIPAllocator())}
WIDGETS = ResourceInfo(
    group="example.com",
    plural="widgets",
    singular="widget",
    kind="Widget",
    namespaced=True,
    versions=(VersionInfo("v1"), VersionInfo("v1beta1", storage=False)),
    strategy=Strategy(),
    custom=True,
)


def hook(*rules: Rule, match_policy: str = "Equivalent") -> Webhook:
    return Webhook(
        configuration="c",
        name="h.example.com",
        mutating=False,
        uid="c/0",
        rules=rules,
        client=ClientConfig(url="https://127.0.0.1/"),
        failure_policy="Fail",
        match_policy=match_policy,
        namespace_selector=LabelSelector.everything(),
        object_selector=LabelSelector.everything(),
        side_effects="None",
        timeout_seconds=10,
        review_versions=("v1",),
        reinvocation="Never",
    )


def request(
    info: ResourceInfo, *, version: str = "v1", sub: str = "", op: str = "CREATE", ns: str = "d"
) -> AdmissionAttributes:
    obj: dict[str, Any] = {"metadata": {"name": "x"}}
    return AdmissionAttributes(op, info, version, sub, "x", ns, obj, None, False)


def rule(resources: tuple[str, ...], **kw: Any) -> Rule:
    return Rule(
        operations=kw.get("operations", ("*",)),
        api_groups=kw.get("groups", ("*",)),
        api_versions=kw.get("versions", ("*",)),
        resources=resources,
        scope=kw.get("scope", "*"),
    )


@pytest.mark.parametrize(
    ("resources", "subresource", "matches"),
    [
        (("pods",), "", True),
        (("pods",), "status", False),
        (("pods/status",), "status", True),
        (("pods/*",), "status", True),
        (("pods/*",), "", True),  # "*" after the slash matches the resource itself too
        (("*/status",), "status", True),
        (("*",), "", True),
        (("*",), "status", False),
        (("*/*",), "status", True),
    ],
)
def test_resources_and_subresources(
    resources: tuple[str, ...], subresource: str, matches: bool
) -> None:
    attributes = request(RESOURCES["pods"], sub=subresource, op="UPDATE")
    assert (should_call(hook(rule(resources)), attributes, Store()) is not None) is matches


def test_operations_groups_and_versions() -> None:
    pods = request(RESOURCES["pods"])
    assert should_call(hook(rule(("pods",), operations=("UPDATE",))), pods, Store()) is None
    assert should_call(hook(rule(("pods",), groups=("apps",))), pods, Store()) is None
    assert should_call(hook(rule(("pods",), versions=("v2",))), pods, Store()) is None
    assert should_call(hook(rule(("pods",), operations=("CREATE",))), pods, Store()) is not None


@pytest.mark.parametrize(
    ("plural", "namespace", "scope", "matches"),
    [
        ("pods", "d", "Namespaced", True),
        ("pods", "d", "Cluster", False),
        ("nodes", "", "Cluster", True),
        ("nodes", "", "Namespaced", False),
        ("namespaces", "", "Cluster", True),
        ("namespaces", "", "Namespaced", False),
    ],
)
def test_scope(plural: str, namespace: str, scope: str, matches: bool) -> None:
    attributes = request(RESOURCES[plural], ns=namespace)
    found = should_call(hook(rule(("*",), scope=scope)), attributes, Store())
    assert (found is not None) is matches


def test_equivalent_versions_match_unless_exact() -> None:
    beta = rule(("widgets",), versions=("v1beta1",))
    attributes = request(WIDGETS, version="v1")
    invocation = should_call(hook(beta), attributes, Store())
    assert invocation is not None
    assert invocation.version == "v1beta1"
    assert should_call(hook(beta, match_policy="Exact"), attributes, Store()) is None
