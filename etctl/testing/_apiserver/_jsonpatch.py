"""RFC 6902 JSON patch, with the behaviour of the ``evanphx/json-patch`` (v4) kube-apiserver uses.

Where the library departs from the RFC this module follows the library: ``replace`` of a missing
object member adds it, negative array indices count from the end for ``add`` and ``remove``, a
path is split on every ``/`` with its first segment ignored, ``copy`` from a missing member copies
null, and ``test`` of an object only compares the members the document has. Operations are
applied copy-on-write: only containers on changed paths are copied.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from etctl._apimachinery.gofmt import go_json, go_type_name
from etctl.testing._apiserver._patcherror import MISSING, PatchError, bad_request

__all__ = ["MAX_JSON_PATCH_OPERATIONS", "apply_json_patch"]

MAX_JSON_PATCH_OPERATIONS: Final = 10000
"""More operations than this in one JSON patch are rejected with 413."""

_GENERIC_422 = "the server rejected our request due to an error in our request"

_ATOI = re.compile(r"^[+-]?[0-9]+$")
_INT64 = 2**63


class _OpFailed(Exception):
    """An operation did not apply; the message is the library's."""


def _atoi(text: str) -> int:
    if not _ATOI.match(text):
        raise _OpFailed(f'strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if not -_INT64 <= number < _INT64:
        raise _OpFailed(f'strconv.Atoi: parsing "{text}": value out of range')
    return number


def _invalid_index(index: int) -> _OpFailed:
    return _OpFailed(f"Unable to access invalid index: {index}: invalid index referenced")


def _decode_key(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _child(node: dict[str, Any] | list[Any], part: str) -> Any:
    """The value under ``part``, or MISSING when the step cannot be taken."""
    if isinstance(node, dict):
        return node.get(part, MISSING)
    try:
        index = _atoi(part)
    except _OpFailed:
        return MISSING
    return node[index] if 0 <= index < len(node) else MISSING


_SCALARS: Final = frozenset({str, int, float, bool})


def _json_equal(have: Any, want: Any) -> bool:
    """The library's equality for ``test``: members of ``have`` must match ``want``'s."""
    if isinstance(have, dict):
        return isinstance(want, dict) and all(
            k in want and ((v is None and want[k] is None) or _json_equal(v, want[k]))
            for k, v in have.items()
        )
    if isinstance(have, list):
        return (
            isinstance(want, list)
            and len(have) == len(want)
            and all(_json_equal(a, b) for a, b in zip(have, want, strict=True))
        )
    if type(have) is type(want) and type(have) in _SCALARS:
        return bool(have == want)  # equal scalars of one type encode alike: no encoding needed
    return not isinstance(want, dict | list) and go_json(have) == go_json(want)


class _Document:
    """A JSON document patched copy-on-write: containers it copied are its own to change."""

    def __init__(self, root: Any) -> None:
        self.root = root
        # Holding the copies keeps their ids unique for the lifetime of the document.
        self._mine: list[object] = []
        self._mine_ids: set[int] = set()

    def _own(self, node: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
        if id(node) in self._mine_ids:
            return node
        clone: dict[str, Any] | list[Any] = dict(node) if isinstance(node, dict) else list(node)
        self._mine.append(clone)
        self._mine_ids.add(id(clone))
        return clone

    def find(self, path: str, *, write: bool) -> tuple[dict[str, Any] | list[Any], str] | None:
        """The container holding ``path``'s last segment, made writable on request."""
        split = path.split("/")
        if len(split) < 2:
            return None
        parts = [_decode_key(p) for p in split[1:-1]]
        node = self.root
        if not isinstance(node, dict | list):
            return None
        for part in parts:
            node = _child(node, part)
            if not isinstance(node, dict | list):
                return None
        if write:
            self.root = node = self._own(self.root)
            for part in parts:
                child = self._own(_child(node, part))
                if isinstance(node, dict):
                    node[part] = child
                else:
                    node[int(part)] = child
                node = child
        return node, _decode_key(split[-1])

    @staticmethod
    def get(node: dict[str, Any] | list[Any], key: str) -> Any:
        if isinstance(node, dict):
            return node.get(key)
        index = _atoi(key)
        if not 0 <= index < len(node):
            raise _invalid_index(index)
        return node[index]

    @staticmethod
    def add(node: dict[str, Any] | list[Any], key: str, value: Any) -> None:
        if isinstance(node, dict):
            node[key] = value
            return
        if key == "-":
            node.append(value)
            return
        try:
            index = _atoi(key)
        except _OpFailed as err:
            raise _OpFailed(f"value was not a proper array index: '{key}': {err}") from None
        size = len(node) + 1
        if index >= size or index < -size:
            raise _invalid_index(index)
        node.insert(index + size if index < 0 else index, value)

    @staticmethod
    def remove(node: dict[str, Any] | list[Any], key: str) -> None:
        if isinstance(node, dict):
            if key not in node:
                raise _OpFailed(f"Unable to remove nonexistent key: {key}: missing value")
            del node[key]
            return
        index = _atoi(key)
        if index >= len(node) or index < -len(node):
            raise _invalid_index(index)
        del node[index]


def _string_field(op: Mapping[str, Any], name: str) -> str:
    value = op.get(name)
    if value is None:
        missing = (
            "operation missing path field" if name == "path" else "operation, missing from field"
        )
        raise _OpFailed(f"{missing}: missing value")
    if not isinstance(value, str):
        raise _OpFailed(
            f"json: cannot unmarshal {go_type_name(value)} into Go value of type string"
        )
    return value


def _path(op: Mapping[str, Any], kind: str, *, wrap_cause: bool, field: str = "path") -> str:
    try:
        return _string_field(op, field)
    except _OpFailed as err:
        verb = "from" if field == "from" else "path"
        cause = str(err) if wrap_cause else "missing value"
        raise _OpFailed(f"{kind} operation failed to decode {verb}: {cause}") from None


def _locate(
    doc: _Document, path: str, *, write: bool, missing: str
) -> tuple[dict[str, Any] | list[Any], str]:
    """The container holding ``path`` and its last key; ``missing`` explains its absence."""
    found = doc.find(path, write=write)
    if found is None:
        raise _OpFailed(f"{missing}: missing value")
    return found


@contextmanager
def _failing_as(prefix: str) -> Iterator[None]:
    """Report an operation's failure as ``<prefix>: <the failure>``, as the library wraps it."""
    try:
        yield
    except _OpFailed as err:
        raise _OpFailed(f"{prefix}: {err}") from None


def _do_add(doc: _Document, op: Mapping[str, Any]) -> None:
    path = _path(op, "add", wrap_cause=False)
    missing = f'add operation does not apply: doc is missing path: "{path}"'
    found = _locate(doc, path, write=True, missing=missing)
    with _failing_as(f"error in add for path: '{path}'"):
        doc.add(*found, op.get("value"))


def _do_remove(doc: _Document, op: Mapping[str, Any]) -> None:
    path = _path(op, "remove", wrap_cause=False)
    missing = f'remove operation does not apply: doc is missing path: "{path}"'
    found = _locate(doc, path, write=True, missing=missing)
    with _failing_as(f"error in remove for path: '{path}'"):
        doc.remove(*found)


def _do_replace(doc: _Document, op: Mapping[str, Any]) -> None:
    path = _path(op, "replace", wrap_cause=True)
    missing = f"replace operation does not apply: doc is missing path: {path}"
    node, key = _locate(doc, path, write=True, missing=missing)
    try:
        doc.get(node, key)
    except _OpFailed:
        raise _OpFailed(
            f"replace operation does not apply: doc is missing key: {path}: missing value"
        ) from None
    if isinstance(node, dict):
        node[key] = op.get("value")
    else:
        node[_atoi(key)] = op.get("value")


def _do_move(doc: _Document, op: Mapping[str, Any]) -> None:
    source = _path(op, "move", wrap_cause=True, field="from")
    missing = f"move operation does not apply: doc is missing from path: {source}"
    node, key = _locate(doc, source, write=True, missing=missing)
    with _failing_as(f"error in move for path: '{key}'"):
        value = doc.get(node, key)
        doc.remove(node, key)
    path = _path(op, "move", wrap_cause=True)
    missing = f"move operation does not apply: doc is missing destination path: {path}"
    target = _locate(doc, path, write=True, missing=missing)
    with _failing_as(f"error in move for path: '{path}'"):
        doc.add(*target, value)


def _do_copy(doc: _Document, op: Mapping[str, Any]) -> None:
    source = _path(op, "copy", wrap_cause=True, field="from")
    missing = f"copy operation does not apply: doc is missing from path: {source}"
    found = _locate(doc, source, write=False, missing=missing)
    with _failing_as(f"error in copy for from: '{source}'"):
        value = doc.get(*found)
    path = _path(op, "copy", wrap_cause=False)
    missing = f"copy operation does not apply: doc is missing destination path: {path}"
    target = _locate(doc, path, write=True, missing=missing)
    with _failing_as("error while adding value during copy"):
        # A real copy: the source may be a container this document changes in place later.
        doc.add(*target, copy.deepcopy(value))


def _do_test(doc: _Document, op: Mapping[str, Any]) -> None:
    path = _path(op, "test", wrap_cause=True)
    missing = f"test operation does not apply: is missing path: {path}"
    found = _locate(doc, path, write=False, missing=missing)
    with _failing_as(f"error in test for path: '{path}'"):
        have = doc.get(*found)
    want = op.get("value", MISSING)
    if have is None:
        if want is None:
            return
    elif want is not MISSING and _json_equal(have, want):
        return
    raise _OpFailed(f"testing value {path} failed: test failed")


_OPERATIONS = {
    "add": _do_add,
    "remove": _do_remove,
    "replace": _do_replace,
    "move": _do_move,
    "copy": _do_copy,
    "test": _do_test,
}


def apply_json_patch(target: Mapping[str, Any], ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a decoded list of operations) to ``target``.

    Args:
        target: the current object.
        ops: the decoded patch document; ``None`` is an empty patch.

    Returns:
        The patched document (a new object; unchanged subtrees are shared).

    Raises:
        PatchError: 400 when the document is not a list of objects, 413 beyond
            :data:`MAX_JSON_PATCH_OPERATIONS`, 422 when an operation does not apply.
    """
    if ops is None:
        return dict(target)
    if not isinstance(ops, list):
        raise bad_request(
            f"json: cannot unmarshal {go_type_name(ops)} into Go value of type jsonpatch.Patch"
        )
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {go_type_name(op)} into Go value of type "
                "jsonpatch.Operation"
            )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            "Request entity too large: The allowed maximum operations in a JSON patch is "
            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}",
            status=413,
            reason="RequestEntityTooLarge",
        )
    doc = _Document(target)
    for op in ops:
        kind = (op or {}).get("op")
        handler = _OPERATIONS.get(kind) if isinstance(kind, str) else None
        try:
            if handler is None:
                shown = kind if isinstance(kind, str) else "unknown"
                raise _OpFailed(f"Unexpected kind: {shown}")
            handler(doc, op)
        except _OpFailed as err:
            raise PatchError(_GENERIC_422, status=422, reason="Invalid", detail=str(err)) from None
    return doc.root if doc.root is not target else dict(target)
