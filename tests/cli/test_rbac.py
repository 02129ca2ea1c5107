from collections.abc import Sequence
from typing import Any

from etctl.cli._rbac import GANG_RULES, cluster_role_rules, merge_rules, rule_to_dict
from etctl.common import DesiredObject, JobState, PolicyRule
from etctl.jobs.tfjob._plugin import TFJobPlugin
from etctl.runtime import CONFIGMAPS, Resource


def grants(rules: list[PolicyRule]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule.api_groups:
            for resource in rule.resources:
                out.setdefault((group, resource), set()).update(rule.verbs)
    return out


class WithExtras(TFJobPlugin):
    """A TFJob-like plugin that also owns ConfigMaps and needs to read nodes."""

    owned_resources: Sequence[Resource] = (CONFIGMAPS,)

    def extra_objects(self, job: Any, state: JobState[Any]) -> Sequence[DesiredObject]:
        return ()

    def rbac_rules(self) -> Sequence[PolicyRule]:
        return (PolicyRule(api_groups=("",), resources=("nodes",), verbs=("get", "list")),)


def test_tfjob_needs_pods_services_events_and_its_own_kind() -> None:
    got = grants(cluster_role_rules([TFJobPlugin()]))
    own = {"get", "list", "watch", "create", "patch", "delete"}
    assert got == {
        ("", "pods"): own,
        ("", "services"): own,
        ("", "events"): {"create", "patch"},
        ("kubeflow.org", "tfjobs"): {"get", "list", "watch", "delete"},
        ("kubeflow.org", "tfjobs/status"): {"patch"},
        ("kubeflow.org", "tfjobs/finalizers"): {"update"},
    }


def test_nothing_dangerous_by_default() -> None:
    got = grants(cluster_role_rules([TFJobPlugin()], gang_scheduler="volcano"))
    for resource in ("secrets", "pods/exec", "roles", "rolebindings", "*"):
        assert all(r != resource for _, r in got)
    assert all("*" not in verbs and "escalate" not in verbs for verbs in got.values())


def test_capabilities_add_owned_resources_and_declared_rules() -> None:
    got = grants(cluster_role_rules([WithExtras()]))
    assert got[("", "configmaps")] == {
        "get",
        "list",
        "watch",
        "create",
        "patch",
        "delete",
    }
    assert got[("", "nodes")] == {"get", "list"}


def test_gang_schedulers_add_their_podgroups() -> None:
    for name, group in (
        ("volcano", "scheduling.volcano.sh"),
        ("scheduler-plugins", "scheduling.x-k8s.io"),
    ):
        got = grants(cluster_role_rules([TFJobPlugin()], gang_scheduler=name))
        assert "create" in got[(group, "podgroups")]
        assert got[("scheduling.k8s.io", "priorityclasses")] == {"get", "list", "watch"}
    assert set(GANG_RULES) == {"volcano", "scheduler-plugins"}


def test_merge_unions_verbs_and_sorts() -> None:
    merged = merge_rules(
        [
            PolicyRule(api_groups=("b",), resources=("x",), verbs=("watch", "get")),
            PolicyRule(api_groups=("a", "b"), resources=("x",), verbs=("list", "get")),
            PolicyRule(api_groups=("a",), resources=("x",), verbs=("get",), resource_names=("n",)),
        ]
    )
    assert [rule_to_dict(r) for r in merged] == [
        {"apiGroups": ["a"], "resources": ["x"], "verbs": ["get", "list"]},
        {"apiGroups": ["a"], "resources": ["x"], "verbs": ["get"], "resourceNames": ["n"]},
        {"apiGroups": ["b"], "resources": ["x"], "verbs": ["get", "list", "watch"]},
    ]


def test_same_plugins_same_rules() -> None:
    assert cluster_role_rules([TFJobPlugin()]) == cluster_role_rules([TFJobPlugin(), TFJobPlugin()])
