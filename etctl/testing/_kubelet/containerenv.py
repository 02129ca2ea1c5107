"""A container's environment, built as the kubelet builds it before starting the container.

Order and sources: the image defaults (``PATH``, ``HOSTNAME``, ``HOME``), the ``kubernetes``
service variables, then ``envFrom`` (ConfigMaps and Secrets, with their ``prefix``), then
``env`` entries in order (``value`` with ``$(NAME)`` references to variables defined before it
expanded and ``$$`` escaping, or ``valueFrom`` a field, a resource, a ConfigMap key or a Secret
key). A missing ConfigMap, Secret or key that is not ``optional`` is the container's
``CreateContainerConfigError``: :class:`ConfigError` carries the kubelet's message.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from etctl.runtime import ObjectView, objects
from etctl.testing._apiserver.strategy import mapping
from etctl.testing._kubelet.volumes import Lookup, field_value, resource_value

__all__ = ["ConfigError", "container_env", "references"]

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_SERVICE = {
    "KUBERNETES_SERVICE_HOST": "10.96.0.1",
    "KUBERNETES_SERVICE_PORT": "443",
    "KUBERNETES_SERVICE_PORT_HTTPS": "443",
    "KUBERNETES_PORT": "tcp://10.96.0.1:443",
    "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
    "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
    "KUBERNETES_PORT_443_TCP_PORT": "443",
    "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
}
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class ConfigError(Exception):
    """The container cannot be configured (``CreateContainerConfigError``)."""


def _expand(value: str, defined: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return defined.get(name, match.group(0))

    return _REFERENCE.sub(replace, value)


def references(container: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The ``(kind, name)`` ConfigMaps and Secrets a container's environment reads."""
    found: set[tuple[str, str]] = set()
    for source in container.get("envFrom") or []:
        entry = mapping(source)
        if mapping(entry.get("configMapRef")).get("name"):
            found.add(("configmap", str(entry["configMapRef"]["name"])))
        if mapping(entry.get("secretRef")).get("name"):
            found.add(("secret", str(entry["secretRef"]["name"])))
    for variable in container.get("env") or []:
        value_from = mapping(mapping(variable).get("valueFrom"))
        if mapping(value_from.get("configMapKeyRef")).get("name"):
            found.add(("configmap", str(value_from["configMapKeyRef"]["name"])))
        if mapping(value_from.get("secretKeyRef")).get("name"):
            found.add(("secret", str(value_from["secretKeyRef"]["name"])))
    return found


def _values(kind: str, obj: ObjectView) -> dict[str, str]:
    data = mapping(obj.get("data"))
    if kind == "configmap":
        return {str(k): str(v) for k, v in data.items()}
    out = {}
    for key, value in data.items():
        try:
            out[str(key)] = base64.b64decode(str(value)).decode(errors="replace")
        except (binascii.Error, ValueError):
            out[str(key)] = str(value)
    return out


def _key_ref(kind: str, ref: Mapping[str, Any], namespace: str, lookup: Lookup) -> str | None:
    name = str(ref.get("name") or "")
    key = str(ref.get("key") or "")
    optional = ref.get("optional") is True
    obj = lookup(kind, name)
    label = "ConfigMap" if kind == "configmap" else "Secret"
    if obj is None:
        if optional:
            return None
        raise ConfigError(f'{kind} "{name}" not found')
    values = _values(kind, obj)
    if key not in values:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {key} in {label} {namespace}/{name}")
    return values[key]


def _env_from(container: Mapping[str, Any], lookup: Lookup, env: dict[str, str]) -> None:
    for source in container.get("envFrom") or []:
        entry = mapping(source)
        prefix = str(entry.get("prefix") or "")
        for kind, key in (("configmap", "configMapRef"), ("secret", "secretRef")):
            ref = mapping(entry.get(key))
            if not ref:
                continue
            name = str(ref.get("name") or "")
            obj = lookup(kind, name)
            if obj is None:
                if ref.get("optional") is True:
                    continue
                raise ConfigError(f'{kind} "{name}" not found')
            for variable, value in _values(kind, obj).items():
                env[prefix + variable] = value


def _value_from(
    pod: ObjectView,
    container: Mapping[str, Any],
    source: Mapping[str, Any],
    namespace: str,
    lookup: Lookup,
) -> str | None:
    if source.get("fieldRef"):
        return field_value(pod, str(mapping(source["fieldRef"]).get("fieldPath") or ""))
    if source.get("resourceFieldRef"):
        name = str(container.get("name") or "")
        return resource_value(pod, mapping(source["resourceFieldRef"]), name)
    if source.get("configMapKeyRef"):
        return _key_ref("configmap", mapping(source["configMapKeyRef"]), namespace, lookup)
    if source.get("secretKeyRef"):
        return _key_ref("secret", mapping(source["secretKeyRef"]), namespace, lookup)
    return None


def container_env(pod: ObjectView, container: Mapping[str, Any], lookup: Lookup) -> dict[str, str]:
    """The environment of ``container`` in ``pod``.

    Raises:
        ConfigError: a required ConfigMap, Secret or key is missing.
    """
    metadata = objects.meta(pod)
    spec = mapping(pod.get("spec"))
    namespace = str(metadata.get("namespace") or "")
    hostname = str(spec.get("hostname") or metadata.get("name") or "")
    # The kubernetes service variables are injected whatever enableServiceLinks says.
    env: dict[str, str] = {"PATH": _PATH, "HOSTNAME": hostname, "HOME": "/root", **_SERVICE}
    _env_from(container, lookup, env)
    for raw in container.get("env") or []:
        variable = mapping(raw)
        name = str(variable.get("name") or "")
        if not name:
            continue
        source = mapping(variable.get("valueFrom"))
        if not source:
            env[name] = _expand(str(variable.get("value") or ""), env)
            continue
        found = _value_from(pod, container, source, namespace, lookup)
        if found is not None:
            env[name] = found
    return env
