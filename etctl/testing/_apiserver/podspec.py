"""Pod spec validation as ``pkg/apis/core/validation`` does it, with its messages and field paths.

Used for pods and for the pod templates of workloads. Two stages, as in the real server:

* :func:`decode_error`: what decoding the JSON into Go types refuses before anything else, here
  resource quantities that do not parse (``cpu: "lots"``): a 400 ``<Kind> in version "v1" cannot
  be handled as a <Kind>: quantities must match the regular expression ...``;
* :func:`validate_pod_spec`: the 422 causes of ``ValidatePodSpec``, in its order: volumes,
  containers (name, image, termination message policy, ports, env, volume mounts, pull policy,
  resources), init containers (and their names against the containers'), restart and DNS
  policies, node selector, service account, node and priority class names, the active deadline,
  hostname and subdomain.

Values in messages are printed as Go's field errors print them: strings quoted, numbers bare, a
resource name (a ``fmt.Stringer``) bare, a ``resource.Quantity`` as its ``%#v``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from etctl._apimachinery import quantity
from etctl.testing._apiserver.status import Cause
from etctl.testing._apiserver.strategy import field_path, mapping
from etctl.testing._apiserver.validation import (
    NameRule,
    forbidden_cause,
    go_value,
    invalid_cause,
    label_value_errors,
    name_errors,
    qualified_name_errors,
    required_cause,
    unsupported_cause,
)

__all__ = ["decode_error", "validate_pod_spec"]

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = _STANDARD_CONTAINER_RESOURCES | frozenset(
    {"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps"}
)
_VOLUME_TYPES = (
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PORT_NAME_CHARSET = re.compile(r"^[-a-z0-9]+$")
_INT32_MAX = 2**31 - 1


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in _list(value) if isinstance(item, Mapping)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


# -- decoding --------------------------------------------------------------------------------


def _quantity_lists(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in _dicts(spec.get(key)):
            resources = mapping(container.get("resources"))
            yield mapping(resources.get("limits"))
            yield mapping(resources.get("requests"))
    yield mapping(spec.get("overhead"))
    resources = mapping(spec.get("resources"))
    yield mapping(resources.get("limits"))
    yield mapping(resources.get("requests"))


def decode_error(spec: Mapping[str, Any]) -> str | None:
    """What decoding a pod spec into Go types refuses (a quantity that does not parse), or None."""
    for amounts in _quantity_lists(spec):
        for amount in amounts.values():
            try:
                quantity.parse(amount)
            except quantity.QuantityError as error:
                return str(error)
    return None


# -- names and values ------------------------------------------------------------------------


def _label_causes(path: str, value: str, rule: NameRule = NameRule.LABEL) -> list[Cause]:
    return [invalid_cause(path, value, msg) for msg in name_errors(rule, value)]


def _duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", path, f"Duplicate value: {go_value(value)}")


def _not_found(path: str, value: Any) -> Cause:
    return Cause("FieldValueNotFound", path, f"Not found: {go_value(value)}")


def _bare(path: str, value: str, detail: str) -> Cause:
    """An Invalid whose value is a ``fmt.Stringer`` (a resource name): printed unquoted."""
    return Cause("FieldValueInvalid", path, f"Invalid value: {value}: {detail}")


def _port_name_errors(name: str) -> list[str]:
    errors = ["must be no more than 15 characters"] if len(name) > 15 else []
    if not _PORT_NAME_CHARSET.match(name):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", name):
        errors.append("must contain at least one letter (a-z)")
    if "--" in name:
        errors.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        errors.append("must not begin or end with a hyphen")
    return errors


def _port_number(path: str, value: Any, *, required: bool) -> list[Cause]:
    if not isinstance(value, int) or isinstance(value, bool) or value == 0:
        return [required_cause(path)] if required else []
    if not 1 <= value <= 65535:
        return [invalid_cause(path, value, _PORT_RANGE)]
    return []


# -- containers ------------------------------------------------------------------------------


def _ports(ports: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for index, port in enumerate(_dicts(ports)):
        at = field_path(path, index)
        name = _text(port.get("name"))
        if name:
            errors = _port_name_errors(name)
            if errors:
                causes += [invalid_cause(f"{at}.name", name, m) for m in errors]
            elif name in names:
                causes.append(_duplicate(f"{at}.name", name))
            else:
                names.add(name)
        causes += _port_number(f"{at}.containerPort", port.get("containerPort"), required=True)
        causes += _port_number(f"{at}.hostPort", port.get("hostPort"), required=False)
        protocol = port.get("protocol")
        if not protocol:
            causes.append(required_cause(f"{at}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(unsupported_cause(f"{at}.protocol", protocol, _PROTOCOLS))
    return causes


def _env(env: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, var in enumerate(_dicts(env)):
        at = f"{field_path(path, index)}.name"
        name = _text(var.get("name"))
        if not name:
            causes.append(required_cause(at))
            causes.append(invalid_cause(at, name, "environment variable name must be non-empty"))
        elif any(not 32 <= ord(c) < 127 or c == "=" for c in name):
            causes.append(
                invalid_cause(
                    at,
                    name,
                    "a valid environment variable name must consist only of printable ASCII "
                    "characters other than '='",
                )
            )
    return causes


def _volume_mounts(mounts: Any, volumes: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    mount_points: set[str] = set()
    for index, mount in enumerate(_dicts(mounts)):
        at = field_path(path, index)
        name = _text(mount.get("name"))
        if not name:
            causes.append(required_cause(f"{at}.name"))
        if name not in volumes:
            causes.append(_not_found(f"{at}.name", name))
        mount_path = _text(mount.get("mountPath"))
        if not mount_path:
            causes.append(required_cause(f"{at}.mountPath"))
        if mount_path in mount_points:
            causes.append(invalid_cause(f"{at}.mountPath", mount_path, "must be unique"))
        mount_points.add(mount_path)
    return causes


def _is_extended(name: str) -> bool:
    """An extended resource (``nvidia.com/gpu``): not native, not a quota request."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _overcommit_allowed(name: str) -> bool:
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _quantity_go_value(raw: Any) -> str:
    """``%#v`` of a ``resource.Quantity`` as decoding left it (its int64 amount and scale)."""
    text = str(raw).strip()
    parsed = quantity.parse(raw)
    number = re.match(r"^[+-]?[0-9.]+", text)
    digits = number.group(0) if number else "0"
    scale = -len(digits.partition(".")[2])
    if parsed.format == "DecimalSI":
        scale += {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}.get(
            text[len(digits) :], 0
        )
    value = int(digits.replace(".", "") or "0")
    return (
        f"resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, "
        f'd:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:"", Format:"{parsed.format}"}}'
    )


