"""Label selectors and their requirements: parsing, canonical printing, matching, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.runtime._selectors import (
    FieldSelector,
    LabelSelector,
    Operator,
    Requirement,
    SelectorError,
)

NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


# --- label selector: parsing and canonical printing ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("x=a,y=b,z=c", "x=a,y=b,z=c"),
        ("", ""),
        ("x!=a,y=b", "x!=a,y=b"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x= ,z= ", "x=,z="),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x>1,z<5", "x>1,z<5"),
        ("x==a", "x==a"),
        ("x=a,a=x", "a=x,x=a"),
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x in (def,abc,def)", "x in (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in (,abc)", "x in (,abc)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in ()", "x in ()"),
        ("x notin (abc,def),bar,z in (),w", "bar,w,x notin (abc,def),z in ()"),
        ("notin=in", "notin=in"),
        ("in in (in, notin)", "in in (in,notin)"),
        ("x,y in (a)", "x,y in (a)"),
        ("k=v\0garbage", "k=v"),
    ],
)
def test_label_selector_parses_to_canonical_form(text: str, canonical: str) -> None:
    selector = LabelSelector.parse(text)
    assert str(selector) == canonical
    assert LabelSelector.parse(str(selector)) == selector


def test_parse_sorts_requirements_by_key_and_is_order_independent() -> None:
    assert LabelSelector.parse("x=a,a=x") == LabelSelector.parse("a=x,x=a")
    selector = LabelSelector.parse("b=1,a in (z,y),!c")
    assert [r.key for r in selector.requirements] == ["a", "b", "c"]
    assert selector.requirements[0] == Requirement("a", Operator.IN, ("y", "z"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "x=a||y=b",
            f'unable to parse requirement: values[0][x]: Invalid value: "a||y": {VALUE_MSG}',
        ),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("a=b,", "found '', expected: identifier after ','"),
        ("a=b,,c", "found ',', expected: identifier after ','"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a !b", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!!a", "unable to parse requirement: found '!', expected: identifier"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("x=(a)", "unable to parse requirement: found '(', expected: identifier"),
        (
            "app:monolith",
            f'unable to parse requirement: <nil>: Invalid value: "app:monolith": {NAME_PART_MSG}',
        ),
        (
            "a/b/c ?=? def",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name '
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
            "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "app.kubernetes_io/name=x",
            'unable to parse requirement: <nil>: Invalid value: "app.kubernetes_io/name": prefix '
            "part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "/name",
            'unable to parse requirement: <nil>: Invalid value: "/name": prefix part must be '
            "non-empty",
        ),
        (
            "prefix/",
            'unable to parse requirement: <nil>: Invalid value: "prefix/": name part must be '
            f"non-empty; {NAME_PART_MSG}",
        ),
        (
            "a" * 64,
            f'unable to parse requirement: <nil>: Invalid value: "{"a" * 64}": name part must be '
            "no more than 63 characters",
        ),
        (
            "good-key=" + "z" * 64,
            f'unable to parse requirement: values[0][good-key]: Invalid value: "{"z" * 64}": '
            "must be no more than 63 characters",
        ),
        (
            "k in (ok,-bad)",
            f'unable to parse requirement: values[0][k]: Invalid value: "-bad": {VALUE_MSG}',
        ),
        (
            'k="q"',
            f'unable to parse requirement: values[0][k]: Invalid value: "\\"q\\"": {VALUE_MSG}',
        ),
        (
            "k>x-",
            "unable to parse requirement: [values[0]: Invalid value: \"x-\": for 'Gt', 'Lt' "
            'operators, the value must be an integer, values[0][k]: Invalid value: "x-": '
            f"{VALUE_MSG}]",
        ),
    ],
)
def test_label_selector_errors_carry_the_api_server_wording(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as info:
        LabelSelector.parse(text)
    assert str(info.value) == message


def test_selector_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="expected"):
        LabelSelector.parse("a b")


# --- label selector: matching --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x==y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("x", {"x": ""}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x<1", {"x": "-3"}, True),
        ("x=z", {}, False),
        ("x=", {}, False),
        ("x=", {"x": ""}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x!=y", {}, True),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x>1", {"x": "v2"}, False),
        ("x>1", {}, False),
        ("x<1", {"x": "2"}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x in (a,b)", {"x": "c"}, False),
        ("x in (a,b)", {}, False),
        ("x notin (a,b)", {}, True),
        ("x notin (a,b)", {"x": "a"}, False),
        ("x notin ()", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("x in ()", {"x": ""}, True),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ],
)
def test_label_selector_matches_as_apimachinery(
    text: str, labels: dict[str, str], expected: bool
) -> None:
    assert LabelSelector.parse(text).matches(labels) is expected


def test_nil_and_empty_label_selectors_differ() -> None:
    nothing = LabelSelector.from_label_selector(None)
    everything = LabelSelector.from_label_selector({})
    assert not nothing.matches({})
    assert not nothing.matches({"a": "b"})
    assert not nothing.empty
    assert str(nothing) == ""
    assert everything.matches({})
    assert everything.matches({"a": "b"})
    assert everything.empty
    assert everything == LabelSelector.parse("")
    assert LabelSelector.from_label_selector({"matchLabels": {}, "matchExpressions": []}).empty
    assert nothing == LabelSelector.match_nothing()
    assert everything == LabelSelector.everything()


def test_from_label_selector_converts_labels_and_expressions() -> None:
    selector = LabelSelector.from_label_selector(
        {
            "matchLabels": {"app": "web", "tier": "front"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "canary"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]},
                {"key": "gpu", "operator": "Exists", "values": []},
            ],
        }
    )
    assert str(selector) == "app=web,env in (canary,prod),gpu,!legacy,tier=front,zone notin (b)"
    good = {"app": "web", "tier": "front", "env": "prod", "gpu": "1"}
    assert selector.matches(good)
    assert not selector.matches({**good, "legacy": "x"})
    assert not selector.matches({**good, "zone": "b"})
    assert not selector.matches({**good, "env": "dev"})
    assert selector == LabelSelector.parse(str(selector))


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]},
            '"Equals" is not a valid pod selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be "
            "empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: values set must be empty for exists and does '
            "not exist",
        ),
        (
            {"matchLabels": {"bad key": "v"}},
            f'key: Invalid value: "bad key": {NAME_PART_MSG}',
        ),
        (
            {"matchLabels": {"k": "bad value"}},
            f'values[0][k]: Invalid value: "bad value": {VALUE_MSG}',
        ),
    ],
)
def test_from_label_selector_rejects_invalid_selectors(
    obj: dict[str, object], message: str
) -> None:
    with pytest.raises(SelectorError) as info:
        LabelSelector.from_label_selector(obj)
    assert str(info.value) == message


def test_requirement_constructor_validates_operator_and_values() -> None:
    assert Requirement.new("1foo", "in", ["bar"]).values == ("bar",)
    assert Requirement.new("y", Operator.GREATER_THAN, ["1"]).matches({"y": "2"})
    with pytest.raises(SelectorError, match="exact-match compatibility requires one single value"):
        Requirement.new("x", Operator.EQUALS, ["a", "b"])
    with pytest.raises(SelectorError, match="exactly one value is required"):
        Requirement.new("x", Operator.LESS_THAN, [])
    with pytest.raises(SelectorError) as info:
        Requirement.new("x", "~", [])
    assert str(info.value) == (
        'operator: Unsupported value: "~": supported values: "in", "notin", "=", "==", "!=", '
        '"gt", "lt", "exists", "!"'
    )
    with pytest.raises(SelectorError, match="prefix part must be no more than 253 characters"):
        Requirement.new("a" * 254 + "/b", Operator.EXISTS)


def test_from_labels_is_an_unvalidated_equality_selector() -> None:
    selector = LabelSelector.from_labels({"b": "2", "a": "1"})
    assert str(selector) == "a=1,b=2"
    assert selector.matches({"a": "1", "b": "2", "c": "3"})
    assert not selector.matches({"a": "1"})
    assert LabelSelector.from_labels({}).empty


def test_requires_exact_match() -> None:
    selector = LabelSelector.parse("a=1,b in (2),c in (3,4),d!=5")
    assert selector.requires_exact_match("a") == "1"
    assert selector.requires_exact_match("b") == "2"
    assert selector.requires_exact_match("c") is None
    assert selector.requires_exact_match("d") is None
    assert selector.requires_exact_match("e") is None


def test_selectors_are_hashable_values() -> None:
    cache = {LabelSelector.parse("a=1,b"): "x", FieldSelector.parse("metadata.name=n"): "y"}
    assert cache[LabelSelector.parse("b,a=1")] == "x"
    assert cache[FieldSelector.parse("metadata.name==n")] == "y"


_KEY_NAME = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?\Z")
_PREFIX = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]{1,5}){0,2}\Z")
_KEYS = st.one_of(
    _KEY_NAME, st.sampled_from(["in", "notin"]), st.builds("{}/{}".format, _PREFIX, _KEY_NAME)
)
_VALUES = st.one_of(st.just(""), _KEY_NAME)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_KEYS)
    op = draw(st.sampled_from(list(Operator)))
    if op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        values: list[str] = []
    elif op in (Operator.IN, Operator.NOT_IN):
        values = draw(st.lists(_VALUES, min_size=1, max_size=4))
    elif op in (Operator.GREATER_THAN, Operator.LESS_THAN):
        values = [str(draw(st.integers(min_value=0, max_value=1000)))]
    else:
        values = [draw(_VALUES)]
    return Requirement.new(key, op, values)


@given(st.lists(_requirements(), max_size=5))
def test_printing_then_parsing_gives_the_same_selector(reqs: list[Requirement]) -> None:
    selector = LabelSelector(tuple(sorted(reqs, key=lambda r: (r.key, str(r)))))
    assert LabelSelector.parse(str(selector)) == selector


@given(
    st.lists(_requirements(), max_size=4),
    st.dictionaries(_KEYS, _VALUES, max_size=4),
)
def test_a_selector_matches_iff_every_requirement_does(
    reqs: list[Requirement], labels: dict[str, str]
) -> None:
    selector = LabelSelector(tuple(reqs))
    assert selector.matches(labels) == all(r.matches(labels) for r in reqs)
    assert LabelSelector.parse(str(selector)).matches(labels) == selector.matches(labels)


def test_values_in_messages_are_quoted_as_go_quotes_them() -> None:
    # strconv.Quote writes a non-printable rune below 0x80 as \x.., any other one as \u....
    with pytest.raises(SelectorError) as info:
        Requirement.new("x", Operator.IN, ["\x07", "\x85"])
    assert r'values[0][x]: Invalid value: "\a"' in str(info.value)
    assert r'values[1][x]: Invalid value: "\u0085"' in str(info.value)
