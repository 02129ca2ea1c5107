"""Reading request paths and query parameters as the real server does."""

from __future__ import annotations

import pytest

from etctl.errors import BadRequest
from etctl.testing._apiserver.request import parse_bool, parse_int, parse_optional_bool, parse_path


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("", "v1", "ns", "pods", "", "", "list")),
        ("GET", "/api/v1/namespaces/ns/pods/p", {}, ("", "v1", "ns", "pods", "p", "", "get")),
        (
            "GET",
            "/api/v1/namespaces/ns/pods",
            {"watch": "True"},
            ("", "v1", "ns", "pods", "", "", "watch"),
        ),
        (
            "GET",
            "/api/v1/watch/namespaces/ns/pods/p",
            {},
            ("", "v1", "ns", "pods", "p", "", "watch"),
        ),
        ("GET", "/api/v1/pods", {}, ("", "v1", "", "pods", "", "", "list")),
        ("GET", "/api/v1/namespaces", {}, ("", "v1", "", "namespaces", "", "", "list")),
        ("GET", "/api/v1/namespaces/ns", {}, ("", "v1", "", "namespaces", "ns", "", "get")),
        (
            "PUT",
            "/api/v1/namespaces/ns/finalize",
            {},
            ("", "v1", "", "namespaces", "ns", "finalize", "update"),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/ns/status",
            {},
            ("", "v1", "", "namespaces", "ns", "status", "patch"),
        ),
        (
            "POST",
            "/api/v1/namespaces/ns/pods/p/binding",
            {},
            ("", "v1", "ns", "pods", "p", "binding", "create"),
        ),
        (
            "DELETE",
            "/apis/g.io/v2/namespaces/ns/things",
            {},
            ("g.io", "v2", "ns", "things", "", "", "deletecollection"),
        ),
        ("DELETE", "/apis/g.io/v2/things/t", {}, ("g.io", "v2", "", "things", "t", "", "delete")),
    ],
)
def test_resource_paths(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    info = parse_path(method, path, query)
    assert info.resource_request
    got = (
        info.group,
        info.version,
        info.namespace,
        info.resource,
        info.name,
        info.subresource,
        info.verb,
    )
    assert got == expected


@pytest.mark.parametrize(
    "path", ["/api", "/apis", "/apis/g.io", "/api/v1", "/apis/g.io/v1", "/version", "/openapi/v3"]
)
def test_non_resource_paths(path: str) -> None:
    assert not parse_path("GET", path, {}).resource_request


def test_booleans_and_integers_like_go() -> None:
    for text in ("1", "t", "T", "TRUE", "true", "True"):
        assert parse_bool({"x": text}, "x") is True
    for text in ("0", "f", "F", "FALSE", "false", "False"):
        assert parse_bool({"x": text}, "x") is False
    assert parse_bool({}, "x", default=True) is True
    assert parse_optional_bool({}, "x") is None
    with pytest.raises(BadRequest, match=r'strconv\.ParseBool: parsing "yes": invalid syntax'):
        parse_bool({"x": "yes"}, "x")
    assert parse_int({"n": "12"}, "n") == 12
    assert parse_int({}, "n") is None
    with pytest.raises(BadRequest, match=r"strconv\.ParseInt"):
        parse_int({"n": "1.5"}, "n")