def _resource_name(name: str, path: str) -> list[Cause]:
    errors = qualified_name_errors(name)
    if errors:
        return [_bare(path, name, m) for m in errors]
    causes: list[Cause] = []
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith("hugepages-"):
            causes.append(_bare(path, name, "must be a standard resource type or fully qualified"))
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            causes.append(_bare(path, name, "must be a standard resource for containers"))
    elif not _overcommit_allowed(name) and not _is_extended(name):
        causes.append(_bare(path, name, "doesn't follow extended resource name standard"))
    return causes


def _amount(name: str, raw: Any, path: str) -> tuple[list[Cause], Fraction | None]:
    try:
        parsed = quantity.parse(raw)
    except quantity.QuantityError:
        return [], None  # refused when decoding
    causes = []
    if parsed.amount < 0:
        causes.append(invalid_cause(path, str(parsed), "must be greater than or equal to 0"))
    if _is_extended(name) and parsed.amount.denominator != 1:
        causes.append(_bare(path, _quantity_go_value(raw), "must be an integer"))
    return causes, parsed.amount


def _resources(resources: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateResourceRequirements``: names, amounts, and requests within limits."""
    causes: list[Cause] = []
    limits_path, requests_path = f"{path}.limits", f"{path}.requests"
    limits = mapping(resources.get("limits"))
    requests = mapping(resources.get("requests"))
    for name, raw in limits.items():
        at = f"{limits_path}[{name}]"
        causes += _resource_name(str(name), at)
        causes += _amount(str(name), raw, at)[0]
    for name, raw in requests.items():
        at = f"{requests_path}[{name}]"
        causes += _resource_name(str(name), at)
        found, amount = _amount(str(name), raw, at)
        causes += found
        if amount is None:
            continue
        shown = str(quantity.parse(raw))
        if name in limits:
            try:
                limit = quantity.parse(limits[name])
            except quantity.QuantityError:
                continue
            if amount != limit.amount and not _overcommit_allowed(str(name)):
                detail = f"must be equal to {name} limit of {limit}"
                causes.append(invalid_cause(requests_path, shown, detail))
            elif amount > limit.amount:
                detail = f"must be less than or equal to {name} limit of {limit}"
                causes.append(invalid_cause(requests_path, shown, detail))
        elif not _overcommit_allowed(str(name)):
            causes.append(
                required_cause(limits_path, "Limit must be set for non overcommitable resources")
            )
    return causes


def _container(container: Mapping[str, Any], volumes: set[str], path: str) -> list[Cause]:
    """``validateContainerCommon``."""
    causes: list[Cause] = []
    name = _text(container.get("name"))
    if not name:
        causes.append(required_cause(f"{path}.name"))
    else:
        causes += _label_causes(f"{path}.name", name)
    if not _text(container.get("image")):
        causes.append(required_cause(f"{path}.image"))
    policy = container.get("terminationMessagePolicy")
    if not policy:
        causes.append(
            required_cause(
                f"{path}.terminationMessagePolicy", "must be 'File' or 'FallbackToLogsOnError'"
            )
        )
    elif policy not in _MESSAGE_POLICIES:
        causes.append(
            unsupported_cause(f"{path}.terminationMessagePolicy", policy, _MESSAGE_POLICIES)
        )
    causes += _ports(container.get("ports"), f"{path}.ports")
    causes += _env(container.get("env"), f"{path}.env")
    causes += _volume_mounts(container.get("volumeMounts"), volumes, f"{path}.volumeMounts")
    pull = container.get("imagePullPolicy")
    if not pull:
        causes.append(required_cause(f"{path}.imagePullPolicy"))
    elif pull not in _PULL_POLICIES:
        causes.append(unsupported_cause(f"{path}.imagePullPolicy", pull, _PULL_POLICIES))
    causes += _resources(mapping(container.get("resources")), f"{path}.resources")
    return causes


def _image_whitespace(containers: list[Mapping[str, Any]], path: str) -> list[Cause]:
    """``validateContainersOnlyForPod``: an image may not start or end with whitespace."""
    return [
        invalid_cause(
            f"{field_path(path, i)}.image", image, "must not have leading or trailing whitespace"
        )
        for i, c in enumerate(containers)
        if (image := _text(c.get("image"))) and image != image.strip()
    ]


def _containers(spec: Mapping[str, Any], volumes: set[str], path: str) -> list[Cause]:
    containers = _dicts(spec.get("containers"))
    if not containers:
        return [required_cause(f"{path}.containers")]
    causes: list[Cause] = []
    names: set[str] = set()
    for index, container in enumerate(containers):
        at = field_path(f"{path}.containers", index)
        causes += _container(container, volumes, at)
        name = _text(container.get("name"))
        if name in names:
            causes.append(_duplicate(f"{at}.name", name))
        names.add(name)
        if "restartPolicy" in container:
            causes.append(
                forbidden_cause(f"{at}.restartPolicy", "may not be set for non-init containers")
            )
    return causes


def _init_containers(spec: Mapping[str, Any], volumes: set[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    names = {_text(c.get("name")) for c in _dicts(spec.get("containers"))}
    for index, container in enumerate(_dicts(spec.get("initContainers"))):
        at = field_path(f"{path}.initContainers", index)
        causes += _container(container, volumes, at)
        restart = container.get("restartPolicy")
        if restart is not None and restart != "Always":
            causes.append(unsupported_cause(f"{at}.restartPolicy", restart, ("Always",)))
        name = _text(container.get("name"))
        if name in names:
            causes.append(_duplicate(f"{at}.name", name))
        elif name:
            names.add(name)
    return causes


def _volumes(spec: Mapping[str, Any], path: str) -> tuple[set[str], list[Cause]]:
    """``ValidateVolumes``: the valid volumes' names, and the problems of the others."""
    names: set[str] = set()
    causes: list[Cause] = []
    for index, volume in enumerate(_dicts(spec.get("volumes"))):
        at = field_path(f"{path}.volumes", index)
        found: list[Cause] = []
        sources = [key for key in _VOLUME_TYPES if volume.get(key) is not None]
        if not sources:
            found.append(required_cause(at, "must specify a volume type"))
        found += [
            forbidden_cause(f"{at}.{extra}", "may not specify more than 1 volume type")
            for extra in sources[1:]
        ]
        if "configMap" in sources and not _text(mapping(volume["configMap"]).get("name")):
            found.append(required_cause(f"{at}.configMap.name"))
        if "secret" in sources and not _text(mapping(volume["secret"]).get("secretName")):
            found.append(required_cause(f"{at}.secret.secretName"))
        claim = mapping(volume.get("persistentVolumeClaim"))
        if "persistentVolumeClaim" in sources and not _text(claim.get("claimName")):
            found.append(required_cause(f"{at}.persistentVolumeClaim.claimName"))
        name = _text(volume.get("name"))
        if not name:
            found.append(required_cause(f"{at}.name"))
        else:
            found += _label_causes(f"{at}.name", name)
        if name in names:
            found.append(_duplicate(f"{at}.name", name))
        if found:
            causes += found
        else:
            names.add(name)
    return names, causes


def _node_selector(spec: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    at = f"{path}.nodeSelector"
    for key, value in mapping(spec.get("nodeSelector")).items():
        causes += [invalid_cause(at, key, m) for m in qualified_name_errors(str(key))]
        causes += [invalid_cause(at, value, m) for m in label_value_errors(str(value))]
    return causes


def validate_pod_spec(spec: Mapping[str, Any], path: str = "spec") -> list[Cause]:
    """``ValidatePodSpec`` (plus the pod-only image check) of a defaulted spec at ``path``."""
    causes: list[Cause] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        causes.append(required_cause(f"{path}.terminationGracePeriodSeconds"))
    volumes, volume_causes = _volumes(spec, path)
    causes += volume_causes
    causes += _containers(spec, volumes, path)
    causes += _init_containers(spec, volumes, path)
    restart = spec.get("restartPolicy")
    if not restart:
        causes.append(required_cause(f"{path}.restartPolicy"))
    elif restart not in _RESTART_POLICIES:
        causes.append(unsupported_cause(f"{path}.restartPolicy", restart, _RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if not dns:
        causes.append(required_cause(f"{path}.dnsPolicy"))
    elif dns not in _DNS_POLICIES:
        causes.append(unsupported_cause(f"{path}.dnsPolicy", dns, _DNS_POLICIES))
    causes += _node_selector(spec, path)
    for key, rule in (
        ("serviceAccountName", NameRule.SUBDOMAIN),
        ("nodeName", NameRule.SUBDOMAIN),
    ):
        value = _text(spec.get(key))
        if value:
            causes += _label_causes(f"{path}.{key}", value, rule)
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= _INT32_MAX:
        causes.append(
            invalid_cause(
                f"{path}.activeDeadlineSeconds",
                deadline,
                f"must be between 1 and {_INT32_MAX}, inclusive",
            )
        )
    for key in ("hostname", "subdomain"):
        value = _text(spec.get(key))
        if value:
            causes += _label_causes(f"{path}.{key}", value)
    priority_class = _text(spec.get("priorityClassName"))
    if priority_class:
        causes += _label_causes(f"{path}.priorityClassName", priority_class, NameRule.SUBDOMAIN)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        causes.append(
            invalid_cause(
                f"{path}.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"
            )
        )
    causes += _image_whitespace(_dicts(spec.get("containers")), f"{path}.containers")
    causes += _image_whitespace(_dicts(spec.get("initContainers")), f"{path}.initContainers")
    return causes
