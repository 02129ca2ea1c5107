"""The answer parser (llhttp plus the client's rules), property by property."""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from etctl.runtime._http_parser import (
    DONE,
    MAX_HEAD,
    MAX_INTERIM,
    SWITCHED,
    AnswerParser,
    Broken,
    TooLarge,
)

TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=1, max_size=12)
VALUE = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=40)
HEADERS = st.lists(st.tuples(TOKEN, VALUE), max_size=6).map(
    lambda pairs: [(f"x-{name}", value) for name, value in pairs]
)
STATUS = st.integers(200, 599).filter(lambda code: code not in (204, 304))


def encode(
    status: int, headers: list[tuple[str, str]], body: bytes, chunks: list[int] | None
) -> bytes:
    """An answer framed by Content-Length (``chunks`` None) or by chunks of those sizes."""
    lines = [f"HTTP/1.1 {status} Reason"] + [f"{name}: {value}" for name, value in headers]
    if chunks is None:
        lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    lines.append("Transfer-Encoding: chunked")
    framed, offset = [], 0
    for size in [*chunks, len(body)]:
        piece = body[offset : offset + size]
        offset += len(piece)
        if piece:
            framed.append(b"%x\r\n%s\r\n" % (len(piece), piece))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + b"".join(framed) + b"0\r\n\r\n"


def parse(pieces: list[bytes], **expect: int | bool) -> AnswerParser:
    parser = AnswerParser()
    parser.expect(**expect)  # type: ignore[arg-type]
    for piece in pieces:
        parser.feed(piece)
    return parser


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@given(
    status=STATUS,
    headers=HEADERS,
    body=st.binary(max_size=3000),
    chunks=st.none() | st.lists(st.integers(1, 700), max_size=5),
    cuts=st.lists(st.integers(0, 10_000), max_size=12),
)
def test_an_answer_parses_the_same_however_it_is_split(
    status: int,
    headers: list[tuple[str, str]],
    body: bytes,
    chunks: list[int] | None,
    cuts: list[int],
) -> None:
    data = encode(status, headers, body, chunks)
    parser = parse(split(data, cuts))
    assert parser.state == DONE
    assert parser.response is not None
    assert parser.response.status == status
    expected: dict[str, str] = {}
    for name, value in headers:
        expected[name] = f"{expected[name]}, {value}" if name in expected else value
    for name, value in expected.items():
        assert parser.response.headers[name] == value
    assert b"".join(parser.pieces) == body
    assert parser.keep_alive


@given(interim=st.integers(0, MAX_INTERIM + 3), cuts=st.lists(st.integers(0, 400), max_size=6))
def test_at_most_five_interim_answers(interim: int, cuts: list[int]) -> None:
    data = b"HTTP/1.1 100 Continue\r\n\r\n" * interim + encode(200, [], b"ok", None)
    if interim <= MAX_INTERIM:
        assert b"".join(parse(split(data, cuts)).pieces) == b"ok"
    else:
        with pytest.raises(Broken, match="interim"):
            parse(split(data, cuts))


LAX_LENGTHS = ["+{}", "{}_0", "0x{:x}", "-{}", "{},{}"]


@given(length=st.integers(0, 10**6), form=st.sampled_from(LAX_LENGTHS))
def test_lax_content_lengths_are_refused(length: int, form: str) -> None:
    text = form.format(length, length)
    with pytest.raises(Broken):
        parse([f"HTTP/1.1 200 OK\r\nContent-Length: {text}\r\n\r\n".encode()])


@given(size=st.integers(1, 2**20), form=st.sampled_from(["0x{:x}", "+{:x}", "{:x} x", "-{:x}"]))
def test_lax_chunk_sizes_are_refused(size: int, form: str) -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    with pytest.raises(Broken):
        parse([head + form.format(size).encode() + b"\r\n"])


@given(value=VALUE.filter(lambda text: len(text) >= 1), at=st.integers(0, 100))
def test_a_bare_lf_anywhere_in_a_header_value_is_refused(value: str, at: int) -> None:
    cut = at % (len(value) + 1)
    bad = value[:cut] + "\n" + value[cut:]
    with pytest.raises(Broken):
        parse([f"HTTP/1.1 200 OK\r\nX-A: {bad}\r\nContent-Length: 0\r\n\r\n".encode()])


@given(status=st.sampled_from(["+200", "2000", "099", "20", "abc"]))
def test_malformed_statuses_are_refused(status: str) -> None:
    with pytest.raises(Broken):
        parse([f"HTTP/1.1 {status} OK\r\nContent-Length: 0\r\n\r\n".encode()])


@given(extra=st.integers(1, 8), cuts=st.lists(st.integers(0, 10**6), max_size=8))
def test_a_head_over_the_limit_is_refused_whole_or_in_pieces(extra: int, cuts: list[int]) -> None:
    padding = b"X-Pad: " + b"a" * (MAX_HEAD + extra * 1000) + b"\r\n"
    data = b"HTTP/1.1 200 OK\r\n" + padding + b"Content-Length: 0\r\n\r\n"
    with pytest.raises(Broken, match="exceed"):
        parse(split(data, cuts))


@given(body=st.binary(min_size=1, max_size=2000), chunked=st.booleans(), spare=st.integers(0, 5))
def test_a_body_over_the_limit_is_refused(body: bytes, chunked: bool, spare: int) -> None:
    data = encode(200, [], body, [100] if chunked else None)
    limit = max(len(body) - 1 - spare, 1) if len(body) > 1 else 0
    if not limit:
        return
    with pytest.raises(TooLarge):
        parse([data], limit=limit)
    assert b"".join(parse([data], limit=len(body)).pieces) == body


@given(beyond=st.binary(min_size=1, max_size=200))
def test_bytes_beyond_an_answer_never_become_part_of_it(beyond: bytes) -> None:
    data = encode(200, [], b"honest", None) + beyond
    parser = parse([data])
    assert b"".join(parser.pieces) == b"honest"
    assert parser.state == DONE
    # llhttp skips CR and LF between messages; anything else means the connection is not reused.
    assert parser.keep_alive == (beyond.strip(b"\r\n") == b"")


@given(noise=st.binary(max_size=300), upgrade=st.booleans())
def test_any_bytes_parse_or_raise_broken_only(noise: bytes, upgrade: bool) -> None:
    with contextlib.suppress(Broken):  # anything else escaping fails the test
        parse([b"HTTP/1.1 " + noise], upgrade=upgrade)


def test_a_101_is_an_answer_only_when_asked_for() -> None:
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nrest"
    parser = parse([switch], upgrade=True)
    assert parser.state == SWITCHED
    assert parser.rest == b"rest"
    with pytest.raises(Broken, match="101"):
        parse([switch])
    with pytest.raises(Broken, match="Upgrade"):
        parse([b"HTTP/1.1 101 Switching Protocols\r\n\r\n"], upgrade=True)


def test_a_head_only_answer_ends_at_its_head_and_the_parser_starts_afresh() -> None:
    parser = parse([b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"], head_only=True)
    assert parser.state == DONE
    assert parser.keep_alive
    parser.expect()
    parser.feed(encode(200, [], b"next", None))
    assert b"".join(parser.pieces) == b"next"
