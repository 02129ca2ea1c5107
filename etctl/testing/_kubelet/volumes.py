"""Pod volumes materialised as directories: configMap, secret, projected, downwardAPI, emptyDir.

:func:`materialise` (re)writes one volume's directory from its sources, as the kubelet's
volume plugins do:

* ``configMap`` / ``secret``: one file per key (``data`` and ``binaryData``; secret values
  base64-decoded), or only the ``items`` listed (``key`` -> ``path``, with an optional ``mode``),
  with ``defaultMode`` (``0644``) otherwise; a missing source fails the mount unless the volume
  is ``optional``, and so does an item naming a key the source lacks;
* ``projected``: the same for each ``configMap``, ``secret`` and ``downwardAPI`` source, in one
  directory (``serviceAccountToken`` and ``clusterTrustBundle`` sources are not materialised);
* ``downwardAPI``: ``metadata.name``/``namespace``/``uid``/``labels``/``annotations`` (one
  ``key="value"`` line per entry), single labels and annotations, ``spec.nodeName``,
  ``spec.serviceAccountName``, ``status.podIP``/``hostIP``, and ``resourceFieldRef`` values;
* ``emptyDir`` and every other kind (``hostPath``, claims...): an empty directory of the sandbox
  that is never cleared by a refresh.

A refresh writes the new files and removes the ones the source no longer has, so an update of
the ConfigMap is visible in the pod as it is on a real node (the kubelet's atomic ``..data``
symlink swap is not reproduced: the files are plain files).
"""

from __future__ import annotations

import base64
import binascii
import json
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from etctl._apimachinery.quantity import amount as parse_quantity
from etctl.runtime import ObjectView, objects
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.vfs import FileMeta

__all__ = [
    "Lookup",
    "MountError",
    "VolumeFiles",
    "field_value",
    "materialise",
    "resource_value",
    "sources",
]

Lookup = Callable[[str, str], ObjectView | None]
"""``(kind, name) -> object``: a ConfigMap (``configmap``) or Secret (``secret``) of the pod's
namespace, or None."""

_DEFAULT_MODE = 0o644


class MountError(Exception):
    """A volume cannot be set up (its source is missing, or lacks a key)."""


@dataclass(slots=True)
class VolumeFiles:
    """The files one volume wrote (relative paths), so a refresh can remove stale ones."""

    written: dict[str, set[str]] = field(default_factory=dict)


def _relative(path: str) -> PurePosixPath:
    """An item path, refused when absolute or climbing out with ``..``."""
    relative = PurePosixPath(path)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        msg = f"invalid path \"{path}\": must be relative and may not contain '..'"
        raise MountError(msg)
    return relative


