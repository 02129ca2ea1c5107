"""Field selectors: parsing, escaping, matching and errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.runtime._selectors import FieldSelector, FieldTerm, SelectorError


@pytest.mark.parametrize(
    ("text", "canonical", "fields"),
    [
        ("", "", frozenset()),
        ("metadata.name=x", "metadata.name=x", {"metadata.name"}),
        ("metadata.name==x", "metadata.name=x", {"metadata.name"}),
        ("status.phase!=Failed", "status.phase!=Failed", {"status.phase"}),
        ("b=1,a=2", "a=2,b=1", {"a", "b"}),
        ("a=,b!=", "a=,b!=", {"a", "b"}),
        (",,", "", frozenset()),
        ("x=a\\,b", "x=a\\,b", {"x"}),
        ("x=a\\=b\\\\c", "x=a\\=b\\\\c", {"x"}),
        ("spec.nodeName=n1, status.phase=Running", " status.phase=Running,spec.nodeName=n1", None),
    ],
)
def test_field_selector_parses(text: str, canonical: str, fields: set[str] | None) -> None:
    selector = FieldSelector.parse(text)
    assert str(selector) == canonical
    if fields is not None:
        assert selector.fields == frozenset(fields)
    assert FieldSelector.parse(str(selector)) == selector


def test_field_selector_keeps_whitespace_in_names() -> None:
    # As in apimachinery: the server then rejects " status.phase" as an unsupported field label.
    selector = FieldSelector.parse("spec.nodeName=n1, status.phase=Running")
    assert selector.fields == {"spec.nodeName", " status.phase"}


def test_field_selector_unescapes_values() -> None:
    selector = FieldSelector.parse("x=a\\,b\\=c\\\\d")
    assert selector.terms == (FieldTerm("x", "a,b=c\\d"),)
    assert selector.matches({"x": "a,b=c\\d"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("a=b,x", "invalid selector: 'a=b,x'; can't understand 'x'"),
        ("status.state=Cl=ean", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name!==hldr", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as info:
        FieldSelector.parse(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("text", "fields", "expected"),
    [
        ("", {"a": "b"}, True),
        ("metadata.name=x", {"metadata.name": "x"}, True),
        ("metadata.name=x", {"metadata.name": "y"}, False),
        ("metadata.name=x", {}, False),
        ("metadata.name=", {}, True),
        ("spec.nodeName!=", {"spec.nodeName": "n1"}, True),
        ("spec.nodeName!=", {}, False),
        ("a!=1", {}, True),
        ("a=1,b!=2", {"a": "1", "b": "3"}, True),
        ("a=1,b!=2", {"a": "1", "b": "2"}, False),
    ],
)
def test_field_selector_matches(text: str, fields: dict[str, str], expected: bool) -> None:
    assert FieldSelector.parse(text).matches(fields) is expected


def test_field_selector_helpers() -> None:
    selector = FieldSelector.parse("metadata.name=x,metadata.namespace!=y")
    assert selector.requires_exact_match("metadata.name") == "x"
    assert selector.requires_exact_match("metadata.namespace") is None
    assert not selector.empty
    assert FieldSelector.parse("").empty
    built = FieldSelector.from_fields({"metadata.name": "x"})
    assert built == FieldSelector.parse("metadata.name=x")


_FIELD_NAMES = st.from_regex(r"\A[a-z][a-zA-Z.]{0,12}\Z")


@given(
    st.lists(
        st.builds(FieldTerm, _FIELD_NAMES, st.text(max_size=8), st.booleans()),
        max_size=5,
    )
)
def test_field_selector_round_trips_through_its_string(terms: list[FieldTerm]) -> None:
    selector = FieldSelector(tuple(terms))
    assert FieldSelector.parse(str(selector)) == selector
