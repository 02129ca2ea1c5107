"""Generates the protobuf descriptors of the built-in kinds the embedded server decodes.

kubectl's typed commands (``kubectl create namespace|configmap|secret|deployment|role...``) send
their objects as protobuf. The field numbers come from Kubernetes' own ``generated.proto`` files
(k8s.io/api and k8s.io/apimachinery); whether Go's JSON omits a field's zero value (a non-pointer
field tagged ``omitempty``) and which fields it inlines come from the Go structs' tags next to
them. The embedded server needs neither at run time, so the result is committed as
``etctl/testing/_apiserver/proto_kinds.json``: each message reachable from a served kind, as
``{field number: [JSON name, type, omit zero]}``, where an empty JSON name marks an embedded
struct whose fields JSON inlines and the type is a scalar (``string``, ``int32``...), a message
name, ``[T`` for a repeated field or ``{T`` for a ``map<string, T>``. ``test_protobody`` checks
the file is what this module makes when the sources are at hand. Regenerate with::

    python -m tests.testing.apiserver.proto_descriptors API_DIR APIMACHINERY_DIR

where the directories are checkouts of k8s.io/api and k8s.io/apimachinery at :data:`VERSION`
(for instance the Go module cache's ``k8s.io/api@v0.32.4``).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TARGET = (
    Path(__file__).resolve().parents[3] / "etctl" / "testing" / "_apiserver" / "proto_kinds.json"
)
VERSION = "v0.32.4"
# (repository, package directory): the packages the served kinds' messages live in.
PACKAGES: tuple[tuple[str, str], ...] = (
    ("api", "core/v1"),
    ("api", "apps/v1"),
    ("api", "autoscaling/v2"),
    ("api", "rbac/v1"),
    ("api", "coordination/v1"),
    ("api", "events/v1"),
    ("api", "scheduling/v1"),
    ("apimachinery", "pkg/apis/meta/v1"),
    ("apimachinery", "pkg/api/resource"),
    ("apimachinery", "pkg/util/intstr"),
    ("apimachinery", "pkg/runtime"),
)
# apiVersion/kind -> message: the kinds the embedded server serves (see builtin.py).
KINDS: dict[str, str] = {
    "v1/ConfigMap": "core.v1.ConfigMap",
    "v1/Endpoints": "core.v1.Endpoints",
    "v1/Event": "core.v1.Event",
    "v1/Namespace": "core.v1.Namespace",
    "v1/Node": "core.v1.Node",
    "v1/Pod": "core.v1.Pod",
    "v1/Secret": "core.v1.Secret",
    "v1/Service": "core.v1.Service",
    "v1/ServiceAccount": "core.v1.ServiceAccount",
    "apps/v1/Deployment": "apps.v1.Deployment",
    "apps/v1/ReplicaSet": "apps.v1.ReplicaSet",
    "autoscaling/v2/HorizontalPodAutoscaler": "autoscaling.v2.HorizontalPodAutoscaler",
    "coordination.k8s.io/v1/Lease": "coordination.v1.Lease",
    "events.k8s.io/v1/Event": "events.v1.Event",
    "rbac.authorization.k8s.io/v1/ClusterRole": "rbac.v1.ClusterRole",
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": "rbac.v1.ClusterRoleBinding",
    "rbac.authorization.k8s.io/v1/Role": "rbac.v1.Role",
    "rbac.authorization.k8s.io/v1/RoleBinding": "rbac.v1.RoleBinding",
    "scheduling.k8s.io/v1/PriorityClass": "scheduling.v1.PriorityClass",
}
SCALARS = frozenset(
    {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}
)
# Messages the decoder reads by hand (their wire form is not their JSON form): no Go struct tags.
SPECIAL = frozenset(
    {
        "api.resource.Quantity",
        "apis.meta.v1.Duration",
        "apis.meta.v1.FieldsV1",
        "apis.meta.v1.MicroTime",
        "apis.meta.v1.Time",
        "runtime.RawExtension",
        "util.intstr.IntOrString",
    }
)
_PREFIXES = ("k8s.io.api.", "k8s.io.apimachinery.pkg.")
_PACKAGE = re.compile(r"^package ([\w.]+);", re.MULTILINE)
_MESSAGE = re.compile(r"^message (\w+) \{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
_FIELD = re.compile(
    r"^\s*(?:(optional|repeated) ([\w.]+)|map<string, ?([\w.]+)>) (\w+) = (\d+);", re.MULTILINE
)
_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
_GO_FIELD = re.compile(r"^\t(?:\w+ )?(\S+) +`(.*)`\s*$", re.MULTILINE)
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass(frozen=True)
class GoField:
    """What a Go struct field's declaration says about its JSON."""

    json_name: str
    pointer: bool
    omitempty: bool
    inline: bool = False


