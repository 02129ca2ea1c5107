from etctl.jobs.launcher import launcher_role, launcher_role_binding, launcher_service_account
from etctl.jobs.trainingjob._plugin import operator_rules


def test_role_limits_exec_to_the_workers_and_fixes_the_configmap_rule() -> None:
    role = launcher_role(
        "tj-launcher",
        workers=["tj-worker-3", "tj-worker-0"],
        config_map="tj-config",
        exec_into_workers=True,
    )
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": [""],
            "resources": ["pods/exec"],
            "verbs": ["get", "create"],
            "resourceNames": ["tj-worker-0", "tj-worker-3"],
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "verbs": ["get"],
            "resourceNames": ["tj-config"],
        },
    ]


def test_no_exec_rule_without_workers_or_in_ssh_mode() -> None:
    # An empty resourceNames list would grant exec into every pod of the namespace.
    for workers, kubexec in (([], True), (["tj-worker-0"], False)):
        role = launcher_role("r", workers=workers, config_map="c", exec_into_workers=kubexec)
        assert all("pods/exec" not in rule["resources"] for rule in role["rules"])


def test_binding_and_account() -> None:
    assert launcher_service_account("tj-launcher")["metadata"] == {"name": "tj-launcher"}
    binding = launcher_role_binding("tj-launcher")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "tj-launcher",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "tj-launcher"}]


def test_operator_holds_what_it_grants() -> None:
    # RBAC escalation prevention: the operator must hold every permission a launcher Role grants.
    granted = {
        (group, resource, verb)
        for rule in operator_rules()
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
    }
    role = launcher_role("r", workers=["w"], config_map="c", exec_into_workers=True)
    needed = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    pods = {("", "pods", verb) for verb in ("get", "list", "watch")}  # the generic controller's
    assert needed - granted <= pods
    assert {("", "pods/exec", "get"), ("", "pods/exec", "create")} <= granted
    assert ("kai.alibabacloud.com", "scaleouts/status", "patch") in granted
    assert ("rbac.authorization.k8s.io", "roles", "update") in granted
