"""Protobuf request bodies of built-in kinds, decoded into the dicts their JSON would be.

kubectl's typed commands (``kubectl create namespace|configmap|secret|deployment|role...``) send
``application/vnd.kubernetes.protobuf`` and do not fall back to JSON on a 415. :func:`decode`
opens the envelope (:func:`protowire.unwrap`) and walks the object's message with the committed
descriptors (``proto_kinds.json``, generated from Kubernetes' own ``generated.proto`` files), so
the server stores what it would have stored had the same object come as JSON.

Go's protobuf marshaller writes a non-pointer field even when it is zero and a pointer field
whenever it is set; Go's JSON leaves out the zero of a non-pointer ``omitempty`` field. So: a
scalar zero is dropped exactly when the descriptor says Go's JSON omits it (``replicas: 0``, a
pointer, stays); an embedded struct's fields are merged into its parent's, as Go's JSON
inlines them; an empty list or map cannot be told from an absent one and is left out; an empty
message is ``{}``, as Go's JSON writes a non-pointer struct. The apimachinery types whose wire form
is not their JSON form are read by hand: Time and MicroTime (RFC 3339; a zero time is ``null``),
Duration, Quantity, IntOrString, RawExtension and FieldsV1 (raw JSON).

Invariants: a kind without a descriptor, a malformed body or a field of the wrong wire type raises
:class:`ValueError` (the caller answers 400); unknown field numbers are skipped, as Go does.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

from etctl.testing._apiserver import protowire
from etctl.testing._goduration import go_duration

__all__ = ["Descriptors", "decode", "decode_message", "descriptors"]

# message name -> field number -> [JSON name, type, omit zero]
Descriptors = dict[str, dict[str, list[Any]]]

_SIGNED = frozenset({"int32", "int64"})
_VARINTS = _SIGNED | {"bool", "uint32", "uint64"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@cache
def _committed() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("proto_kinds.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def descriptors() -> tuple[dict[str, str], Descriptors]:
    """The committed ``apiVersion/kind -> message`` table and message descriptors."""
    committed = _committed()
    return committed["kinds"], committed["messages"]


def decode(body: bytes) -> dict[str, Any]:
    """The object a ``k8s``-and-NUL-prefixed protobuf body carries, as its JSON dict.

    Raises:
        ValueError: not a protobuf body, a kind without a descriptor, or malformed.
    """
    api_version, kind, raw = protowire.unwrap(body)
    kinds, messages = descriptors()
    message = kinds.get(f"{api_version}/{kind}")
    if message is None:
        msg = f"no protobuf decoding for {api_version or '?'}, Kind={kind or '?'}; send JSON"
        raise ValueError(msg)
    obj = decode_message(raw, message, messages)
    return {"apiVersion": api_version, "kind": kind, **obj}


def decode_message(data: bytes, name: str, messages: Descriptors) -> dict[str, Any]:
    """One message as its JSON dict (see the module's rules for zeros and empties)."""
    fields = messages[name]
    out: dict[str, Any] = {}
    for number, wire in protowire.fields(data):
        field = fields.get(str(number))
        if field is None:
            continue
        json_name, kind, omit_zero = field
        if kind.startswith("{"):
            key, value = _entry(_bytes(wire, json_name), kind[1:], messages)
            out.setdefault(json_name, {})[key] = value
        elif kind.startswith("["):
            _append(out.setdefault(json_name, []), wire, kind[1:], json_name, messages)
        elif not json_name:  # an embedded struct (``json:",inline"``): its fields are ours
            out.update(_value(wire, kind, "inline", messages))
        else:
            out[json_name] = _value(wire, kind, json_name, messages)
            if omit_zero and out[json_name] in ("", 0, False):
                del out[json_name]
    return out


def _append(
    into: list[Any], wire: int | bytes, kind: str, name: str, messages: Descriptors
) -> None:
    if isinstance(wire, bytes) and kind in _VARINTS:
        # A packed repeated number (proto2 readers accept both forms): varints back to back.
        into.extend(_scalar(value, kind) for value in protowire.varints(wire))
    else:
        into.append(_value(wire, kind, name, messages))


def _entry(data: bytes, kind: str, messages: Descriptors) -> tuple[str, Any]:
    key = ""
    value: Any = None
    for number, wire in protowire.fields(data):
        if number == 1:
            key = _bytes(wire, "map key").decode()
        elif number == 2:
            value = _value(wire, kind, "map value", messages)
    if value is None:  # an entry without a value holds the value type's zero
        value = _value(0 if kind in _VARINTS else b"", kind, "map value", messages)
    return key, value


def _bytes(wire: int | bytes, name: str) -> bytes:
    if not isinstance(wire, bytes):
        msg = f"field {name} should be length-delimited"
        raise ValueError(msg)
    return wire


def _scalar(wire: int, kind: str) -> int | bool:
    if kind == "bool":
        return wire != 0
    if kind in _SIGNED and wire >= 1 << 63:
        return wire - (1 << 64)
    return wire


def _float(wire: int | bytes, kind: str, name: str) -> float:
    if isinstance(wire, bytes):
        msg = f"field {name} should be fixed-width"
        raise ValueError(msg)
    if kind == "double":
        return float(struct.unpack("<d", wire.to_bytes(8, "little"))[0])
    return float(struct.unpack("<f", wire.to_bytes(4, "little"))[0])


def _value(wire: int | bytes, kind: str, name: str, messages: Descriptors) -> Any:
    if kind in ("double", "float"):
        return _float(wire, kind, name)
    if isinstance(wire, int):
        if kind in ("string", "bytes") or kind in messages:
            msg = f"field {name} should be length-delimited"
            raise ValueError(msg)
        return _scalar(wire, kind)
    if kind == "string":
        return wire.decode()
    if kind == "bytes":
        return base64.b64encode(wire).decode()
    special = _SPECIAL.get(kind)
    if special is not None:
        return special(wire)
    if kind not in messages:
        msg = f"field {name} is a {kind}, which has no descriptor"
        raise ValueError(msg)
    return decode_message(wire, kind, messages)


def _numbers(data: bytes) -> dict[int, int | bytes]:
    return dict(protowire.fields(data))


def _int(fields: dict[int, int | bytes], number: int) -> int:
    value = fields.get(number, 0)
    if not isinstance(value, int):
        msg = f"field {number} should be a number"
        raise ValueError(msg)
    return int(_scalar(value, "int64"))


def _text(fields: dict[int, int | bytes], number: int) -> str:
    value = fields.get(number, b"")
    return _bytes(value, str(number)).decode()


def _time(data: bytes) -> str | None:
    # metav1.Time keeps whole seconds only (its protobuf reader drops the nanoseconds); a zero
    # time marshals to an empty message and is null in JSON.
    if not data:
        return None
    fields = _numbers(data)
    stamp = datetime.fromtimestamp(_int(fields, 1), UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time(data: bytes) -> str | None:
    if not data:
        return None
    fields = _numbers(data)
    stamp = datetime.fromtimestamp(_int(fields, 1), UTC)
    micros = _int(fields, 2) // 1000
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{micros:06d}Z"


def _duration(data: bytes) -> str:
    return go_duration(_int(_numbers(data), 1))


def _quantity(data: bytes) -> str:
    return _text(_numbers(data), 1)


def _int_or_string(data: bytes) -> int | str:
    fields = _numbers(data)
    if _int(fields, 1) == 1:
        return _text(fields, 3)
    return _int(fields, 2)


def _raw_json(data: bytes) -> Any:
    raw = _numbers(data).get(1, b"")
    text = _bytes(raw, "raw")
    return json.loads(text) if text else None


_SPECIAL = {
    "api.resource.Quantity": _quantity,
    "apis.meta.v1.Duration": _duration,
    "apis.meta.v1.FieldsV1": _raw_json,
    "apis.meta.v1.MicroTime": _micro_time,
    "apis.meta.v1.Time": _time,
    "runtime.RawExtension": _raw_json,
    "util.intstr.IntOrString": _int_or_string,
}
