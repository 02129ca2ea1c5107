"""Parsers of command-line and environment values: one function per kind of value.

Each parser takes the raw string a user typed (a flag's value or an environment variable's) and
returns the typed value, or raises :class:`ValueError` with a message that says what was expected,
so the CLI can print it next to the flag or variable name and exit with status 2. They are pure
and accept the spellings operators already use with controller-runtime binaries: Go durations
(``15s``, ``1m30s``), Go booleans (``true``, ``1``, ``False``), bind addresses (``:8080``,
``127.0.0.1:0``, ``0`` to disable).
"""

from __future__ import annotations

import ipaddress
import math
import re
from urllib.parse import urlsplit

from etctl.common import is_dns1123_label, is_dns1123_subdomain

__all__ = [
    "parse_bind_address",
    "parse_bool",
    "parse_duration",
    "parse_https_url",
    "parse_list",
    "parse_namespace",
    "parse_object_name",
    "parse_period",
    "parse_port",
    "parse_positive_int",
]

_TRUE = frozenset({"1", "t", "true", "y", "yes", "on"})
_FALSE = frozenset({"0", "f", "false", "n", "no", "off"})
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_bool(text: str) -> bool:
    """``true``/``false`` and their usual spellings (``1``, ``yes``, ``on``...), any case."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    msg = f"{text!r} is not a boolean; use true or false"
    raise ValueError(msg)


def parse_duration(text: str) -> float:
    """Seconds from a Go duration (``15s``, ``1m30s``, ``500ms``) or a plain number of seconds.

    Raises:
        ValueError: not a duration, or not positive.
    """
    seconds = _seconds(text)
    if seconds <= 0:
        msg = f"{text!r} must be a positive duration"
        raise ValueError(msg)
    return seconds


def parse_period(text: str) -> float:
    """Like :func:`parse_duration`, with 0 allowed (``0`` or ``0s``: off).

    Raises:
        ValueError: not a duration, or negative.
    """
    seconds = _seconds(text)
    if seconds < 0:
        msg = f"{text!r} must not be a negative duration"
        raise ValueError(msg)
    return seconds


def _seconds(text: str) -> float:
    """Seconds from a Go duration or a plain number, of any sign."""
    value = text.strip()
    seconds: float | None = None
    try:
        seconds = float(value)
    except ValueError:
        position, total = 0, 0.0
        for match in _DURATION_PART.finditer(value):
            if match.start() != position:
                break
            total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            position = match.end()
        if position == len(value) and value:
            seconds = total
    if seconds is None or not math.isfinite(seconds):
        msg = f"{text!r} is not a duration; use for example 15s, 1m30s or 500ms"
        raise ValueError(msg)
    return seconds


def parse_positive_int(text: str) -> int:
    """An integer of at least 1."""
    try:
        value = int(text.strip())
    except ValueError:
        msg = f"{text!r} is not an integer"
        raise ValueError(msg) from None
    if value < 1:
        msg = f"{text!r} must be at least 1"
        raise ValueError(msg)
    return value


def parse_bind_address(text: str) -> str:
    """A listen address: ``[host]:port`` with a port in 0..65535, or ``0`` to disable the server.

    The host may be empty (every interface), a name, an IPv4 address or a bracketed IPv6 address.
    """
    value = text.strip()
    if value == "0":
        return value
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        msg = f"{text!r} is not a bind address; use :8080, 127.0.0.1:8080, or 0 to disable"
        raise ValueError(msg)
    if host.startswith("[") != host.endswith("]") or (":" in host and not host.startswith("[")):
        msg = f"{text!r}: put an IPv6 host in brackets, as in [::1]:8080"
        raise ValueError(msg)
    return value


def parse_namespace(text: str) -> str:
    """A namespace name (a DNS-1123 label)."""
    value = text.strip()
    if not is_dns1123_label(value):
        msg = (
            f"{text!r} is not a namespace name (lower-case letters, digits and '-', "
            "at most 63 characters)"
        )
        raise ValueError(msg)
    return value


def parse_object_name(text: str) -> str:
    """An object name (a DNS-1123 subdomain: labels joined by dots, at most 253 characters)."""
    value = text.strip()
    if not is_dns1123_subdomain(value):
        msg = (
            f"{text!r} is not an object name (lower-case letters, digits, '-' and '.', "
            "at most 253 characters)"
        )
        raise ValueError(msg)
    return value


def parse_list(text: str) -> list[str]:
    """A comma-separated list; blanks around items and empty items are dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_port(text: str) -> int:
    """A TCP port, 0 (any free one) to 65535."""
    value = text.strip()
    if not value.isdigit() or int(value) > 65535:
        msg = f"{text!r} is not a port (0 to 65535; 0 picks a free one)"
        raise ValueError(msg)
    return int(value)


def parse_https_url(text: str) -> str:
    """An ``https://host[:port]`` base URL, a DNS name or an IP address as the host.

    Returned without a trailing slash; a path, query or fragment is refused (webhook paths are
    appended to it).
    """
    value = text.strip().rstrip("/")
    try:
        parts = urlsplit(value)
        _ = parts.port  # raises for a port out of 0-65535
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme != "https"
        or not parts.hostname
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username
    ):
        msg = f"{text!r} is not a base URL such as https://192.168.1.10:9443 or https://dev.example"
        raise ValueError(msg)
    try:
        ipaddress.ip_address(parts.hostname)
    except ValueError:
        if not is_dns1123_subdomain(parts.hostname):
            msg = f"{text!r}: the host is neither an IP address nor a DNS name"
            raise ValueError(msg) from None
    return value
