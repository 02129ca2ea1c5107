"""Metadata validation messages, as the real server words them."""

from __future__ import annotations

from etctl.testing._apiserver.validation import (
    NameRule,
    go_value,
    label_value_errors,
    name_errors,
    qualified_name_errors,
    validate_object_meta,
    validate_object_meta_update,
)


def test_subdomain_names() -> None:
    assert name_errors(NameRule.SUBDOMAIN, "a.b-c") == []
    assert name_errors(NameRule.SUBDOMAIN, "x" * 254)[0] == "must be no more than 253 characters"
    assert name_errors(NameRule.SUBDOMAIN, "job-", prefix=True) == []


def test_label_names_reject_dots_with_their_own_message() -> None:
    assert name_errors(NameRule.LABEL, "a.b") == ["must not contain dots"]
    assert name_errors(NameRule.LABEL, "A")[0].startswith(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"
    )


def test_dns1035_names_must_start_with_a_letter() -> None:
    assert name_errors(NameRule.DNS1035, "web") == []
    assert (
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?'"
        in name_errors(NameRule.DNS1035, "1x")[0]
    )


def test_path_segment_names() -> None:
    assert name_errors(NameRule.PATH_SEGMENT, "system:node:x") == []
    assert name_errors(NameRule.PATH_SEGMENT, "..") == ["may not be '..'"]
    assert name_errors(NameRule.PATH_SEGMENT, "a%b/c") == [
        "may not contain '/'",
        "may not contain '%'",
    ]


def test_qualified_names_and_label_values() -> None:
    assert qualified_name_errors("example.com/app") == []
    assert qualified_name_errors("/app") == ["prefix part must be non-empty"]
    assert qualified_name_errors("a/b/c")[0].startswith("a qualified name must consist of")
    assert label_value_errors("") == []
    assert label_value_errors("bad value")[0].startswith("a valid label must be an empty string or")


def test_object_meta_causes() -> None:
    meta = {
        "name": "ok",
        "labels": {"app": "bad value"},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": True},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True},
        ],
        "finalizers": ["orphan", "foregroundDeletion"],
    }
    causes = validate_object_meta(meta, namespaced=False, rule=NameRule.SUBDOMAIN)
    fields = [c.field for c in causes]
    assert fields == ["metadata.labels", "metadata.ownerReferences", "metadata.finalizers"]
    assert (
        "Only one reference can have Controller set to true. "
        'Found "true" in references for A/a and B/b' in causes[1].message
    )
    assert causes[2].message.endswith("finalizer orphan and foregroundDeletion cannot be both set")


def test_namespaced_objects_need_a_namespace_and_cluster_ones_refuse_it() -> None:
    missing = validate_object_meta({"name": "a"}, namespaced=True, rule=NameRule.SUBDOMAIN)
    assert [(c.field, c.message) for c in missing] == [("metadata.namespace", "Required value")]
    extra = validate_object_meta(
        {"name": "a", "namespace": "x"}, namespaced=False, rule=NameRule.SUBDOMAIN
    )
    assert [(c.field, c.message) for c in extra] == [
        ("metadata.namespace", "Forbidden: not allowed on this type")
    ]


def test_update_rules() -> None:
    old = {
        "name": "a",
        "uid": "u",
        "generation": 3,
        "deletionTimestamp": "t",
        "finalizers": ["x/a"],
    }
    new = {**old, "generation": 2, "finalizers": ["x/a", "x/b"]}
    messages = [str(c) for c in validate_object_meta_update(new, old)]
    assert messages == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"x/b"}',
        "metadata.generation: Invalid value: 2: must not be decremented",
    ]


def test_go_value_formatting() -> None:
    assert go_value("x") == '"x"'
    assert go_value(3) == "3"
    assert go_value(True) == "true"
    assert go_value(None) == "null"
    assert go_value(["a"]) == '[]string{"a"}'
