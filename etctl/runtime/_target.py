"""What goes on the wire before a request's body: its target, built in one place, and its head.

Every request the client sends gets its target from :func:`request_target`: the server URL's path
prefix, the API path whose every segment :func:`api_path` percent-encoded (the group, version and
plural of a :class:`~etctl.runtime.Resource` as much as a name, a namespace or a subresource),
then the query, every key and value percent-encoded. Every header line goes through
:func:`header_line`. So no input, however it was built, can end the request line or a header and
begin a second request: the transport's promise that no CR or LF goes out is kept here, and
checked, not assumed.

Invariants:

* a target holds visible ASCII only: no space, no control character, nothing outside ASCII;
* a path segment is never empty, ``.`` or ``..`` (a server that normalises the path would address
  another object), and is encoded so that ``/``, ``?``, ``#`` and ``%`` in it stay inside it;
* a method is an RFC 9110 token; a header name is a token and its value visible ASCII and spaces;
* anything else raises :class:`~etctl.errors.UnsafeRequest` before a byte of the request exists.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Final
from urllib.parse import quote, urlencode

from etctl.errors import UnsafeRequest

__all__ = [
    "Query",
    "api_path",
    "check_method",
    "constant_header_line",
    "header_line",
    "request_target",
]

Query = Sequence[tuple[str, str]]
"""Query parameters in order; a key may repeat (exec's ``command``)."""

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PATH: Final = re.compile(r"(?:/[A-Za-z0-9\-._~%!$&'()*+,;=:@]+)+")
"""An encoded absolute path: segments of RFC 3986 ``pchar``."""
_DOT_SEGMENTS: Final = frozenset({"", ".", ".."})
_UNRESERVED: Final = re.compile(r"[A-Za-z0-9_.~-]+")
"""RFC 3986 unreserved characters: what ``quote(segment, safe="")`` never encodes."""
_UNRESERVED_PATH: Final = re.compile(r"(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.~-]+)+")
"""An absolute path of unreserved segments, none of them ``.`` or ``..``: nothing to encode."""


def api_path(*segments: str) -> str:
    """``/seg/seg/...``, each segment percent-encoded (unreserved characters kept).

    Raises:
        UnsafeRequest: an empty segment, or ``.`` or ``..``.
    """
    path = "/" + "/".join(segments)
    # Most paths (names, plurals, versions) are unreserved characters only, which quote() keeps
    # as they are: told by one match of the whole path, the count of slashes saying that no
    # segment held one of its own.
    if path.count("/") == len(segments) and _UNRESERVED_PATH.fullmatch(path):
        return path
    parts = []
    for segment in segments:
        if segment in _DOT_SEGMENTS:
            msg = f"a path segment may not be {segment!r}: refused, it would address another path"
            raise UnsafeRequest(msg)
        parts.append(segment if _UNRESERVED.fullmatch(segment) else quote(segment, safe=""))
    return "/" + "/".join(parts)


def request_target(prefix: str, path: str, query: Query = ()) -> str:
    """The request line's target: ``prefix``, the encoded ``path``, then ``query`` encoded.

    ``prefix`` is the server URL's path (or its absolute form, for a plain-HTTP proxy); ``path``
    comes from :func:`api_path`.

    Raises:
        UnsafeRequest: ``path`` is not an encoded absolute path, or the target would hold a
            space, a control character or anything outside ASCII.
    """
    if not _PATH.fullmatch(path):
        msg = f"the request path {path!r} is not an encoded absolute path: refused"
        raise UnsafeRequest(msg)
    target = prefix + path
    if query:
        target = f"{target}?{urlencode(query)}"
    if not (target.isascii() and target.isprintable()) or " " in target:
        msg = f"the request target {target[:200]!r} holds a space or control character: refused"
        raise UnsafeRequest(msg)
    return target


@functools.lru_cache(maxsize=64)
def check_method(method: str) -> str:
    """``method``, when it is a token (no space, control character or anything outside ASCII).

    Raises:
        UnsafeRequest: it is not.
    """
    if not _TOKEN.fullmatch(method):
        msg = f"the method {method[:40]!r} is not an HTTP token: refused"
        raise UnsafeRequest(msg)
    return method


def header_line(name: str, value: str) -> str:
    """``name: value`` and its CRLF, when both may be sent as they are.

    Raises:
        UnsafeRequest: the name is not a token, or the value holds a control character (CR, LF,
            NUL, a tab) or anything outside ASCII.
    """
    if not _TOKEN.fullmatch(name):
        msg = f"the header name {name[:40]!r} is not an HTTP token: refused"
        raise UnsafeRequest(msg)
    if not (value.isascii() and value.isprintable()):
        msg = f"the {name} header holds a control character or non-ASCII: refused"
        raise UnsafeRequest(msg)
    return f"{name}: {value}\r\n"


@functools.lru_cache(maxsize=256)
def constant_header_line(name: str, value: str) -> str:
    """:func:`header_line` of a header whose values repeat (``Accept``, ``Content-Type``).

    Each value is checked once; what it refuses is refused every time (an error is not kept).

    Raises:
        UnsafeRequest: as :func:`header_line`.
    """
    return header_line(name, value)