def sources(volume: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The ``(kind, name)`` ConfigMaps and Secrets a volume reads."""
    found: set[tuple[str, str]] = set()
    config = mapping(volume.get("configMap"))
    if config.get("name"):
        found.add(("configmap", str(config["name"])))
    secret = mapping(volume.get("secret"))
    if secret.get("secretName"):
        found.add(("secret", str(secret["secretName"])))
    for source in mapping(volume.get("projected")).get("sources") or []:
        projected = mapping(source)
        if mapping(projected.get("configMap")).get("name"):
            found.add(("configmap", str(projected["configMap"]["name"])))
        if mapping(projected.get("secret")).get("name"):
            found.add(("secret", str(projected["secret"]["name"])))
    return found


def _key_files(
    kind: str,
    spec: Mapping[str, Any],
    obj: ObjectView | None,
    name: str,
    default_mode: int,
) -> dict[str, tuple[bytes, int]]:
    optional = spec.get("optional") is True
    if obj is None:
        if optional:
            return {}
        raise MountError(f'{kind} "{name}" not found')
    values: dict[str, bytes] = {}
    if kind == "configmap":
        for key, value in mapping(obj.get("data")).items():
            values[str(key)] = str(value).encode()
        for key, value in mapping(obj.get("binaryData")).items():
            values[str(key)] = _decode(str(value))
    else:
        for key, value in mapping(obj.get("data")).items():
            values[str(key)] = _decode(str(value))
    items = [mapping(i) for i in spec.get("items") or []]
    files: dict[str, tuple[bytes, int]] = {}
    if not items:
        for key, content in values.items():
            files[str(_relative(key))] = (content, default_mode)
        return files
    noun = "config" if kind == "configmap" else "secret"
    for item in items:
        key = str(item.get("key") or "")
        if key not in values:
            if optional:
                continue
            raise MountError(f"{kind} references non-existent {noun} key: {key}")
        mode = item.get("mode")
        files[str(_relative(str(item.get("path") or key)))] = (
            values[key],
            int(mode) if isinstance(mode, int) else default_mode,
        )
    return files


def _decode(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.encode()


def _quoted_lines(values: Mapping[str, Any]) -> str:
    return "\n".join(f"{k}={json.dumps(str(v))}" for k, v in sorted(values.items()))


def field_value(pod: ObjectView, path: str) -> str | None:
    """A downward-API ``fieldPath`` of the pod (None when it names nothing supported)."""
    metadata = objects.meta(pod)
    spec = mapping(pod.get("spec"))
    status = mapping(pod.get("status"))
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    if path in simple:
        return str(simple[path] or "")
    for section in ("labels", "annotations"):
        values = mapping(metadata.get(section))
        if path == f"metadata.{section}":
            return _quoted_lines(values)
        prefix = f"metadata.{section}['"
        if path.startswith(prefix) and path.endswith("']"):
            return str(values.get(path[len(prefix) : -2], ""))
    return None


def resource_value(pod: ObjectView, ref: Mapping[str, Any], default_container: str = "") -> str:
    """A ``resourceFieldRef`` value (``limits.cpu``...) in units of its divisor, rounded up."""
    wanted = str(ref.get("containerName") or default_container)
    resource = str(ref.get("resource") or "")
    section, _, name = resource.partition(".")
    spec = mapping(pod.get("spec"))
    for container in spec.get("containers") or []:
        if mapping(container).get("name") != wanted:
            continue
        resources = mapping(mapping(container).get("resources"))
        raw = mapping(resources.get(section)).get(name)
        if raw is None and section == "requests":
            raw = mapping(resources.get("limits")).get(name)
        if raw is None:
            return "0"
        divisor = parse_quantity(ref.get("divisor") or "1") or 1
        amount = parse_quantity(raw) / divisor
        return str(-(-amount.numerator // amount.denominator))
    return "0"


def _downward(
    pod: ObjectView, items: list[Mapping[str, Any]], default_mode: int
) -> dict[str, tuple[bytes, int]]:
    files: dict[str, tuple[bytes, int]] = {}
    for item in items:
        field_ref = mapping(item.get("fieldRef"))
        value: str | None
        if field_ref:
            value = field_value(pod, str(field_ref.get("fieldPath") or ""))
        else:
            value = resource_value(pod, mapping(item.get("resourceFieldRef")))
        if value is None:
            continue
        mode = item.get("mode")
        files[str(_relative(str(item.get("path") or "")))] = (
            value.encode(),
            int(mode) if isinstance(mode, int) else default_mode,
        )
    return files


def _files(
    volume: Mapping[str, Any], pod: ObjectView, lookup: Lookup
) -> dict[str, tuple[bytes, int]] | None:
    """The files a volume holds, or None for a plain directory (emptyDir and the rest)."""
    config = mapping(volume.get("configMap"))
    if config:
        mode = config.get("defaultMode")
        name = str(config.get("name") or "")
        default = int(mode) if isinstance(mode, int) else _DEFAULT_MODE
        return _key_files("configmap", config, lookup("configmap", name), name, default)
    secret = mapping(volume.get("secret"))
    if secret:
        mode = secret.get("defaultMode")
        name = str(secret.get("secretName") or "")
        default = int(mode) if isinstance(mode, int) else _DEFAULT_MODE
        return _key_files("secret", secret, lookup("secret", name), name, default)
    downward = mapping(volume.get("downwardAPI"))
    if downward:
        mode = downward.get("defaultMode")
        default = int(mode) if isinstance(mode, int) else _DEFAULT_MODE
        return _downward(pod, [mapping(i) for i in downward.get("items") or []], default)
    projected = mapping(volume.get("projected"))
    if projected:
        mode = projected.get("defaultMode")
        default = int(mode) if isinstance(mode, int) else _DEFAULT_MODE
        files: dict[str, tuple[bytes, int]] = {}
        for raw in projected.get("sources") or []:
            source = mapping(raw)
            for kind, key in (("configmap", "configMap"), ("secret", "secret")):
                spec = mapping(source.get(key))
                if spec:
                    name = str(spec.get("name") or "")
                    files.update(_key_files(kind, spec, lookup(kind, name), name, default))
            downward_source = mapping(source.get("downwardAPI"))
            if downward_source:
                items = [mapping(i) for i in downward_source.get("items") or []]
                files.update(_downward(pod, items, default))
        return files
    return None


def materialise(
    volume: Mapping[str, Any],
    target: Path,
    files_meta: FileMeta,
    record: VolumeFiles,
    *,
    pod: ObjectView,
    lookup: Lookup,
) -> None:
    """(Re)write one volume into ``target``.

    Raises:
        MountError: a required source or key is missing (the message is the kubelet's).
    """
    name = str(volume.get("name") or "")
    files = _files(volume, pod, lookup)
    target.mkdir(parents=True, exist_ok=True)
    if files is None:
        return
    previous = record.written.get(name, set())
    for stale in sorted(previous - set(files), reverse=True):
        path = target / stale
        if path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        files_meta.forget(path)
    for relative, (content, mode) in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
            files_meta.touch(path)
        files_meta.set_mode(path, mode)
    record.written[name] = set(files)
