"""The request target and header builder: whatever goes in, nothing can end a line."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from etctl.errors import UnsafeRequest
from etctl.runtime import PODS, Resource
from etctl.runtime._target import api_path, check_method, header_line, request_target

segments = st.text(min_size=1).filter(lambda text: text not in (".", ".."))


def visible_ascii(text: str) -> bool:
    return all(0x21 <= ord(char) <= 0x7E for char in text)


@given(st.lists(segments, min_size=1, max_size=6))
def test_each_segment_stays_one_segment_and_decodes_to_itself(parts: list[str]) -> None:
    path = api_path(*parts)
    assert visible_ascii(path)
    encoded = path.split("/")[1:]
    assert [unquote(part) for part in encoded] == parts


@given(
    group=st.text(),
    version=segments,
    plural=segments,
    namespace=segments,
    name=segments,
    sub=segments,
    query=st.lists(st.tuples(st.text(), st.text()), max_size=4),
)
def test_every_target_is_visible_ascii_and_keeps_its_parts(
    group: str,
    version: str,
    plural: str,
    namespace: str,
    name: str,
    sub: str,
    query: list[tuple[str, str]],
) -> None:
    assume(group not in (".", ".."))
    res = Resource(group, version, plural, "Thing")
    target = request_target("/prefix", res.path(namespace, name, sub), query)
    assert visible_ascii(target)
    path, _, encoded_query = target.partition("?")
    segments_sent = [unquote(part) for part in path.split("/")[2:]]
    expected = ["apis", group, version] if group else ["api", version]
    assert segments_sent == [*expected, "namespaces", namespace, plural, name, sub]
    assert parse_qsl(encoded_query, keep_blank_values=True) == query


@pytest.mark.parametrize("segment", ["", ".", ".."])
def test_empty_and_dot_segments_are_refused(segment: str) -> None:
    with pytest.raises(UnsafeRequest):
        api_path("api", segment)
    with pytest.raises(UnsafeRequest):
        PODS.path("ns", segment)


@given(st.text())
def test_a_path_not_built_by_api_path_is_refused_unless_already_encoded(path: str) -> None:
    try:
        target = request_target("", path)
    except UnsafeRequest:
        return
    assert target == path
    assert visible_ascii(target)
    assert target.startswith("/")


@given(st.text(), st.text())
def test_a_header_line_is_one_line_or_refused(name: str, value: str) -> None:
    try:
        line = header_line(name, value)
    except UnsafeRequest:
        return
    assert line == f"{name}: {value}\r\n"
    assert "\r" not in line[:-2]
    assert "\n" not in line[:-2]
    assert line.isascii()


def test_a_refused_value_is_never_shown() -> None:
    with pytest.raises(UnsafeRequest) as raised:
        header_line("Authorization", "Bearer s3cr3t\r\nX-Evil: 1")
    assert "s3cr3t" not in str(raised.value)


@given(st.text())
def test_a_method_is_a_token_or_refused(method: str) -> None:
    try:
        assert check_method(method) == method
    except UnsafeRequest:
        return
    assert visible_ascii(method)
    assert method
