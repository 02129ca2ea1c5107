"""The string formats a CRD schema may declare, checked as kube-apiserver checks them.

apiextensions keeps only these formats in a custom resource schema (others are ignored, not
enforced) and validates values with the checks of ``k8s.io/kube-openapi/pkg/validation/strfmt``.
Go-specific parsers (``net.ParseIP``, ``url.ParseRequestURI``, ``time.ParseDuration``) are
reproduced closely enough for the values operators write; exotic corner cases may differ.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import re
from collections.abc import Callable

__all__ = ["check_format", "is_known_format"]

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
)
_UUID5 = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
)
# strfmt's hostname pattern, with \p{L}\p{S} approximated by "any non-ASCII character".
_HOST_CHAR = r"[a-zA-Z0-9\u0080-\U0010ffff]"
_HOSTNAME = re.compile(
    rf"^({_HOST_CHAR}((-?{_HOST_CHAR}{{0,62}})?)|({_HOST_CHAR}(([a-zA-Z0-9\-\u0080-\U0010ffff]"
    rf"{{0,61}}{_HOST_CHAR})?)(\.)){{1,}}({_HOST_CHAR})(-?{_HOST_CHAR}){{1,62}})$"
)
_EMAIL = re.compile(r"^(?:[^<>@\s]+@[^<>@\s]+\.?[^<>@\s]*|[^<>]*<[^<>@\s]+@[^<>@\s]+>)$")
_MAC = re.compile(
    r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}"
    r"|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}"
    r"|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){3}"
    r"|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){9})$"
)
_BASE64 = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
)
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_BYTE = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR = re.compile(rf"^rgb\({_BYTE},{_BYTE},{_BYTE}\)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_GO_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$")
_HUMAN_DURATION = re.compile(
    r"^(\d+)\s*(ns|nanoseconds?|us|µs|microseconds?|ms|milliseconds?|s|secs?|seconds?|"
    r"m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)$"
)
_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _is_hostname(value: str) -> bool:
    if not _HOSTNAME.match(value) or len(value) > 255:
        return False
    return all(len(part) <= 63 for part in value.split("."))


def _is_ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return True


def _is_ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return True


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _is_request_uri(value: str) -> bool:
    if not value or any(ch.isspace() or ord(ch) < 0x20 for ch in value):
        return False
    return value.startswith("/") or bool(_SCHEME.match(value))


def _isbn10(value: str) -> bool:
    digits = value.replace("-", "").replace(" ", "")
    if not re.fullmatch(r"\d{9}[\dX]", digits):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(digits))
    return total % 11 == 0


def _isbn13(value: str) -> bool:
    digits = value.replace("-", "").replace(" ", "")
    if not re.fullmatch(r"\d{13}", digits):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(digits))
    return total % 10 == 0


def _luhn(value: str) -> bool:
    digits = value.replace("-", "").replace(" ", "")
    if not re.fullmatch(r"\d{13,19}", digits):
        return False
    total = 0
    for i, c in enumerate(reversed(digits)):
        n = int(c)
        if i % 2 == 1:
            n = n * 2 - 9 if n * 2 > 9 else n * 2
        total += n
    return total % 10 == 0


def _is_base64(value: str) -> bool:
    if not _BASE64.match(value):
        return False
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return False
    return True


def _is_date(value: str) -> bool:
    if not _DATE.match(value):
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    match = _DATETIME.match(value)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        dt.datetime(year, month, day, hour, minute, min(second, 59))
    except ValueError:
        return False
    return second <= 60


def _is_duration(value: str) -> bool:
    return bool(_GO_DURATION.match(value) or _HUMAN_DURATION.match(value.strip()))


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda v: bool(_OBJECT_ID.match(v)),
    "uri": _is_request_uri,
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": _is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "uuid3": lambda v: bool(_UUID3.match(v)),
    "uuid4": lambda v: bool(_UUID4.match(v)),
    "uuid5": lambda v: bool(_UUID5.match(v)),
    "isbn": lambda v: _isbn10(v) or _isbn13(v),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": _luhn,
    "ssn": lambda v: bool(_SSN.match(v)),
    "hexcolor": lambda v: bool(_HEXCOLOR.match(v)),
    "rgbcolor": lambda v: bool(_RGBCOLOR.match(v)),
    "byte": _is_base64,
    "password": lambda _v: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_datetime,
    "date-time": _is_datetime,
}


def is_known_format(name: str) -> bool:
    """Whether apiextensions enforces ``format: name`` (unknown formats are ignored)."""
    return name in _CHECKS


def check_format(name: str, value: str) -> bool:
    """Whether ``value`` is a valid ``name``; unknown formats accept everything."""
    check = _CHECKS.get(name)
    return check is None or check(value)