def short(name: str) -> str:
    """``core.v1.Pod`` for ``k8s.io.api.core.v1.Pod`` (the committed file's message names)."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def parse_proto(text: str) -> dict[str, dict[int, tuple[str, str]]]:
    """Each message of a ``generated.proto`` as ``{number: (proto name, type)}``.

    Types are fully qualified (short form) message names, scalars, ``[T`` or ``{T``.
    """
    package = _PACKAGE.search(text)
    if package is None:
        msg = "no package line"
        raise ValueError(msg)
    prefix = package.group(1)
    messages: dict[str, dict[int, tuple[str, str]]] = {}
    for message in _MESSAGE.finditer(text):
        body = "\n".join(
            line for line in message.group(2).splitlines() if not line.strip().startswith("//")
        )
        if re.search(r"^\s*(message|enum|oneof) ", body, re.MULTILINE):
            msg = f"{message.group(1)}: nested declarations are not supported"
            raise ValueError(msg)
        fields: dict[int, tuple[str, str]] = {}
        for label, single, mapped, name, number in _FIELD.findall(body):
            kind = _resolve(single or mapped, prefix)
            if mapped:
                kind = "{" + kind
            elif label == "repeated":
                kind = "[" + kind
            fields[int(number)] = (name, kind)
        declared = len([line for line in body.splitlines() if line.strip()])
        if declared != len(fields):
            msg = f"{message.group(1)}: {declared - len(fields)} field lines did not parse"
            raise ValueError(msg)
        messages[short(f"{prefix}.{message.group(1)}")] = fields
    return messages


def _resolve(kind: str, package: str) -> str:
    if kind in SCALARS:
        return kind
    return short(kind[1:] if kind.startswith(".") else f"{package}.{kind}")


def parse_go(text: str) -> dict[tuple[str, int], GoField]:
    """``(struct, protobuf field number) -> GoField`` for the tagged fields of Go source."""
    found: dict[tuple[str, int], GoField] = {}
    for struct in _STRUCT.finditer(text):
        for go_type, tags in _GO_FIELD.findall(struct.group(2)):
            tag = dict(_TAG.findall(tags))
            parts = tag.get("protobuf", "").split(",")
            if len(parts) < 2 or not parts[1].isdigit():
                continue
            number = int(parts[1])
            options = tag.get("json", "").split(",")
            found[(struct.group(1), number)] = GoField(
                json_name=options[0],
                pointer=go_type.startswith("*"),
                omitempty="omitempty" in options,
                inline="inline" in options,
            )
    return found


def generate(api: Path, apimachinery: Path) -> dict[str, Any]:
    """The descriptors of every message reachable from :data:`KINDS`."""
    roots = {"api": api, "apimachinery": apimachinery}
    messages: dict[str, dict[int, tuple[str, str]]] = {}
    go: dict[tuple[str, int], GoField] = {}
    for repo, directory in PACKAGES:
        folder = roots[repo] / directory
        parsed = parse_proto((folder / "generated.proto").read_text())
        package = next(iter(parsed)).rsplit(".", 1)[0]
        messages.update(parsed)
        for source in sorted(folder.glob("*.go")):
            if source.name.endswith("_test.go") or source.name.startswith(("zz_", "generated")):
                continue
            for (struct, number), field in parse_go(source.read_text()).items():
                go[(f"{package}.{struct}", number)] = field
    wanted: list[str] = list(KINDS.values())
    out: dict[str, dict[str, list[Any]]] = {}
    while wanted:
        name = wanted.pop()
        if name in out:
            continue
        out[name] = {}
        for number, (proto_name, kind) in sorted(messages[name].items()):
            inner = kind.lstrip("[{")
            if inner not in SCALARS:
                wanted.append(inner)
            declared = go.get((name, number))
            if declared is None and kind in SCALARS and name not in SPECIAL:
                msg = f"{name} field {number} ({proto_name}) has no tagged Go struct field"
                raise ValueError(msg)
            json_name = proto_name
            if declared and declared.inline:
                json_name = ""  # an embedded struct: its fields are the parent's in JSON
            elif declared and declared.json_name not in ("", "-"):
                json_name = declared.json_name
            # Only a scalar's zero value is ever left out: lists, maps and messages are written
            # when set, and a pointer is written whenever it is set, even to zero.
            omit_zero = bool(
                kind in SCALARS and declared and declared.omitempty and not declared.pointer
            )
            out[name][str(number)] = [json_name, kind, omit_zero]
    return {
        "kinds": KINDS,
        "messages": dict(sorted(out.items())),
        "source": {"k8s.io/api": VERSION, "k8s.io/apimachinery": VERSION},
    }


def render(api: Path, apimachinery: Path) -> str:
    """The committed file's text: one line per field, so a regeneration diffs by field."""
    generated = generate(api, apimachinery)
    lines = ["{", '"kinds": ' + json.dumps(generated["kinds"], indent=0, sort_keys=True) + ","]
    lines.append('"messages": {')
    messages = generated["messages"]
    for i, (name, fields) in enumerate(messages.items()):
        lines.append(json.dumps(name) + ": {")
        rows = [f"{json.dumps(n)}: {json.dumps(v)}" for n, v in fields.items()]
        lines.append(",\n".join(rows))
        lines.append("}" + ("," if i < len(messages) - 1 else ""))
    lines.append("},")
    lines.append('"source": ' + json.dumps(generated["source"], sort_keys=True))
    lines.append("}")
    return "\n".join(line for line in lines if line) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render(Path(sys.argv[1]), Path(sys.argv[2])))
