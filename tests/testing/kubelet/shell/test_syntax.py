"""The shell grammar: words, quoting, expansions, operators, redirections, refusals."""

from __future__ import annotations

import pytest

from etctl.testing._kubelet.shell.syntax import (
    Command,
    For,
    If,
    Loop,
    Part,
    Redirect,
    ShellSyntaxError,
    inner_word,
    parse,
)


def _command(source: str) -> Command:
    (item,) = parse(source)
    (command,) = item.first.commands
    assert isinstance(command, Command)
    return command


def _words(source: str) -> list[list[Part]]:
    return [list(word) for word in _command(source).words]


def test_quotes_and_escapes_make_one_word() -> None:
    assert _words("echo 'a b'\"c $X\"\\ d") == [
        [Part("text", "echo", False)],
        [
            Part("text", "a bc ", True),
            Part("param", "X", True),
            Part("text", " ", True),
            Part("text", "d", False),
        ],
    ]


def test_expansions() -> None:
    (word,) = _words("${A:-x}$1$?$(echo ')' \"(\")")
    assert [(p.kind, p.value) for p in word] == [
        ("param", "A:-x"),
        ("param", "1"),
        ("param", "?"),
        ("command", "echo ')' \"(\""),
    ]


def test_lists_and_or_pipelines() -> None:
    script = parse("a && b || c | d; ! e\nf # comment")
    assert len(script) == 3
    first = script[0]
    assert [op for op, _ in first.rest] == ["&&", "||"]
    assert len(first.rest[1][1].commands) == 2
    assert script[1].first.negated


def test_assignments_only_before_the_command_name() -> None:
    command = _command("A=1 B='x y' cmd C=2")
    assert [name for name, _ in command.assignments] == ["A", "B"]
    assert len(command.words) == 2


def test_redirections() -> None:
    command = _command("cmd >out 2>>err <in 2>&1 >&2 &>both")
    assert [(r.fd, r.op) for r in command.redirects] == [
        (1, ">"),
        (2, ">>"),
        (0, "<"),
        (2, ">&"),
        (1, ">&"),
        (1, "&>"),
    ]
    assert command.redirects[0] == Redirect(1, ">", (Part("text", "out", False),))


def test_line_continuation_and_empty_script() -> None:
    assert _words("echo a\\\nb") == [[Part("text", "echo", False)], [Part("text", "ab", False)]]
    assert parse("  \n# nothing\n") == ()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("case x in esac", "'case' is not supported"),
        ("if true; then :", "expected 'fi'"),
        ("if true; :; fi", "'fi' is not supported here"),
        ("for 1x in a; do :; done", "needs a variable name"),
        ("while true; do done", "unexpected 'done'"),
        ("then :", "'then' is not supported here"),
        ("sleep 1 &", "background jobs"),
        ("(cd /)", "subshells"),
        ("echo `date`", "backquotes"),
        ("echo $((1+1))", "arithmetic"),
        ("echo 'open", "unterminated"),
        ("echo ${X", "missing '}'"),
        ("echo >", "missing target"),
        ("&& b", "unexpected"),
        ("a |", "unexpected end of input"),
    ],
)
def test_what_is_outside_the_subset_is_refused(source: str, message: str) -> None:
    with pytest.raises(ShellSyntaxError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(source)


def test_operator_words_keep_quotes_and_expansions() -> None:
    assert inner_word('"a  b" $C') == (
        Part("text", "a  b", True),
        Part("text", " ", True),
        Part("param", "C", False),
    )


def test_compound_commands_parse_into_their_clauses() -> None:
    (item,) = parse("if a; then b; elif c; then d; else e; fi")
    (clause,) = item.first.commands
    assert isinstance(clause, If)
    assert len(clause.branches) == 2
    assert clause.otherwise is not None
    (item,) = parse("for x in 1 2; do echo $x; done")
    (loop,) = item.first.commands
    assert isinstance(loop, For)
    assert (loop.name, len(loop.words or ())) == ("x", 2)
    (item,) = parse("until a\ndo\n b\ndone | cat")
    (until, cat) = item.first.commands
    assert isinstance(until, Loop)
    assert until.until
    assert isinstance(cat, Command)
