"""Reading a request: its path as the real server's ``RequestInfoFactory`` does, and its query.

A resource path is ``/api/v1/...`` or ``/apis/<group>/<version>/...`` followed by
``[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]``; ``/namespaces/<name>/status`` and
``/finalize`` are subresources of the namespace, and a leading ``watch/`` segment is the legacy
way to ask for a watch. The verb comes from the method, whether a name is present, and the
``watch`` query parameter (parsed like Go's ``strconv.ParseBool``: kubernetes_asyncio sends
``watch=True``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from etctl.testing._apiserver.status import bad_request

__all__ = ["RequestInfo", "parse_bool", "parse_int", "parse_path"]

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(query: Mapping[str, str], name: str, default: bool = False) -> bool:
    """A boolean query parameter, as Go's ``strconv.ParseBool`` reads it.

    Raises:
        etctl.errors.BadRequest: a value ParseBool rejects.
    """
    value = query.get(name)
    if value is None:
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_optional_bool(query: Mapping[str, str], name: str) -> bool | None:
    """Like :func:`parse_bool`, None when the parameter is absent."""
    if name not in query:
        return None
    return parse_bool(query, name)


def parse_int(query: Mapping[str, str], name: str) -> int | None:
    """An integer query parameter, or None when absent.

    Raises:
        etctl.errors.BadRequest: not an integer.
    """
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from exc


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What a path names.

    Attributes:
        resource_request: True for a resource path, False for discovery and the like.
        prefix: ``api`` or ``apis`` for API paths, else the first segment.
        group: the API group (``""`` for core).
        version: the API version, ``""`` when the path stops before it.
        namespace: the namespace in the path, ``""`` if none.
        resource: the resource (plural), ``""`` if none.
        name: the object name, ``""`` for a collection.
        subresource: the subresource, ``""`` if none.
        verb: get, list, watch, create, update, patch, delete, deletecollection (or the
            lower-cased method for non-resource paths).
        parts: the path segments.
    """

    resource_request: bool
    prefix: str
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    verb: str = ""
    parts: tuple[str, ...] = ()


def parse_path(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Split a request path into a :class:`RequestInfo`."""
    parts = tuple(p for p in path.strip("/").split("/") if p)
    method = method.upper()
    plain_verb = method.lower()
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo(False, parts[0] if parts else "", verb=plain_verb, parts=parts)
    prefix = parts[0]
    rest = list(parts[1:])
    group = "" if prefix == "api" else (rest.pop(0) if rest else "")
    version = rest.pop(0) if rest else ""
    if not version or not rest:
        return RequestInfo(False, prefix, group, version, verb=plain_verb, parts=parts)
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            namespace = ""  # a namespace object itself: /namespaces/<name>[/status]
    if not rest:
        return RequestInfo(False, prefix, group, version, verb=plain_verb, parts=parts)
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return RequestInfo(
        True,
        prefix,
        group,
        version,
        namespace,
        resource,
        name,
        subresource,
        _verb(method, name, legacy_watch or (method == "GET" and parse_bool(query, "watch"))),
        parts,
    )


def _verb(method: str, name: str, watching: bool) -> str:
    """The Kubernetes verb of a resource request."""
    if method == "GET":
        return "watch" if watching else ("get" if name else "list")
    if method == "DELETE":
        return "delete" if name else "deletecollection"
    return _METHOD_VERBS.get(method, method.lower())
