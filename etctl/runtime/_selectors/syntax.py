"""The syntax of label keys and values, and apimachinery's wording of what is wrong with them.

Label keys are qualified names (``[DNS-subdomain prefix/]name``) and values are empty or names of at
most 63 characters, as ``k8s.io/apimachinery/pkg/util/validation`` defines them. The messages are
the API server's, down to Go's quoting (``%q``, ``%#v``) and its aggregation of several errors, so
a selector rejected here reads exactly as the real server's 400 body does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from etctl._gostrings import go_quote

__all__ = [
    "SelectorError",
    "aggregate",
    "go_quote",
    "go_string_slice",
    "key_error",
    "label_key_errors",
    "label_value_errors",
]


class SelectorError(ValueError):
    """A selector could not be parsed or built; the message is the API server's 400 wording."""


def go_string_slice(values: Iterable[str]) -> str:
    """Format a list of strings as Go's ``%#v`` prints a ``[]string``."""
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def aggregate(messages: list[str]) -> str:
    """Join error messages as apimachinery's ``utilerrors.Aggregate`` does (deduplicated)."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(f"^{_NAME_FMT}$")
_VALUE_FMT = f"({_NAME_FMT})?"
_VALUE_RE = re.compile(f"^{_VALUE_FMT}$")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_MAX_NAME = 63
_MAX_PREFIX = 253


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    """Build apimachinery's ``RegexError`` text (including its doubled spaces before ``or``)."""
    shown = "".join(("" if i == 0 else " or ") + f"'{ex}', " for i, ex in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


_NAME_MESSAGE = _regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character",
    _NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
_TOO_MANY_SLASHES = (
    f"a qualified name {_NAME_MESSAGE} with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
_SUBDOMAIN_MESSAGE = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_VALUE_MESSAGE = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character",
    _VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a qualified name (``[prefix/]name``); empty when it is one."""
    parts = key.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return [_TOO_MANY_SLASHES]
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > _MAX_PREFIX:
                errors.append("prefix part " + _max_len(_MAX_PREFIX))
            if not _DNS1123_SUBDOMAIN_RE.match(prefix):
                errors.append("prefix part " + _SUBDOMAIN_MESSAGE)
    else:
        name = parts[0]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > _MAX_NAME:
        errors.append("name part " + _max_len(_MAX_NAME))
    if not _NAME_RE.match(name):
        errors.append("name part " + _NAME_MESSAGE)
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a label value (empty, or a name of at most 63 characters)."""
    errors: list[str] = []
    if len(value) > _MAX_NAME:
        errors.append(_max_len(_MAX_NAME))
    if not _VALUE_RE.match(value):
        errors.append(_VALUE_MESSAGE)
    return errors


def key_error(key: str, path: str) -> str | None:
    """The field error of a malformed label ``key`` at ``path``, or None when it is valid."""
    errors = label_key_errors(key)
    if not errors:
        return None
    return f"{path}: Invalid value: {go_quote(key)}: {'; '.join(errors)}"
