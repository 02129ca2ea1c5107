"""The launcher's RBAC objects and the operator's rules, for any kind."""

from __future__ import annotations

from etctl.common import PolicyRule
from etctl.jobs.launcher import launcher_objects, operator_rules
from etctl.runtime import CONFIGMAPS, ROLES


def test_an_ssh_kind_may_do_without_rbac() -> None:
    wanted = launcher_objects(
        account="pi-launcher",
        config_map="pi-config",
        config=lambda: {"data": {}},
        workers=["pi-worker-0"],
        exec_into_workers=False,
        rbac=False,
    )
    assert [(o.resource, o.name) for o in wanted] == [(CONFIGMAPS, "pi-config")]


def test_the_role_names_the_current_workers() -> None:
    wanted = launcher_objects(
        account="pi-launcher",
        config_map="pi-config",
        config=lambda: {"data": {}},
        workers=["pi-worker-3", "pi-worker-0"],
        exec_into_workers=True,
    )
    (role,) = [o for o in wanted if o.resource == ROLES]
    rules = role.build()["rules"]
    assert {
        "apiGroups": [""],
        "resources": ["pods/exec"],
        "verbs": ["get", "create"],
        "resourceNames": ["pi-worker-0", "pi-worker-3"],
    } in rules


def test_a_kind_adds_its_own_rules() -> None:
    mine = PolicyRule(("kubeflow.org",), ("mpijobs",), ("get",))
    rules = operator_rules(mine)
    assert rules[-1] == mine
    assert PolicyRule(("",), ("pods/exec",), ("get", "create")) in rules
